"""Atomic output: the artifact is assembled in a hidden staging folder beside the target, then
renamed into place, so a failed build never leaves a half-written model folder."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from handler.manifest import FILENAME
from onnx_lambda.build.errors import OutputError


def staging_for(output: Path) -> Path:
    """A fresh staging folder on the same filesystem as ``output`` (so the rename is atomic),
    with the permissions a plain mkdir would give (the Lambda user is not the image's owner)."""
    if output.exists() and not output.is_dir():
        raise OutputError(f"{output}: exists and is not a folder")
    if output.is_dir() and any(output.iterdir()) and not (output / FILENAME).exists():
        raise OutputError(f"{output}: exists, is not empty and holds no {FILENAME}; "
                          "refusing to replace it (remove it or choose another -o)")
    parent = output.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.", suffix=".building",
                                        dir=parent))
        umask = os.umask(0)
        os.umask(umask)
        staging.chmod(0o777 & ~umask)
        return staging
    except OSError as exc:
        raise OutputError(f"{output}: cannot write there ({exc.strerror or exc})") from exc


def publish(staging: Path, output: Path) -> None:
    """Replace ``output`` with ``staging``; an older artifact is removed only after the swap."""
    previous = None
    try:
        if output.exists():
            previous = Path(tempfile.mkdtemp(prefix=f".{output.name}.", suffix=".old",
                                             dir=output.parent))
            os.replace(output, previous / output.name)
        os.replace(staging, output)
    except OSError as exc:
        if previous is not None and not output.exists():
            os.replace(previous / output.name, output)
        raise OutputError(f"{output}: cannot write there ({exc.strerror or exc})") from exc
    finally:
        if previous is not None:
            shutil.rmtree(previous, ignore_errors=True)


def discard(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
