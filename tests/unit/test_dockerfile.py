"""handler/Dockerfile, parsed (dockerfile-parse), against the template and the requirements."""

from __future__ import annotations

import fnmatch
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from dockerfile_parse import DockerfileParser

from tests.support import cfn
from tests.support.layer import build_layer

DOCKERFILE = cfn.ROOT / "handler" / "Dockerfile"


@pytest.fixture(scope="module")
def parsed() -> DockerfileParser:
    return DockerfileParser(path=str(DOCKERFILE))


def instructions(parsed: DockerfileParser, name: str) -> list[str]:
    return [i["value"] for i in parsed.structure if i["instruction"] == name]


def stages(parsed: DockerfileParser) -> list[list[dict[str, Any]]]:
    result: list[list[dict[str, Any]]] = []
    for item in parsed.structure:
        if item["instruction"] == "FROM":
            result.append([])
        if result:
            result[-1].append(item)
    return result


def test_every_stage_is_the_aws_lambda_python_312_base_image(parsed: DockerfileParser) -> None:
    assert parsed.parent_images == ["public.ecr.aws/lambda/python:3.12"] * 2
    assert len(stages(parsed)) == 2  # dependencies built apart, copied without pip or caches


def test_dependencies_come_from_the_layer_requirements_only(parsed: DockerfileParser) -> None:
    deps = stages(parsed)[0]
    copies = [shlex.split(i["value"]) for i in deps if i["instruction"] == "COPY"]
    assert ["layers/requirements.txt", "layers/requirements-gpu.txt",
            "layers/requirements-text.txt", "layers/requirements-numpy.txt",
            "layers/requirements-tracing.txt", "layers/build_layer.py", "/build/"] in copies
    run = next(i["value"] for i in deps if i["instruction"] == "RUN")
    steps = [shlex.split(step) for step in run.split("&&")]
    pip = next(step for step in steps if step[:2] == ["pip", "install"])
    assert pip[pip.index("-r") + 1] == "/build/${RUNTIME_REQUIREMENTS}"
    assert "RUNTIME_REQUIREMENTS=requirements.txt" in [i["value"] for i in deps
                                                       if i["instruction"] == "ARG"]
    assert {"--no-cache-dir", "--no-deps", "--only-binary=:all:"} <= set(pip)
    # a pipeline's extra requirements only when asked for (shell expansion of the build arg)
    assert any(i["instruction"] == "ARG" and i["value"] == "EXTRA_REQUIREMENTS=" for i in deps)
    assert ["python", "/build/build_layer.py", "prune", "/deps"] in steps
    assert any(step[:3] == ["python", "-m", "compileall"] for step in steps)


def test_only_the_manifests_chosen_model_file_reaches_the_image(
        parsed: DockerfileParser) -> None:
    deps, final = stages(parsed)
    assert ["${MODEL}/", "/model/"] in [shlex.split(i["value"]) for i in deps
                                        if i["instruction"] == "COPY"]
    runs = [shlex.split(i["value"]) for i in deps if i["instruction"] == "RUN"]
    assert ["python", "/build/build_layer.py", "prune-model", "/model",
            "--requirements", "/build/${RUNTIME_REQUIREMENTS}"] in runs
    # the final stage takes the pruned folder, never the build context's models/ (both files)
    copies = [shlex.split(i["value"]) for i in final if i["instruction"] == "COPY"]
    assert ["--from=deps", "/model/", "${LAMBDA_TASK_ROOT}/${MODEL}/"] in copies
    assert not any(args[0].startswith("models/") for args in copies)


def test_final_stage_copies_code_and_model_and_runs_the_handler(parsed: DockerfileParser) -> None:
    final = stages(parsed)[1]
    copies = [shlex.split(i["value"]) for i in final if i["instruction"] == "COPY"]
    assert ["--from=deps", "/deps", "${LAMBDA_TASK_ROOT}"] in copies
    assert ["handler/", "${LAMBDA_TASK_ROOT}/handler/"] in copies
    runs = [i["value"] for i in final if i["instruction"] == "RUN"]
    # the bytecode, then handler.bundle's one file of it, from the task root (what app reads)
    assert any("compileall" in run and run.index("compileall") < run.find(
        "cd ${LAMBDA_TASK_ROOT} && python -m handler.bundle") for run in runs), runs
    assert json.loads(instructions(parsed, "CMD")[-1]) == ["handler.app.handler"]
    # MODEL has no default (template.yaml is its one home) and both stages import it
    assert all("ARG" in [i["instruction"] for i in stage if i["value"] == "MODEL"]
               for stage in stages(parsed))
    assert not [v for v in instructions(parsed, "ARG") if v.startswith("MODEL=")]
    assert instructions(parsed, "ENV") == ["ONNX_LAMBDA_MODEL=${MODEL}"]


def test_the_image_runs_the_templates_command(parsed: DockerfileParser) -> None:
    source = cfn.load()
    command = source["Resources"]["InferenceFunction"]["Properties"]["ImageConfig"]["Command"]
    assert command == json.loads(instructions(parsed, "CMD")[-1])


def model_guard(parsed: DockerfileParser) -> str:
    """The deps stage's check of MODEL, which must run before its ``COPY ${MODEL}/``: an empty
    MODEL would copy the whole build context (tests/e2e/test_dockerfile_shell.py runs it)."""
    deps = stages(parsed)[0]
    kinds = [(i["instruction"], i["value"]) for i in deps if i["instruction"] in ("RUN", "COPY")]
    guard = next(k for k, (_, value) in enumerate(kinds) if "MODEL=models/NAME" in value)
    assert guard < kinds.index(("COPY", "${MODEL}/ /model/"))
    return kinds[guard][1]


def test_the_model_build_arg_is_checked_before_it_is_copied(parsed: DockerfileParser) -> None:
    assert "$MODEL" in model_guard(parsed)


def test_dockerignore_lets_every_copied_source_into_the_context(
        parsed: DockerfileParser) -> None:
    patterns = [line for line in (cfn.ROOT / ".dockerignore").read_text().splitlines()
                if line and not line.startswith("#")]

    def included(path: str) -> bool:
        verdict = True
        for pattern in patterns:
            negated = pattern.startswith("!")
            body = pattern.lstrip("!").rstrip("/")
            if fnmatch.fnmatch(path, body) or path.startswith(body + "/"):
                verdict = negated
        return verdict

    from_context = [shlex.split(v) for v in instructions(parsed, "COPY")
                    if not v.startswith("--from")]
    sources = [source for args in from_context for source in args[:-1]]
    for source in sources:
        path = source.replace("${MODEL}", "models/digits").rstrip("/")
        assert included(path), f"{source} is excluded by .dockerignore"
    assert not included(".venv") and not included("tests") and not included("warmer")
    # the image's COPY of handler/ ships what `build_layer.py code` ships: no build file
    assert not any(included(f"handler/{name}") for name in build_layer.NOT_SHIPPED_CODE)


def test_requirements_are_pinned_and_feed_pyproject() -> None:
    for name in ("requirements.txt", "requirements-numpy.txt", "requirements-text.txt"):
        lines = [line.strip() for line in (cfn.ROOT / "layers" / name).read_text()
                 .splitlines() if line.strip() and not line.startswith("#")]
        assert lines and all("==" in line for line in lines)
    # the tooling installs the runtime pin plus numpy (which the handler no longer needs)
    assert ('file = ["layers/requirements.txt", "layers/requirements-numpy.txt"]'
            in Path(cfn.ROOT / "pyproject.toml").read_text())


def test_the_gpu_recipe_is_onnxruntime_gpu_with_cuda_from_pypi_wheels(
        parsed: DockerfileParser) -> None:
    """RUNTIME_REQUIREMENTS=requirements-gpu.txt: onnxruntime-gpu pinned, the CUDA 13 / cuDNN 9
    libraries its ``cuda``/``cudnn`` extras name (NVIDIA's wheels), nothing downloaded from
    elsewhere, and their libraries moved onto the base image's LD_LIBRARY_PATH."""
    lines = [line.split("#")[0].strip() for line in
             (cfn.ROOT / "layers" / "requirements-gpu.txt").read_text().splitlines()]
    names = {line.partition("=")[0].partition("~")[0] for line in lines if line}
    assert "onnxruntime-gpu==1.31.1" in lines
    assert {"nvidia-cuda-runtime", "nvidia-cudnn-cu13", "nvidia-cuda-nvrtc"} <= names
    assert all(name.startswith(("onnxruntime-gpu", "nvidia-", "yyjson")) for name in names)
    assert not any("cu12" in name for name in names)  # 1.31.1's extras want CUDA 13
    run = next(i["value"] for i in stages(parsed)[0] if i["instruction"] == "RUN")
    assert "curl" not in run and "wget" not in run
    assert "find /deps/nvidia -name 'lib*.so*' -exec mv -t /deps/lib" in run
    assert "${LAMBDA_TASK_ROOT}/lib" in DOCKERFILE.read_text()  # why /deps/lib: the loader path
