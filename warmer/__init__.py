"""The warmer function: keeps N inference environments warm (``warmer.app.handler``).

A second Lambda function beside ``handler/``, packaged on its own (``layers/Makefile``
``build-WarmerFunction``: this package plus aws-lambda-powertools; boto3 comes with the managed
runtime). It shares no code with the inference handler; what both must agree on is checked by
tests: the ping's hold limit (``settings.MAX_HOLD_MS`` = ``handler.ping.MAX_HOLD_MS``).

Modules: ``settings`` (its variables, one table), ``fanout`` (N parallel pings with backoff, the
report; what ``onnx-lambda warm`` runs from a laptop), ``metric_names`` (what it emits),
``app`` (the Lambda entry: Powertools Logger and Metrics).
"""
