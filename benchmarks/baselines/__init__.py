"""BASELINES, not part of onnx-lambda: what users deploy today, serving the same model so
``python -m benchmarks`` can compare against them. Each reads the model file from ``MODEL_PATH``
(the portable ``.onnx``) and takes the simple JSON body ``{"inputs": {name: nested list}}``.

- ``floor``: bare onnxruntime in a process (import, session, run): the physical limit;
  ``floor_handler`` is the same as a Lambda handler, for first responses through the emulator;
- ``naive_handler``: the common sample style (heavy imports at module top, default session
  options, model loaded lazily in the first request);
- ``fastapi_mangum``: a FastAPI app behind the Mangum adapter as a Lambda handler;
- ``always_on``: the same FastAPI app served by uvicorn (an always-on server).
"""
