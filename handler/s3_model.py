"""An ``s3://`` model: downloaded to ``/tmp`` once per execution environment.

Imported by ``handler.artifact`` for S3-hosted models only: boto3 (~0.3 s) and pathlib come with
it, and stay off every other cold start.
"""

from __future__ import annotations

import os
from pathlib import Path

from handler.errors import ModelLoadError
from handler.manifest import MODEL_SUFFIXES


def download(uri: str, cache_dir: str) -> str:
    """Download a file or a folder prefix once per environment; returns the local path.

    On Lambda Managed Instances every process of an environment runs this init at once and
    shares ``/tmp``: an exclusive ``flock`` lets one of them download, into a private staging
    folder renamed into place; the others wait on the lock and reuse the result. The remote
    ETags are stamped beside it, so a changed object is fetched again (and a stale local cache
    is never served)."""
    try:  # here, not at the top: a missing boto3 is a clear init error, not an ImportError
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
