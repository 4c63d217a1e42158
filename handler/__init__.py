"""onnx-lambda runtime: everything that runs inside a Lambda execution environment.

Cold path imports: the standard library, numpy and onnxruntime only.
"""
