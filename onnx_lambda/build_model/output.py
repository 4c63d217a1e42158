"""Atomic output: the artifact is assembled in a hidden staging folder beside the target, then
renamed into place, so a failed build never leaves a half-written model folder.

``cancellable`` turns SIGINT/SIGTERM into an exception, so a cancelled build unwinds through
the same cleanup as a failed one; the swap itself runs with both signals blocked. Staging
folders carry the builder's pid: one left by a process that no longer runs (SIGKILL, power
loss) is removed by the next build of the same target.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from handler.manifest import FILENAME
from onnx_lambda.build_model.errors import BuildCancelledError, OutputError

SIGNALS = (signal.SIGINT, signal.SIGTERM)


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
        _remove_orphans(output)
        staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.{os.getpid()}.",
                                        suffix=".building", dir=parent))
        umask = os.umask(0)
        os.umask(umask)
        staging.chmod(0o777 & ~umask)
        return staging
    except OSError as exc:
        raise OutputError(f"{output}: cannot write there ({exc.strerror or exc})") from exc


def _remove_orphans(output: Path) -> None:
    pattern = re.compile(rf"\.{re.escape(output.name)}\.(\d+)\.\w+\.(building|old)")
    for path in output.parent.iterdir():
        match = pattern.fullmatch(path.name)
        if match and path.is_dir() and not _alive(int(match.group(1))):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


@contextmanager
def cancellable() -> Iterator[None]:
    """SIGINT/SIGTERM raise ``BuildCancelledError`` inside the block (main thread only: elsewhere
    Python cannot install handlers, and the caller's own handling applies)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def cancel(signum: int, frame: object) -> None:
        raise BuildCancelledError(signum)

    previous = {sig: signal.signal(sig, cancel) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def publish(staging: Path, output: Path) -> None:
    """Replace ``output`` with ``staging``; an older artifact is removed only after the swap,
    which a signal cannot interrupt (it is delivered once the swap is done)."""
    previous = None
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        if output.exists():
            previous = Path(tempfile.mkdtemp(prefix=f".{output.name}.{os.getpid()}.",
                                             suffix=".old", dir=output.parent))
            os.replace(output, previous / output.name)
        os.replace(staging, output)
    except OSError as exc:
        if previous is not None and not output.exists():
            os.replace(previous / output.name, output)
        raise OutputError(f"{output}: cannot write there ({exc.strerror or exc})") from exc
    finally:
        if previous is not None:
            shutil.rmtree(previous, ignore_errors=True)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def discard(staging: Path) -> None:
    """Remove a staging folder; a second Ctrl-C cannot leave half of it behind."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        shutil.rmtree(staging, ignore_errors=True)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
