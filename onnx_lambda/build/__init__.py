"""``onnx-lambda build-model``: turn an ONNX model into a Lambda-ready model folder.

Modules, in build order: ``signature`` (load, validate, record inputs/outputs), ``optimize``
(transformer fusions, offline onnxruntime optimization, ORT format), ``quantize`` (dynamic INT8
tuned against ``gate``), ``output`` (atomic folder, sha256), ``measure`` (before/after figures);
``builder`` runs them with a ``progress`` display, ``commands`` is the CLI.
"""
