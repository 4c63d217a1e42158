"""Every ``ONNX_LAMBDA_*`` variable, declared once, parsed once at init into an immutable
``Settings``.

Resolution order: explicit keyword argument > environment mapping > default. The environment is
passed in as a mapping (never read at import time here), so tests need no module reloads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from handler.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PREFIX = "ONNX_LAMBDA_"
LAMBDA_MAX_SYNC_PAYLOAD = 6 * 1024 * 1024


def _bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected a boolean (1/0, true/false), got {raw!r}")


def _non_negative_int(raw: str) -> int:
    value = int(raw)
    if value < 0:
        raise ValueError(f"expected an integer >= 0, got {raw!r}")
    return value


def _comma_list(raw: str) -> tuple[str, ...]:
    return tuple(part for part in (item.strip() for item in raw.split(",")) if part)


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {raw!r}")
        return value

    return parse


class Variable(NamedTuple):
    field: str
    parse: Callable[[str], Any]
    default: Any
    doc: str

    @property
    def env_name(self) -> str:
        return PREFIX + self.field.upper()


# The documented table (docs/reference/configuration.md) is checked against this list by a test.
VARIABLES: tuple[Variable, ...] = (
    Variable("model", str, "models/digits",
             "Model location: a model folder (artifact + `model.json`), a bare `.onnx`/`.ort` "
             "file, or `s3://bucket/key` (a folder prefix or one file), downloaded to /tmp once "
             "per environment. Relative paths resolve against the task root (the working "
             "directory)."),
    Variable("model_name", str, "",
             "The model's name in the `/v2/models/{name}` routes, V2 answers and `/health`; "
             "default: the manifest's name or the file stem."),
    Variable("pipeline", str, "",
             "Pre/post-processing: `tensor`, `classifier`, `text-embedding`, `rerank` or a "
             "`package.module` with `preprocess`/`postprocess`; default: the manifest's, else "
             "`tensor`."),
    Variable("threads", _non_negative_int, 0,
             "ONNX Runtime intra-op threads; 0 = from the function's memory (1,769 MB per "
             "vCPU, max 6, capped by visible CPUs), or 1 on Lambda Managed Instances (detected "
             "by `AWS_LAMBDA_MAX_CONCURRENCY`: one process per concurrent request already fills "
             "the vCPUs)."),
    Variable("graph_optimization", _choice("auto", "disable", "basic", "extended", "all"), "auto",
             "Online graph optimization at session load; `auto` = `all` for the generate "
             "pipeline, else off for an artifact optimized offline for this onnxruntime "
             "version and `basic` otherwise."),
    Variable("execution_provider", _choice("auto", "cpu", "cuda"), "auto",
             "ONNX Runtime execution provider: `auto` = CUDA when a GPU device is visible "
             "(`/dev/nvidia0`), the manifest does not mark the model GPU-unsuitable and the "
             "library offers it (`onnxruntime-gpu`), else CPU; `cuda` = that or an init error; "
             "`cpu`. The choice and its reason are logged and shown in `/health`."),
    Variable("warmup", _bool, True,
             "Run one inference at init on the manifest's example (one that fails is an init "
             "error); without one, on a synthetic guess whose failure is logged and shown in "
             "`/health` but never stops the start."),
    Variable("max_payload_bytes", _non_negative_int, LAMBDA_MAX_SYNC_PAYLOAD,
             "Largest accepted request body in bytes (after base64 decoding); larger → 413."),
    Variable("cache_size", _non_negative_int, 0,
             "Entries in the in-environment result cache keyed by the request body's hash; "
             "0 = off."),
    Variable("prefix_cache_mb", _non_negative_int, 64,
             "Generate pipeline: MB of key/value cache kept across requests in a warm "
             "environment, so a prompt that starts like an earlier sequence (a system prompt, "
             "a chat's history) prefills only the rest; least recently used first out; 0 = "
             "off. `Server-Timing` `prefix-hit`: the prompt tokens it held."),
    Variable("prompt_lookup", _non_negative_int, 0,
             "Generate pipeline: prompt-lookup speculative decoding, this many draft tokens a "
             "step copied from where the last tokens occurred before (summaries, answers "
             "quoting their input); greedy requests only, the same tokens as without; needs "
             "a graph with a shared past/present buffer (onnxruntime-genai's); 0 = off."),
    Variable("gzip_min_bytes", _non_negative_int, 1400,
             "gzip a JSON answer of at least this many bytes when the client's "
             "`Accept-Encoding` allows it and it gets smaller even base64-encoded (HTTP API, "
             "Function URL and ALB events; a REST API compresses on its own); 0 = never. The "
             "default is about one TCP segment: a smaller body gains nothing on the wire."),
    Variable("deadline_margin_ms", _non_negative_int, 20,
             "Refuse (504) a request when the remaining invocation time minus this margin "
             "cannot cover the slowest recent inference."),
    Variable("log_level", _choice("debug", "info", "warning", "error"), "info",
             "Structured log level."),
    Variable("metrics", _bool, True, "Emit one CloudWatch EMF metrics line per request."),
    Variable("metrics_namespace", str, "OnnxLambda", "CloudWatch namespace of the EMF metrics."),
    Variable("tracing", _bool, False,
             "X-Ray subsegments for each request's stages (needs the `aws-xray-sdk` package: "
             "`EXTRA_REQUIREMENTS=requirements-tracing.txt`); set by the template's `Tracing`."),
    Variable("verify", _choice("auto", "always", "never"), "auto",
             "sha256 check of the artifact's files against `model.json`: `auto` = files "
             "downloaded from S3 (an image is content-addressed already), `always`, `never`."),
    Variable("s3_cache_dir", str, "/tmp/onnx-lambda",
             "Where an `s3://` model is downloaded (Lambda's writable /tmp)."),
    Variable("api_keys", _comma_list, (),
             "Comma-separated keys every HTTP request must send as `Authorization: Bearer "
             "<key>` (401 otherwise), for clients such as the `openai` SDK that send a key; "
             "empty = no check (the template's `AuthMode` guards the API)."),
)


class Settings(NamedTuple):
    """Immutable, like a frozen dataclass, for a tenth of its import cost (~0.3 vs 3.2 ms)."""

    model: str
    model_name: str
    pipeline: str
    threads: int
    graph_optimization: str
    execution_provider: str
    warmup: bool
    max_payload_bytes: int
    cache_size: int
    prefix_cache_mb: int
    prompt_lookup: int
    gzip_min_bytes: int
    deadline_margin_ms: int
    log_level: str
    metrics: bool
    metrics_namespace: str
    tracing: bool
    verify: str
    s3_cache_dir: str
    api_keys: tuple[str, ...]
    # Lambda's own variables: read, never required locally.
    memory_mb: int | None
    initialization_type: str
    function_name: str
    # ONNX_LAMBDA_* names in the environment that no setting reads (typos): logged at init.
    unknown: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **explicit: Any) -> Settings:
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for var in VARIABLES:
            if var.field in explicit:
                values[var.field] = explicit.pop(var.field)
            elif var.env_name in env:
                try:
                    values[var.field] = var.parse(env[var.env_name])
                except ValueError as exc:
                    raise ValueError(f"{var.env_name}: {exc}") from None
            else:
                values[var.field] = var.default
        if values["threads"] == 0 and env.get("AWS_LAMBDA_MAX_CONCURRENCY"):
            values["threads"] = 1  # Managed Instances: processes, not threads, use the vCPUs
        memory = env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "")
        values["memory_mb"] = int(memory) if memory.isdigit() else None
        values["initialization_type"] = env.get("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
        values["function_name"] = env.get("AWS_LAMBDA_FUNCTION_NAME", "local")
        known = {var.env_name for var in VARIABLES}
        values["unknown"] = tuple(sorted(
            name for name in env if name.startswith(PREFIX) and name not in known
            and not name.startswith(PREFIX + "WARM_")))  # the warmer function's own settings
        values.update(explicit)
        unknown = set(values) - set(cls._fields)
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(sorted(unknown))}")
        return cls(**values)
