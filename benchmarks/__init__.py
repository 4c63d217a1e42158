"""The benchmark lab: every measurement of the project, run from a source checkout (it serves
the repository itself; not part of the installed package). Each measures side by side with its
baseline in the same run (interleaved), prints its percentiles as ``onnx_lambda.stats``
defines them (linear interpolation, ``stats.DEFINITION``) and never asserts a timing.

``python -m benchmarks`` (what ``onnx-lambda bench`` runs; ``comparison``): per model, cold
starts, warm HTTP latency, memory and image size (``image_size``) of onnx-lambda against the
floors, a naive handler, FastAPI + Mangum and an always-on server, written to
``docs/explanation/benchmarks.md`` (``report``).

Modules run with ``python -m benchmarks.NAME``:

- ``handler_overhead``: the handler's cold init against the two floors, its warm overhead over
  a bare ``session.run`` in the same process, session-option and Powertools import costs;
- ``warm_instructions``: the same warm comparison in CPU instructions per call (callgrind,
  counted only inside the calls), what wall-clock figures on a shared VM cannot pin;
- ``cold_instructions``: the cold init against the two floors in CPU instructions (callgrind,
  main thread, the bare interpreter subtracted): the cold-start verdict;
- ``emulator_overhead``: what the local emulator adds over the handler in process (HTTP front,
  Invoke API, the RIE as reference), its throughput and its cold-start breakdown;
- ``minilm_acceptance``: the quantized MiniLM against PyTorch fp32 (cosine, batch-1 latency,
  session load);
- ``quant_table`` (from built manifests, runs nothing): the quantization method table of
  ``docs/explanation/examples.md``, every ``--quantize auto`` try;
- ``client_overhead``: the Python client's own cost per call (httpx vs ``http.client``);
- ``corpus``: the third-party corpus (``corpus/``: wheels fetched, real inputs) built and
  served: build time, size, p50 per wire format, error against onnxruntime;
- ``tracing_cost``: cold init with X-Ray tracing on vs off;
- ``json_floats``: float32 outputs written as JSON six ways (the standard library's float64
  repr, the handler's shortest float32, its per-value path, gzip, nine digits, base64), bytes
  and encode time, each checked to read back as the same float32;
- ``gpu_check`` (``scripts/gpu-check``, on a GPU machine): the GPU latency table ``onnx-lambda
  tune --managed-instances --gpu-table`` reads;
- ``dashboard_plot`` (not a measurement): the CloudWatch dashboard's layout as a PNG.

The pieces they share: ``cold`` (fresh environments: ``cold_process`` children and the
emulator), ``http_load`` (the keep-alive load generator), ``servers`` (the RIE and uvicorn as
processes), ``targets`` (the names of ours, the floors and the baselines), ``report`` and
``plots``. From the package's planner (``onnx_lambda.plan``) they reuse ``subject`` (one
model's request for every target), ``emulated`` (the function in fresh emulator
environments), ``bytecode`` (cold children read compiled bytecode, as the image does) and
``tables``. Children the benchmarks start, not run by hand: ``cold_process`` (one fresh
environment, in process) and ``baselines.*`` (the two floors and the baseline handlers).
"""
