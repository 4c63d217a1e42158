"""ONNX Runtime through its C API (``capi``), a numpy-free ``Tensor`` (``tensor``) and the
session over both (``session``)."""
