#!/usr/bin/env python3
"""Build and measure the runtime dependencies (ONNX Runtime's C library) for Lambda, without Docker.

    build_layer.py layer --arch x86_64 --out DIR [--zip FILE] [--extra FILE]   the layer
    build_layer.py image-size [--arch x86_64] [--model DIR] [--budget-mb N] [--extra FILE]
    build_layer.py prune DIR                   prune an installed tree
    build_layer.py prune-model DIR             drop the model files the runtime never reads
    build_layer.py code PACKAGE DEST           copy a function package as it ships
    build_layer.py shipped-model               the model folder template.yaml ships (models/NAME)

`layers/requirements.txt` is the single source of what is installed; the Dockerfile runs the
same `prune` and `prune-model`. Wheels are the manylinux ones for the Lambda runtime's Python and
architecture, installed with `--no-deps`. The handler loads `onnxruntime/capi/libonnxruntime.so.*`
through ctypes (handler/ort/capi.py) and nothing else of the wheel: its Python binding, Python
files and offline tools are pruned, and numpy (which only the binding needs) is not installed.
`--extra` adds a pipeline's own needs by file name in layers/: `requirements-text.txt`
(tokenizers, for text models), `requirements-numpy.txt` (a user pipeline that imports numpy).
Standard library only, so `sam build` can run it with any Python 3.
"""

from __future__ import annotations

import argparse
import compileall
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = Path(__file__).resolve().parent
REQUIREMENTS = LAYERS / "requirements.txt"
LAMBDA_PYTHON = "3.12"
MB = 1024 * 1024
# Lambda: function + all its layers, unzipped, at most 250 MB.
LAYER_LIMIT_BYTES = 250 * MB
# What the image adds for a small model (design.md's budget): the pruned C library is ~35 MB
# (x86_64); 45 MB catches the binding or numpy slipping back in (each over 30 MB).
IMAGE_BUDGET_MB = 45
# Manylinux tags the Lambda Python 3.12+ runtime (Amazon Linux 2023, glibc 2.34) can load.
PLATFORMS = ("manylinux2014_{arch}", "manylinux_2_28_{arch}")
ARCH_ALIASES = {"x86_64": "x86_64", "arm64": "aarch64"}
TEMPLATE = ROOT / "template.yaml"
# The model's one home: template.yaml's Mappings Model Shipped Path, in the layout
# `onnx-lambda deploy-config` writes (read without a YAML library: this script is stdlib only).
SHIPPED_MODEL = re.compile(r"^Mappings:\n(?:(?:[ #].*)?\n)*?  Model:\n    Shipped:\n"
                           r"      Path: *(models/[A-Za-z0-9][A-Za-z0-9._-]*)[ \t]*$", re.MULTILINE)
# Of a function package, what no artifact ships: the image's build file (.dockerignore keeps it
# out of the image's COPY) and bytecode caches.
NOT_SHIPPED_CODE = ("Dockerfile", "__pycache__")

# Not needed to import numpy (installed only on request, for a user pipeline) or cyyjson.
PRUNED_DIRS = (
    "bin",
    "numpy/_core/include",
    "numpy/_core/lib",
    "numpy/f2py",
    "numpy/_pyinstaller",
    "yyjson",  # its Python package (enums) and C sources: the handler imports its module cyyjson
)
PRUNED_DIR_NAMES = ("tests", "__pycache__")
PRUNED_SUFFIXES = (".pyi", ".pxd", ".h", ".c", ".cpp", ".a")
# Of the onnxruntime package only the C library stays (what handler/ort/capi.py loads); its
# dist-info (licence, version) stays beside it.
ORT_PACKAGE = "onnxruntime"
ORT_LIBRARY = ("capi", "libonnxruntime.so")
# onnxruntime-gpu (same package folder): the CUDA provider is a library ORT loads through the
# shared-provider bridge; both stay when the CUDA one is there (TensorRT's and the rest go).
ORT_CUDA_LIBRARIES = ("libonnxruntime_providers_cuda.so", "libonnxruntime_providers_shared.so")


def shipped_model(template: Path = TEMPLATE) -> str:
    """``models/NAME``, the folder the image and the zip function ship (and ONNX_LAMBDA_MODEL)."""
    match = SHIPPED_MODEL.search(template.read_text(encoding="utf-8"))
    if match is None:
        raise SystemExit(f"{template}: no Mappings: Model: Shipped: Path: models/NAME "
                         "(`onnx-lambda deploy-config models/NAME` writes it)")
    return match.group(1)


def tree_size(root: Path) -> int:
    """Bytes of all regular files under ``root`` (what counts against Lambda's limits)."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def _is_ort_library(path: Path, package: Path) -> bool:
    rel = path.relative_to(package).parts
    if len(rel) != 2 or rel[0] != ORT_LIBRARY[0]:
        return False
    gpu = (package / ORT_LIBRARY[0] / ORT_CUDA_LIBRARIES[0]).exists()
    return rel[1].startswith(ORT_LIBRARY[1]) or (gpu and rel[1] in ORT_CUDA_LIBRARIES)


def _prunable(root: Path) -> Iterator[Path]:
    for rel in PRUNED_DIRS:
        if (root / rel).is_dir():
            yield root / rel
    package = root / ORT_PACKAGE
    for path in sorted(package.rglob("*")):
        if path.is_file() and not _is_ort_library(path, package):
            yield path
    for path in sorted(root.rglob("*")):
        pruned_dir = path.is_dir() and path.name in PRUNED_DIR_NAMES
        pruned_file = path.is_file() and path.suffix in PRUNED_SUFFIXES
        if pruned_dir or pruned_file:
            yield path


def prune(root: Path) -> int:
    """Delete onnxruntime's binding and Python files (all but its C library), tests, headers,
    stubs and caches; return bytes freed."""
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
    package = root / ORT_PACKAGE
    for folder in sorted(package.rglob("*"), reverse=True):  # deepest first
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    return freed


def pinned_version(requirements: Path, name: str = ORT_PACKAGE) -> str:
    """The ``name==VERSION`` (or ``name-gpu==VERSION``) pin in a requirements file."""
    for line in requirements.read_text().splitlines():
        requirement = line.split("#")[0].strip()
        if requirement.partition("==")[0].strip().lower() in (name, f"{name}-gpu"):
            return requirement.partition("==")[2].strip()
    raise SystemExit(f"{requirements}: no {name}==VERSION pin")


def prune_model(folder: Path, ort_version: str) -> int:
    """Delete from a shipped copy of a model folder what its runtime never reads. Returns bytes
    freed.
    - The portable copy, when the manifest's model was made for ``ort_version``, the version
      the package pins (handler/artifact.py falls back only on a mismatch, and skips the
      unused model file when it verifies).
    - A text model's whole ``tokenizer.json`` once build-model has split it: the manifest's
      ``pipeline_options`` then name the base file and the vocabulary the handler reads
      (handler/pipelines/tokenizer_files.py). Its entry leaves the manifest's ``files`` too,
      so that a verified start does not look for it."""
    manifest = json.loads((folder / "model.json").read_text())
    model = manifest["model"]
    portable = manifest.get("portable", model)
    freed = 0
    if portable != model and manifest.get("onnxruntime") == ort_version:
        freed += _unlink(folder / portable)
    options = manifest.get("pipeline_options") or {}
    whole = "tokenizer.json"  # tokenizer_files.DEFAULT_FILE (this script runs without handler/)
    split = options.get("tokenizer", whole), options.get("vocabulary")
    if split[0] != whole and split[1] and all((folder / name).is_file() for name in split):
        freed += _unlink(folder / whole)
        if manifest.get("files", {}).pop(whole, None) is not None:
            (folder / "model.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return freed


def _unlink(path: Path) -> int:
    if not path.is_file():
        return 0
    size = path.stat().st_size
    path.unlink()
    return size


def requirement_files(extra: list[str]) -> list[Path]:
    files = [REQUIREMENTS, *(LAYERS / name for name in extra)]
    for path in files:
        if not path.is_file():
            raise SystemExit(f"no requirements file {path}")
    return files


def pip_command(target: Path, arch: str, python_version: str = LAMBDA_PYTHON,
                extra: tuple[str, ...] = ()) -> list[str]:
    machine = ARCH_ALIASES[arch]
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
               "--no-cache-dir", "--only-binary=:all:", "--implementation", "cp",
               "--python-version", python_version, "--target", str(target)]
    for path in requirement_files(list(extra)):
        command += ["-r", str(path)]
    for platform in PLATFORMS:
        command += ["--platform", platform.format(arch=machine)]
    return command


def install(target: Path, arch: str, extra: tuple[str, ...] = ()) -> None:
    subprocess.run(pip_command(target, arch, extra=extra), check=True)


def check_layer_size(size: int) -> None:
    if size > LAYER_LIMIT_BYTES:
        raise SystemExit(f"layer is {size / MB:.1f} MB unzipped, over Lambda's 250 MB limit")


def build_layer(out: Path, arch: str, zip_path: Path | None, extra: tuple[str, ...] = ()) -> int:
    site = out / "python"
    install(site, arch, extra)
    prune(site)
    size = tree_size(out)
    check_layer_size(size)
    if zip_path is not None:
        with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(out.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(out))
    return size


def copy_code(package: Path, dest: Path) -> None:
    """A function package (``handler/``, ``warmer/``) as its artifact ships it: every file but
    ``NOT_SHIPPED_CODE``. Into an existing ``dest`` too (a second ``make`` into one folder)."""
    shutil.copytree(package, dest, ignore=shutil.ignore_patterns(*NOT_SHIPPED_CODE),
                    dirs_exist_ok=True)


def assemble_task_root(root: Path, arch: str, model: Path, code: Path,
                       extra: tuple[str, ...] = ()) -> None:
    """The image's ``LAMBDA_TASK_ROOT`` as handler/Dockerfile builds it: pruned dependencies,
    the handler package, the model with ``prune-model`` applied, all byte-compiled."""
    install(root, arch, extra)
    prune(root)
    copy_code(code, root / code.name)
    shipped_model = root / "models" / model.name
    shutil.copytree(model, shipped_model)
    prune_model(shipped_model, pinned_version(REQUIREMENTS))
    # The Dockerfile's compileall and bundle (bytecode of this interpreter: within a few % of
    # 3.12's).
    compileall.compile_dir(str(root), quiet=1)
    # the checkout's (image-size runs from it; the Dockerfile's deps stage never calls this)
    from handler import bundle

    bundle.write(str(root / code.name))


def image_report(arch: str, model: Path, code: Path,
                 extra: tuple[str, ...] = ()) -> dict[str, int]:
    """Bytes the image adds over its base, from the assembled task root (``du -sb`` of it
    differs only by the directories' own entries): dependencies, model, code, total."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        assemble_task_root(root, arch, model, code, extra)
        total = tree_size(root)
        sizes = {"model": tree_size(root / "models"), "code": tree_size(root / code.name)}
    return {"dependencies": total - sum(sizes.values()), **sizes, "total": total}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    extra_help = "a pipeline's extra requirements file in layers/ (repeatable)"
    layer = sub.add_parser("layer", help="build the layer into OUT/python")
    layer.add_argument("--arch", choices=sorted(ARCH_ALIASES), default="x86_64")
    layer.add_argument("--out", type=Path, required=True)
    layer.add_argument("--zip", type=Path, help="also write the layer zip here")
    layer.add_argument("--extra", action="append", default=[], help=extra_help)
    image = sub.add_parser("image-size", help="measure what the image adds; fail over budget")
    image.add_argument("--arch", choices=sorted(ARCH_ALIASES), default="x86_64")
    image.add_argument("--model", type=Path, default=ROOT / "models" / "digits")
    image.add_argument("--budget-mb", type=float, default=IMAGE_BUDGET_MB)
    image.add_argument("--extra", action="append", default=[], help=extra_help)
    pruner = sub.add_parser("prune", help="prune an installed site-packages tree")
    pruner.add_argument("root", type=Path)
    model_pruner = sub.add_parser("prune-model", help="drop model files the runtime never reads")
    model_pruner.add_argument("folder", type=Path)
    model_pruner.add_argument("--requirements", type=Path, default=REQUIREMENTS,
                              help="where onnxruntime's pin is read")
    code = sub.add_parser("code", help="copy a function package as it ships")
    code.add_argument("package", type=Path)
    code.add_argument("dest", type=Path)
    shipped = sub.add_parser("shipped-model", help="print the model folder template.yaml ships")
    shipped.add_argument("--template", type=Path, default=TEMPLATE)
    args = parser.parse_args(argv)

    if args.command == "layer":
        size = build_layer(args.out, args.arch, args.zip, tuple(args.extra))
        print(f"layer ({args.arch}): {size / MB:.1f} MB unzipped (limit 250 MB)")
    elif args.command == "image-size":
        if not args.model.is_dir():
            parser.error(f"no model folder at {args.model}: run `onnx-lambda build-model` first")
        report = image_report(args.arch, args.model, ROOT / "handler", tuple(args.extra))
        for name, size in report.items():
            print(f"{name:>12}: {size / MB:8.1f} MB")
        status = 0
        if report["total"] > args.budget_mb * MB:
            print(f"over the {args.budget_mb:g} MB budget", file=sys.stderr)
            status = 1
        if report["total"] > LAYER_LIMIT_BYTES:  # the same tree as zip function + layer
            print("over Lambda's 250 MB limit for a zip function and its layers", file=sys.stderr)
            status = 1
        return status
    elif args.command == "prune-model":
        freed = prune_model(args.folder, pinned_version(args.requirements))
        print(f"pruned {freed / MB:.1f} MB from {args.folder}")
    elif args.command == "code":
        copy_code(args.package, args.dest)
    elif args.command == "shipped-model":
        print(shipped_model(args.template))
    else:
        print(f"pruned {prune(args.root) / MB:.1f} MB from {args.root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
