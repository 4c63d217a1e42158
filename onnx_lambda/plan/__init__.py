"""The planner: what to deploy, measured on this machine and priced (the 'plan' extra).

Commands (``onnx-lambda …``, one module each in ``commands/``):

- ``tune`` (``tune``, ``sizing``): latency, cold init and cost per memory size through the
  local emulator (``emulated``), and a recommendation; ``--managed-instances``
  (``tune_managed``): processes per vCPU of a Managed Instances environment, and CPU vs GPU
  (``gpu_compare``, ``equal_p99``, estimated from ``flops``); ``--network-ms`` (``end_to_end``);
- ``simulate`` (``strategy_sweep`` over ``simulate`` and ``traffic``): cold-start fraction, p99
  and monthly cost per cold-start strategy for a traffic pattern;
- ``price`` (``managed``, ``process_memory``, ``cost`` over the dated ``prices.json``): the
  monthly bill on demand, provisioned, and on Managed Instances.

``tune`` serves the repository as the function's code, so it runs from a source checkout
(``onnx_lambda.source_tree``), as does ``price --model``; ``simulate`` and ``price --rss-mb`` run
anywhere. The benchmark lab of a checkout (``benchmarks/``) reuses ``subject``, ``emulated``,
``bytecode`` and ``tables``; ``progress`` and ``plots`` display and draw what they measure.
"""
