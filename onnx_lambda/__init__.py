"""onnx-lambda developer tooling: local emulator, model build, benchmarks (never deployed).

``cli`` is the ``onnx-lambda`` command; its sub-commands come from the packages ``emulator``
(``serve``, ``invoke``), ``build_model`` (``build-model``, ``inspect``), ``plan`` (``tune``,
``simulate``, ``price``), ``client`` (the Python client, ``probe``), ``deploy``
(``deploy-config``, ``deploy-regions``), ``regions`` (``regions``), ``warm``, and
``bench_commands`` (``bench``); ``examples`` are the models
``build-model`` makes from scratch. One home each, for tooling and tests: ``extras`` (optional
dependencies), ``server_process``, ``source_tree``, ``lambda_context``, ``ports``,
``tiny_models``, ``sizes``, ``stats``, ``json_documents``.
"""
