"""Every benchmark of the project, and what each one measures. Each measures side by side with
its baseline in the same run (interleaved), prints its percentiles as ``stats.percentile``
defines them (linear interpolation, ``stats.DEFINITION``) and never asserts a timing.

Commands (``onnx-lambda …``, one module each in ``commands/``):

- ``bench`` (``comparison``): per model, cold starts, warm HTTP latency, memory and image size
  (``image_size``) of onnx-lambda against the floors, a naive handler, FastAPI + Mangum and an
  always-on server, written to ``docs/benchmarks.md`` (``report``);
- ``tune`` (``tune``, ``sizing``): latency, cold init and cost per memory size, and a
  recommendation; ``--managed-instances`` (``tune_managed``): processes per vCPU of a Managed
  Instances environment, and CPU vs GPU (``gpu_compare``, ``equal_p99``; the GPU table comes
  from ``gpu_check``, which ``scripts/gpu-check`` runs on a GPU machine);
- ``simulate`` (``strategy_sweep`` over ``simulate``): cold-start fraction, p99 and monthly
  cost per cold-start strategy for a traffic pattern;
- ``price`` (``managed``, ``process_memory``): the monthly bill on demand, provisioned, and on
  Managed Instances.

Modules run with ``python -m onnx_lambda.bench.NAME``:

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
  ``docs/models.md``, every ``--quantize auto`` try;
- ``client_overhead``: the Python client's own cost per call (httpx vs ``http.client``);
- ``corpus``: the third-party corpus built and served: build time, size, p50 per wire format,
  error against onnxruntime;
- ``tracing_cost``: cold init with X-Ray tracing on vs off;
- ``json_floats``: float32 outputs written as JSON six ways (the standard library's float64
  repr, the handler's shortest float32, its per-value path, gzip, nine digits, base64), bytes
  and encode time, each checked to read back as the same float32;
- ``dashboard_plot`` (not a measurement): the CloudWatch dashboard's layout as a PNG.

The pieces they share: ``cold`` (fresh environments: ``cold_process`` children and the
emulator), ``http_load`` (the keep-alive load generator), ``servers`` (the emulator, the RIE and
uvicorn as processes), ``subject`` (one model's request for every target), ``stats``,
``bytecode`` (cold children read compiled bytecode, as the image does).
Children the benchmarks start, not run by hand: ``cold_process`` (one fresh environment, in
process) and ``baselines.*`` (the two floors and the baseline handlers). The build's own
before/after figures are ``onnx_lambda.build_model.measure``; ``onnx-lambda probe``
(``onnx_lambda.client``) is the caller's-side latency breakdown of a deployed endpoint.
"""
