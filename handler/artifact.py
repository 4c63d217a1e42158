"""Find the model: a folder with ``model.json``, a bare ``.onnx``/``.ort`` file, or ``s3://``.

Runs once per execution environment, at init. Every failure is a ``ModelLoadError`` with a
message that says what was expected, so the runtime reports a clear ``Runtime.InitError``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

from handler.errors import ModelLoadError
from handler.manifest import FILENAME, Manifest

if TYPE_CHECKING:  # the s3:// branch only: pathlib (with urllib.parse, ipaddress) costs cold start
    from pathlib import Path

MODEL_SUFFIXES = (".onnx", ".ort")


class Artifact(NamedTuple):
    # a str, not a pathlib.Path: pathlib and what it imports cost ~15 M instructions of the cold
    # start (awslambdaric never imports it); os.path takes either
    path: str  # the file the session loads
    manifest: Manifest | None
    optimized_offline: bool  # graph optimizations already applied for this onnxruntime version
    warning: str = ""  # something init should log (e.g. a fallback to the portable model)

    def file(self, name: str) -> str:
        """The path of ``name`` beside the model file (a tokenizer, an example file)."""
        return os.path.join(os.path.dirname(self.path), name)


def resolve(location: str, *, ort_version: str, verify: str, cache_dir: str) -> Artifact:
    remote = location.startswith("s3://")
    local = _download_s3(location, cache_dir) if remote else location
    should_verify = verify == "always" or (verify == "auto" and remote)
    if os.path.isdir(local):
        return _from_folder(local, location, ort_version, should_verify)
    if os.path.isfile(local):
        if not local.endswith(MODEL_SUFFIXES):
            raise ModelLoadError(f"{location}: expected a model folder with {FILENAME}, or a "
                                 f"{' / '.join(MODEL_SUFFIXES)} file")
        return Artifact(local, None, local.endswith(".ort"))
    raise ModelLoadError(f"model not found: {location} (set ONNX_LAMBDA_MODEL to a model folder, "
                         f"an .onnx file or an s3:// URI; working directory {os.getcwd()})")


def _from_folder(folder: str, location: str, ort_version: str, verify: bool) -> Artifact:
    try:
        manifest = Manifest.load(folder)
    except FileNotFoundError:
        candidates = sorted(name for name in os.listdir(folder) if name.endswith(MODEL_SUFFIXES)
                            and os.path.isfile(os.path.join(folder, name)))
        if len(candidates) != 1:
            raise ModelLoadError(f"{location}: no {FILENAME}, and {len(candidates)} model files "
                                 "(need exactly one to guess)") from None
        return Artifact(os.path.join(folder, candidates[0]), None, candidates[0].endswith(".ort"))
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelLoadError(f"{os.path.join(folder, FILENAME)}: invalid manifest: {exc}") from exc
    chosen, warning = manifest.model, ""
    optimized = manifest.optimization != "none" or chosen.endswith(".ort")
    if optimized and manifest.onnxruntime != ort_version:
        if not os.path.isfile(os.path.join(folder, manifest.portable)):
            raise ModelLoadError(
                f"{folder}: {manifest.model} was optimized for onnxruntime "
                f"{manifest.onnxruntime}, this is {ort_version}, and the portable "
                f"{manifest.portable} was not shipped (packaging keeps it only when the "
                "versions can differ): rebuild with `onnx-lambda build-model` under this "
                "onnxruntime, or ship the portable file")
        warning = (f"model {manifest.name} was optimized for onnxruntime {manifest.onnxruntime}, "
                   f"this is {ort_version}: loading the portable {manifest.portable}")
        chosen, optimized = manifest.portable, False
    path = os.path.join(folder, chosen)
    if not os.path.isfile(path):
        raise ModelLoadError(f"{folder}: the manifest names {chosen}, which is missing")
    if verify:
        # The model file not chosen may be left out by packaging (one model file per artifact).
        unused = {manifest.model, manifest.portable} - {chosen}
        for name, expected in manifest.files.items():
            file = os.path.join(folder, name)
            if name not in unused or os.path.exists(file):
                _check_sha256(file, expected)
    return Artifact(path, manifest, optimized, warning)


def _check_sha256(path: str, expected: str) -> None:
    # hashlib loads OpenSSL (a few ms): only artifacts that are verified pay for it.
    import hashlib

    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except FileNotFoundError:
        raise ModelLoadError(f"{path}: listed in {FILENAME} but missing") from None
    if digest.hexdigest() != expected:
        raise ModelLoadError(f"{path}: sha256 mismatch (manifest {expected[:12]}…, file "
                             f"{digest.hexdigest()[:12]}…): corrupt or replaced artifact")


def _download_s3(uri: str, cache_dir: str) -> str:
    """Download a file or a folder prefix once per environment; returns the local path.

    On Lambda Managed Instances every process of an environment runs this init at once and
    shares ``/tmp``: an exclusive ``flock`` lets one of them download, into a private staging
    folder renamed into place; the others wait on the lock and reuse the result. The remote
    ETags are stamped beside it, so a changed object is fetched again (and a stale local cache
    is never served)."""
    # boto3 is heavy (~0.3 s) and only needed for S3-hosted models: imported in this branch only,
    # as is pathlib (the staging and stamp paths).
    from pathlib import Path

    try:
        import boto3
    except ImportError:
        raise ModelLoadError("an s3:// model needs boto3 (present in the Lambda managed runtime; "
                             "locally: pip install boto3)") from None
    bucket, _, key = uri[len("s3://"):].partition("/")
    if not bucket or not key:
        raise ModelLoadError(f"{uri}: expected s3://bucket/key")
    s3 = boto3.client("s3")
    target = Path(cache_dir) / bucket / key.rstrip("/")
    try:
        objects = _listing(s3, bucket, key)
        if not objects:
            raise ModelLoadError(f"{uri}: no objects under this prefix")
        stamp = "".join(f"{name}\t{etag}\n" for name, _, etag in objects)
        target.parent.mkdir(parents=True, exist_ok=True)
        with _Exclusive(target.with_name(target.name + ".lock")):
            stamp_file = target.with_name(target.name + ".etags")
            if target.exists() and stamp_file.is_file() and stamp_file.read_text() == stamp:
                return str(target)
            _fetch_into_place(s3, bucket, objects, target, single=key.endswith(MODEL_SUFFIXES))
            _write_atomically(stamp_file, stamp)
    except ModelLoadError:
        raise
    except Exception as exc:  # botocore's errors: no access, no such bucket/key, network
        raise ModelLoadError(f"{uri}: download failed: {exc}") from exc
    return str(target)


def _listing(s3: object, bucket: str, key: str) -> list[tuple[str, str, str]]:
    """``(name under the target, object key, ETag)`` of a model file or of a folder prefix."""
    if key.endswith(MODEL_SUFFIXES):
        return [("", key, s3.head_object(Bucket=bucket, Key=key)["ETag"])]  # type: ignore[attr-defined]
    prefix = key.rstrip("/") + "/"
    pages = s3.get_paginator("list_objects_v2").paginate(  # type: ignore[attr-defined]
        Bucket=bucket, Prefix=prefix)
    return [(obj["Key"][len(prefix):], obj["Key"], obj["ETag"])
            for page in pages for obj in page.get("Contents", ())]


def _fetch_into_place(s3: object, bucket: str, objects: list[tuple[str, str, str]],
                      target: Path, *, single: bool) -> None:
    """Download into a staging folder unique to this process, then rename: a reader never
    sees a half-written model."""
    import shutil
    import tempfile
    from pathlib import Path

    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for name, object_key, _ in objects:
            dest = staging / (name or target.name)
            dest.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, object_key, str(dest))  # type: ignore[attr-defined]
        if single:
            os.replace(staging / target.name, target)
            return
        if target.exists():  # an older version: moved aside, dropped with the staging folder
            os.rename(target, staging / ".replaced")
        os.rename(staging, target)
        staging = target / ".replaced"
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(text)
    os.replace(partial, path)


class _Exclusive:
    """An exclusive ``flock`` on ``path`` for the ``with`` block (released if the process dies)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> None:
        import fcntl  # Linux/macOS only, as Lambda is; needed only for s3:// models

        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)  # closing the descriptor releases the lock
