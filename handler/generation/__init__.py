"""Text generation with decoder-only ONNX models: the layout (``layout``), the key/value cache kept
in ONNX Runtime (``cache``), token choice (``sampling``), text deltas (``text``) and the decode
loop (``decoder``), with token choice inside ONNX Runtime (``pick``), the request's records
(``params``), the deadline's stop (``deadline``) and chat templates (``chat``);
``handler.pipelines.generate`` puts them behind the pipeline interface."""
