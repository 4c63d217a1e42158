"""ONNX Runtime through its C API (``capi``), a numpy-free ``Tensor`` (``tensor``) and the
session over both (``session``), runs that keep their outputs in ONNX Runtime (``values``) and
the execution provider's choice (``providers``)."""
