"""``onnx-lambda build-model``: turn an ONNX model into a Lambda-ready model folder.

Modules, in build order: ``signature`` (load, validate, record inputs/outputs), ``inspect`` (the
summary ``onnx-lambda inspect`` prints), ``example`` + ``ladder`` (the input the model really
runs on: given, or found), ``optimize`` (transformer fusions, offline onnxruntime optimization,
ORT format), ``quantize`` (dynamic INT8 tuned against ``gate``), ``output`` (atomic folder,
sha256, cancellation), ``measure`` (before/after figures); ``builder`` runs them with a
``progress`` display, ``commands`` is the CLI, ``request`` the curl ``scripts/run`` prints.
Beside them: ``canonical`` (graphs put in the shape the fusions look for), ``quant_methods``
(+ ``quant_writers``) and ``quant_auto`` (the quantization menu, tried and chosen), ``smooth``
and ``awq`` (weights
rescaled before quantization), ``graph_math`` (pipeline math appended to the graph),
``tokenizer_split``, ``gpu`` (whether CUDA suits the model), ``rerank`` (cross-encoders),
``decoder_build`` (decoder-only models; a language model's folder: ``llm_folder``,
``llm_export``, ``llm_graph``, ``llm_package``; its logits: ``vocab_projection``), ``package``
(the artifact's last step), ``spec`` (what and how to build) and ``errors``.
"""
