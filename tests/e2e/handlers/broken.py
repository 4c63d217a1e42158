"""A handler module that fails at import (init error)."""

raise RuntimeError("cannot initialise: model missing")


def handler(event, context):  # pragma: no cover - never reached
    return event
