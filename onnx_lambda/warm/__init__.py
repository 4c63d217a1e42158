"""``onnx-lambda warm``: the warmer's logic (``warmer.fanout``) run from a developer's machine;
``commands`` is its CLI."""
