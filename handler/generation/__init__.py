"""Text generation with decoder-only ONNX models: the layout (``layout``), the key/value cache kept
in ONNX Runtime (``cache``), token choice (``sampling``), text deltas (``text``) and the decode
loop (``decoder``), with token choice inside ONNX Runtime (``pick``), the request's records
(``params``), the deadline's stop (``deadline``), chat templates (``chat``),
the Hugging Face files and their rule (``hf_files``), the prefix cache (``prefix``) and
prompt-lookup drafts (``lookup``);
``handler.pipelines.generate`` puts them behind the pipeline interface."""
