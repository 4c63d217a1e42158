"""How an execution environment's runtime process starts: the variables Lambda sets and the
command line (the real runtime client, ``python -m awslambdaric HANDLER``; for a Managed
Instances function with ``AWS_LAMBDA_MAX_CONCURRENCY``, its forked workers tied to it)."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

from onnx_lambda.emulator.template import FunctionSpec

REGION = "us-east-1"
ACCOUNT_ID = "123456789012"
# From the host into every environment: what a process needs to run, AWS credentials, and
# endpoint overrides (``AWS_ENDPOINT_URL``, ``AWS_ENDPOINT_URL_<SERVICE>``), e.g. to point a
# function's boto3 Lambda client back at this emulator.
PASS_THROUGH = ("PATH", "HOME", "LD_LIBRARY_PATH", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN")
PASS_THROUGH_PREFIXES = ("AWS_ENDPOINT_URL",)
# The runtime process starts without ``site`` (``-S``) and gets the folders ``site`` would put
# on ``sys.path``, after the standard library and in its order (site-packages, the user site,
# the folders their ``.pth`` files name), but none of the ``.pth`` files' ``import`` lines:
# those hooks belong to the developer's venv (an editable install's finder imports ``pathlib``,
# ``re`` and ``enum``, ≈ 15–20 ms; setuptools' distutils shim), not to Lambda, where a
# function's packages come from the task root and layers, so they would inflate the Init
# Duration and hand the handler modules it must import itself on Lambda.
BOOT = "import sys\nsys.path.extend({dirs!r})\n"
RUN_CLIENT = "import runpy\nrunpy.run_module({module!r}, run_name='__main__', alter_sys=True)\n"
# The runtime client of each mode: awslambdaric posts one buffered response per invocation; a
# function that streams (Function URL InvokeMode RESPONSE_STREAM) runs handler/'s own loop
CLIENT, STREAMING_CLIENT = "awslambdaric", "handler.stream_runtime"
# A Managed Instances runtime: every process awslambdaric forks (its workers) is set to die
# with it, as the runtime dies with the emulator (die_with_parent): no worker outlives an
# emulator that was killed outright, even one busy in its handler.
DIE_WITH_PARENT = (
    "import ctypes, os, signal\n"
    "prctl = ctypes.CDLL(None).prctl\n"
    "os.register_at_fork(after_in_child=lambda: prctl(1, signal.SIGKILL))\n")  # PDEATHSIG


def function_arn(name: str, qualifier: str | None = None) -> str:
    arn = f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{name}"
    return f"{arn}:{qualifier}" if qualifier else arn


def runtime_command(spec: FunctionSpec) -> list[str]:
    """The runtime client's ``__main__`` (``python -m awslambdaric HANDLER``, or ``python -m
    handler.stream_runtime HANDLER`` for a streaming function), started as ``BOOT`` says."""
    program = BOOT.format(dirs=site_packages())
    if spec.processes_per_environment:
        program += DIE_WITH_PARENT
    client = STREAMING_CLIENT if spec.streaming else CLIENT
    return [sys.executable, "-S", "-c", program + RUN_CLIENT.format(module=client),
            spec.handler]


def lambda_environment(spec: FunctionSpec, *, init_type: str, runtime_api: str,
                       env_id: str, overrides: dict[str, str]) -> dict[str, str]:
    """The variables Lambda sets for a Python function, then the function's own."""
    env = {key: value for key, value in os.environ.items()
           if key in PASS_THROUGH or key.startswith(PASS_THROUGH_PREFIXES)}
    day = time.strftime("%Y/%m/%d", time.gmtime())
    env.update({
        "AWS_LAMBDA_FUNCTION_NAME": spec.name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_INITIALIZATION_TYPE": init_type,
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{spec.name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": f"{day}/[$LATEST]{env_id}",
        "AWS_LAMBDA_RUNTIME_API": runtime_api,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        # the declared runtime's: awslambdaric polls /next on a thread and writes non-ASCII
        # JSON for python3.12+, so the host interpreter's version would change its behaviour
        "AWS_EXECUTION_ENV": "AWS_Lambda_" + (
            spec.runtime or f"python{sys.version_info.major}.{sys.version_info.minor}"),
        "LAMBDA_TASK_ROOT": str(spec.task_root),
        "LAMBDA_RUNTIME_DIR": str(Path(sys.executable).parent.parent),
        "_HANDLER": spec.handler,
        "PYTHONPATH": os.pathsep.join(str(p) for p in (
            spec.task_root, *spec.extra_paths, *_streaming_paths(spec))),
        "LANG": "en_US.UTF-8",
        "TZ": ":UTC",
    })
    if spec.processes_per_environment:  # awslambdaric forks this many workers
        env["AWS_LAMBDA_MAX_CONCURRENCY"] = str(spec.processes_per_environment)
    env.update(spec.environment)
    env.update(overrides)
    return env


def _streaming_paths(spec: FunctionSpec) -> list[Path]:
    """Where ``handler.stream_runtime`` comes from for a streaming function: the folder holding
    this installation's ``handler`` package (in the image it sits in the task root)."""
    if not spec.streaming:
        return []
    found = importlib.util.find_spec("handler")
    return [Path(found.origin).parent.parent] if found and found.origin else []


def site_packages() -> list[str]:
    """The folders ``site`` adds to this interpreter's ``sys.path``, in its order: each site
    folder (site-packages, then the user site when enabled), then the existing folders its
    ``.pth`` files list (sorted by name, as ``site.addpackage`` reads them), without running
    their ``import`` lines."""
    import site

    folders = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    found: list[str] = []
    for folder in filter(os.path.isdir, folders):
        found.append(folder)
        for name in sorted(n for n in os.listdir(folder) if n.endswith(".pth")):
            found += _pth_folders(os.path.join(folder, name), folder)
    return list(dict.fromkeys(found))


def _pth_folders(pth: str, base: str) -> list[str]:
    """The folders a ``.pth`` file names, relative to its site folder; ``import`` lines (code
    ``site`` would run) and comments skipped."""
    try:
        with open(pth, encoding="utf-8") as file:
            lines = file.read().splitlines()
    except (OSError, UnicodeDecodeError):  # site skips an unreadable .pth too
        return []
    folders = []
    for line in lines:
        if not line.strip() or line.startswith("#") or line.startswith(("import ", "import\t")):
            continue
        folder = os.path.join(base, line.rstrip())
        if os.path.isdir(folder):
            folders.append(os.path.abspath(folder))
    return folders
