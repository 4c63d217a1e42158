"""onnx-lambda runtime: everything that runs inside a Lambda execution environment.

Cold path imports: the standard library only, plus ONNX Runtime's C library through ``ctypes``
(``handler.ort``); numpy and onnxruntime's Python binding stay off it.
"""
