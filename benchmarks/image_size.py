"""What each approach adds to the deployment image: its Python dependencies (the installed
distributions of its requirements, with their dependencies) plus the model, and for ours the
``handler/`` package. Sizes are what pip installs in this environment, before any pruning
(ours is pruned further at image build: ``layers/build_layer.py``); the base image is the same
for every approach and is left out."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

from benchmarks.targets import ALWAYS_ON, FLOOR
from onnx_lambda.source_tree import root


def requirements() -> dict[str, list[str]]:
    """Requirements of each approach (the baselines' imports): the runtime pin of
    ``layers/requirements.txt`` plus what each one adds."""
    runtime = [line.split("#")[0].strip() for line in
               (root() / "layers" / "requirements.txt").read_text().splitlines()
               if line.split("#")[0].strip()]
    return {FLOOR: runtime, "onnx-lambda": runtime,
            "naive handler": [*runtime, "boto3", "aws-lambda-powertools[tracer]"],
            "FastAPI + Mangum": [*runtime, "fastapi", "mangum"],
            ALWAYS_ON: [*runtime, "fastapi", "uvicorn"]}


OWN_CODE = ("handler",)  # ours ships these folders of the checkout besides its dependencies
NO_DEPS = {"onnx-lambda"}  # handler/Dockerfile installs layers/requirements.txt with --no-deps


def _name(requirement: str) -> tuple[str, set[str]]:
    from packaging.requirements import Requirement

    parsed = Requirement(requirement)
    return parsed.name, set(parsed.extras)


def closure(requirements: list[str], *, deps: bool = True) -> dict[str, metadata.Distribution]:
    """Installed distributions needed by ``requirements`` (markers evaluated here); only
    the named ones when ``deps`` is false."""
    from packaging.requirements import Requirement

    found: dict[str, metadata.Distribution] = {}
    pending = [_name(r) for r in requirements]
    while pending:
        name, extras = pending.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in found and not extras:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        found[key] = dist
        for raw in (dist.requires or []) if deps else []:
            req = Requirement(raw)
            envs = [{"extra": e} for e in extras] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                pending.append((req.name, set(req.extras)))
    return found


def dist_bytes(dist: metadata.Distribution) -> int:
    total = 0
    for file in dist.files or []:
        path = Path(str(dist.locate_file(file)))
        if path.is_file():
            total += path.stat().st_size
    return total


def tree_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts)


def measure(model: Path, portable: Path) -> dict[str, dict[str, float]]:
    """MB per approach: ``dependencies``, ``code``, ``model``, ``total``, ``packages``. Ours
    ships the model folder (``model``: artifact + manifest); the baselines the portable file."""
    out = {}
    for approach, needs in requirements().items():
        dists = closure(needs, deps=approach not in NO_DEPS)
        deps = sum(dist_bytes(d) for d in dists.values()) / 1e6
        ours = approach == "onnx-lambda"
        code = sum(tree_bytes(root() / p) for p in OWN_CODE) / 1e6 if ours else 0.0
        model_mb = tree_bytes(model if ours else portable) / 1e6
        out[approach] = {"dependencies": deps, "code": code, "model": model_mb,
                         "total": deps + code + model_mb, "packages": float(len(dists))}
    return out
