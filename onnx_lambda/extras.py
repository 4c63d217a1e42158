"""Optional dependencies by command: a command whose extra is not installed stops with the
``pip install`` line that fixes it (httpx's habit), before anything imports the missing module.
The extras themselves are ``[project.optional-dependencies]`` in ``pyproject.toml``."""

from __future__ import annotations

import importlib.util

# command -> (extra, the top-level modules its code imports from that extra)
SERVE = ("serve", ("awslambdaric", "httptools", "uvloop", "yaml", "psutil"))
BUILD = ("build", ("onnx", "rich"))
PLAN = ("plan", (*SERVE[1], "rich", "matplotlib"))
NEEDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "serve": SERVE, "invoke": SERVE,
    "build-model": BUILD, "inspect": BUILD,
    "tune": PLAN, "simulate": ("plan", ("matplotlib",)), "price": ("plan", ()),
    "probe": ("client", ("httpx", "h2")),
    "warm": ("client", ("boto3",)), "deploy-regions": ("serve", ("yaml", "boto3")),
    # the lab's baselines, load generator and plots (checked once the checkout is found)
    "bench": ("bench", ("aiohttp", "fastapi", "uvicorn", "mangum", "matplotlib", "onnx",
                        "awslambdaric")),
}


class MissingExtraError(ImportError):
    """A command's optional dependency is not installed; the message says how to install it."""


def require(command: str, extra: str, modules: tuple[str, ...]) -> None:
    """Raise ``MissingExtraError`` naming ``extra`` when one of ``modules`` is not importable
    (found without importing it, so a present module costs nothing here)."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise MissingExtraError(
                f"onnx-lambda {command} needs the '{extra}' extra (no module named {module!r}): "
                f"pip install 'onnx-lambda[{extra}]'", name=module)


def check(command: str) -> None:
    """``require`` for a CLI command (one without optional dependencies passes)."""
    if command in NEEDS:
        require(command, *NEEDS[command])
