"""Optional dependencies by command: a command whose extra is not installed stops with the
``pip install`` line that fixes it (httpx's habit), before anything imports the missing module.
The extras themselves are ``[project.optional-dependencies]`` in ``pyproject.toml``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

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


def install_line(extra: str, checkout: Path | None = None) -> str:
    """The pip line that installs ``extra`` here: in a source checkout the checkout itself
    (``pip install 'onnx-lambda[x]'`` there would fetch the released package from the
    registry), with the checkout's ``.venv/bin/pip`` when that is the running interpreter's."""
    if checkout is None:
        from onnx_lambda.source_tree import SourceTreeError, root

        try:
            checkout = root()
        except SourceTreeError:  # an installed package
            return f"pip install 'onnx-lambda[{extra}]'"
    venv = checkout / ".venv"
    pip = ".venv/bin/pip" if Path(sys.prefix) == venv or Path(sys.prefix) == venv.resolve() \
        else "pip"
    where = "" if Path.cwd() == checkout else f" (in {checkout})"
    return f"{pip} install -e '.[{extra}]'{where}"


def require(command: str, extra: str, modules: tuple[str, ...], who: str | None = None) -> None:
    """Raise ``MissingExtraError`` naming ``extra`` when one of ``modules`` is not importable
    (found without importing it, so a present module costs nothing here). ``who`` names the
    caller in the message (default ``onnx-lambda COMMAND``)."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise MissingExtraError(
                f"{who or 'onnx-lambda ' + command} needs the '{extra}' extra (no module named "
                f"{module!r}): {install_line(extra)}", name=module)


def check(command: str) -> None:
    """``require`` for a CLI command (one without optional dependencies passes)."""
    if command in NEEDS:
        require(command, *NEEDS[command])
