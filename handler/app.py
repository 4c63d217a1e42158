"""The Lambda entry point: ``handler.app.handler``.

Module scope is the init phase, run once per execution environment (the cold start): read the
settings, then ``handler.bootstrap.create`` finds and loads the model, builds the pipeline and
runs one warm-up inference; tracing and SnapStart hooks only when configured. ``handler``
does per-request work only. A broken model fails here, loudly, so Lambda reports
``Runtime.InitError`` with our message instead of failing every request later.
"""

from __future__ import annotations

import os
import time

_T0 = time.perf_counter()
# numpy's OpenBLAS starts one thread per CPU at import; the handler never imports numpy, but a
# user pipeline may, and it never needs BLAS threads (ONNX Runtime has its own pool).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from handler import bundle  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.streaming import StreamedResponse

bundle.install()  # our modules' bytecode from one file, when the image wrote one (timed too)
from handler.bootstrap import create  # noqa: E402  (the handler modules: timed)
from handler.lifecycle import stop_cleanly_on_sigterm  # noqa: E402
from handler.settings import Settings  # noqa: E402

_T_IMPORTED = time.perf_counter()

try:
    SERVICE = create(Settings.from_env())
finally:  # the init's imports are done (its pipeline's too): later ones take the normal path
    bundle.remove()
if SERVICE.settings.tracing:  # X-Ray SDK (and botocore) only when tracing is on; timed as init
    from handler import tracing

    tracing.install(SERVICE.telemetry)
SERVICE.init_durations.update({
    "imports": (_T_IMPORTED - _T0) * 1000.0,
    "init": (time.perf_counter() - _T0) * 1000.0,
})
if SERVICE.settings.initialization_type == "snap-start":
    # SnapStart only: warm up before the snapshot, refresh identity after each restore.
    from handler import snapstart

    snapstart.register(SERVICE.warm_up, SERVICE.state.refresh)
stop_cleanly_on_sigterm(SERVICE.telemetry.log)
SERVICE.telemetry.log("info", "initialized", model=SERVICE.model.name,
                      threads=SERVICE.model.threads,
                      execution_provider=SERVICE.model.provider.provider,
                      execution_provider_reason=SERVICE.model.provider.reason,
                      **SERVICE.init_durations)


def handler(event: dict[str, Any], context: object) -> object:
    return SERVICE(event, context)


def stream_handler(event: dict[str, Any], context: object) -> StreamedResponse:
    """The handler of response-streaming mode (``python -m handler.stream_runtime``)."""
    return SERVICE.stream(event, context)
