"""onnx-lambda runtime: everything that runs inside a Lambda execution environment.

Cold path imports: the standard library only, plus ONNX Runtime's C library through ``ctypes``
(``handler.ort``); numpy and onnxruntime's Python binding stay off it.

Modules (docs/explanation/architecture.md has each one's job): the entry ``app`` and
``bootstrap`` (init), ``settings``, ``service`` (the per-request path) with ``routes`` (the
route table), ``environment``, ``ping``, ``http``, ``streaming`` and ``stream_runtime``
(response streaming), ``compression``, ``api_keys``, ``errors``, ``json_codec``, ``tensors``,
``dims``, ``artifact``, ``s3_model``, ``manifest``, ``model``, ``telemetry``, ``metric_names``,
``tracing``, ``snapstart``, ``lifecycle``, ``bundle``, ``records``; subpackages ``api`` (the
protocols), ``ort`` (ONNX Runtime's C API), ``sources`` (event sources), ``codecs`` (wire
formats), ``pipelines`` and ``generation`` (text generation).
"""
