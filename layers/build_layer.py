#!/usr/bin/env python3
"""Build and measure the runtime dependencies (numpy + onnxruntime) for Lambda, without Docker.

    build_layer.py layer --arch x86_64 --out DIR [--zip FILE]   the layer (DIR/python/...)
    build_layer.py image-size [--arch x86_64] [--budget-mb N]   what the image adds
    build_layer.py prune DIR                                     prune an installed tree

`layers/requirements.txt` is the single source of what is installed; the Dockerfile runs the
same `prune`. Wheels are the manylinux ones for the Lambda runtime's Python and architecture,
installed with `--no-deps`: at runtime onnxruntime needs only numpy (its declared flatbuffers,
packaging and protobuf serve its offline tools, which are pruned). Standard library only, so
`sam build` can run it with any Python 3.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "layers" / "requirements.txt"
LAMBDA_PYTHON = "3.12"
MB = 1024 * 1024
# Lambda: function + all its layers, unzipped, at most 250 MB.
LAYER_LIMIT_BYTES = 250 * MB
# What the image adds (dependencies + model + code): pruned numpy + onnxruntime measure
# 114 MB on x86_64 (98 MB arm64); 150 MB leaves room for a small model and catches an unpruned
# or accidental dependency (onnxruntime's offline tools, numpy's tests and headers: ~13 MB).
IMAGE_BUDGET_MB = 150
# Manylinux tags the Lambda Python 3.12+ runtime (Amazon Linux 2023, glibc 2.34) can load.
PLATFORMS = ("manylinux2014_{arch}", "manylinux_2_28_{arch}")
ARCH_ALIASES = {"x86_64": "x86_64", "arm64": "aarch64"}

# Not needed to import numpy and run an InferenceSession.
PRUNED_DIRS = (
    "bin",
    "numpy/_core/include",
    "numpy/_core/lib",
    "numpy/f2py",
    "numpy/_pyinstaller",
    "onnxruntime/backend",
    "onnxruntime/datasets",
    "onnxruntime/quantization",
    "onnxruntime/tools",
    "onnxruntime/transformers",
)
PRUNED_DIR_NAMES = ("tests", "__pycache__")
PRUNED_SUFFIXES = (".pyi", ".pxd", ".h", ".c", ".cpp", ".a")


def tree_size(root: Path) -> int:
    """Bytes of all regular files under ``root`` (what counts against Lambda's limits)."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def _prunable(root: Path) -> Iterator[Path]:
    for rel in PRUNED_DIRS:
        if (root / rel).is_dir():
            yield root / rel
    for path in sorted(root.rglob("*")):
        pruned_dir = path.is_dir() and path.name in PRUNED_DIR_NAMES
        pruned_file = path.is_file() and path.suffix in PRUNED_SUFFIXES
        if pruned_dir or pruned_file:
            yield path


def prune(root: Path) -> int:
    """Delete tests, headers, stubs, caches and onnxruntime's offline tools; return bytes freed."""
    freed = 0
    for path in list(_prunable(root)):
        if not path.exists():  # inside a directory removed earlier
            continue
        if path.is_dir():
            freed += tree_size(path)
            shutil.rmtree(path)
        else:
            freed += path.stat().st_size
            path.unlink()
    return freed


def pip_command(target: Path, arch: str, python_version: str = LAMBDA_PYTHON) -> list[str]:
    machine = ARCH_ALIASES[arch]
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
               "--no-cache-dir", "--only-binary=:all:", "--implementation", "cp",
               "--python-version", python_version, "--target", str(target),
               "-r", str(REQUIREMENTS)]
    for platform in PLATFORMS:
        command += ["--platform", platform.format(arch=machine)]
    return command


def install(target: Path, arch: str) -> None:
    subprocess.run(pip_command(target, arch), check=True)


def check_layer_size(size: int) -> None:
    if size > LAYER_LIMIT_BYTES:
        raise SystemExit(f"layer is {size / MB:.1f} MB unzipped, over Lambda's 250 MB limit")


def build_layer(out: Path, arch: str, zip_path: Path | None) -> int:
    site = out / "python"
    install(site, arch)
    prune(site)
    size = tree_size(out)
    check_layer_size(size)
    if zip_path is not None:
        with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(out.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(out))
    return size


def image_report(arch: str, model: Path, code: Path) -> dict[str, int]:
    """Bytes the image adds over its base: pruned dependencies, the model, the handler code."""
    with tempfile.TemporaryDirectory() as tmp:
        install(Path(tmp), arch)
        prune(Path(tmp))
        dependencies = tree_size(Path(tmp))
    code_size = sum(p.stat().st_size for p in code.rglob("*.py"))
    sizes = {"dependencies": dependencies, "model": tree_size(model), "code": code_size}
    return {**sizes, "total": sum(sizes.values())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    layer = sub.add_parser("layer", help="build the layer into OUT/python")
    layer.add_argument("--arch", choices=sorted(ARCH_ALIASES), default="x86_64")
    layer.add_argument("--out", type=Path, required=True)
    layer.add_argument("--zip", type=Path, help="also write the layer zip here")
    image = sub.add_parser("image-size", help="measure what the image adds; fail over budget")
    image.add_argument("--arch", choices=sorted(ARCH_ALIASES), default="x86_64")
    image.add_argument("--model", type=Path, default=ROOT / "models" / "digits")
    image.add_argument("--budget-mb", type=float, default=IMAGE_BUDGET_MB)
    pruner = sub.add_parser("prune", help="prune an installed site-packages tree")
    pruner.add_argument("root", type=Path)
    args = parser.parse_args(argv)

    if args.command == "layer":
        size = build_layer(args.out, args.arch, args.zip)
        print(f"layer ({args.arch}): {size / MB:.1f} MB unzipped (limit 250 MB)")
    elif args.command == "image-size":
        if not args.model.is_dir():
            parser.error(f"no model folder at {args.model}: run `onnx-lambda build-model` first")
        report = image_report(args.arch, args.model, ROOT / "handler")
        for name, size in report.items():
            print(f"{name:>12}: {size / MB:8.1f} MB")
        if report["total"] > args.budget_mb * MB:
            print(f"over the {args.budget_mb:g} MB budget", file=sys.stderr)
            return 1
    else:
        print(f"pruned {prune(args.root) / MB:.1f} MB from {args.root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
