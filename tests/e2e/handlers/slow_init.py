"""A handler module whose init (module scope) takes 30 s."""

import time

time.sleep(30)


def handler(event, context):  # pragma: no cover - never reached within the init limit
    return event
