"""Find the model: a folder with ``model.json``, a bare ``.onnx``/``.ort`` file, or ``s3://``.

Runs once per execution environment, at init. Every failure is a ``ModelLoadError`` with a
message that says what was expected, so the runtime reports a clear ``Runtime.InitError``.
An ``s3://`` location is downloaded first (``handler.s3_model``).
"""

from __future__ import annotations

import os

from handler.errors import ModelLoadError
from handler.manifest import FILENAME, MODEL_SUFFIXES, Manifest
from handler.records import NamedTuple


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
    if remote:  # boto3 and pathlib, for S3-hosted models only: that module imports them
        from handler import s3_model

        local = s3_model.download(location, cache_dir)
    else:
        local = location
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
