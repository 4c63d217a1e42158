"""handler/Dockerfile's shell: RUNTIME_REQUIREMENTS (the ARG's default, or the GPU file) and
EXTRA_REQUIREMENTS expand, in a real `sh`, to one `-r` per file; MODEL must name models/NAME."""

from __future__ import annotations

import subprocess

import pytest
from dockerfile_parse import DockerfileParser

from tests.support import cfn
from tests.unit.test_dockerfile import DOCKERFILE, instructions, model_guard, stages

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("runtime", [None, "requirements-gpu.txt"])
@pytest.mark.parametrize(("extra", "files"), [
    ("", []),
    ("requirements-text.txt", ["requirements-text.txt"]),
    ("requirements-text.txt requirements-numpy.txt",
     ["requirements-text.txt", "requirements-numpy.txt"]),
])
def test_extra_requirements_expand_to_one_requirements_file_each(
        extra: str, files: list[str], runtime: str | None) -> None:
    parsed = DockerfileParser(path=str(DOCKERFILE))
    (default,) = [v for v in instructions(parsed, "ARG") if v.startswith("RUNTIME_REQUIREMENTS=")]
    runtime = runtime or default.partition("=")[2]  # the ARG's default, as docker build applies it
    run = next(i["value"] for i in stages(parsed)[0] if i["instruction"] == "RUN")
    pip_line = run.split("&&")[0].replace("pip install", "printf '%s\\n'", 1)
    env = {"EXTRA_REQUIREMENTS": extra, "RUNTIME_REQUIREMENTS": runtime}
    shown = subprocess.run(["sh", "-c", pip_line], env=env, capture_output=True, text=True,
                           check=True).stdout.split()
    requirement_files = [shown[i + 1] for i, arg in enumerate(shown) if arg == "-r"]
    assert requirement_files == [f"/build/{runtime}", *(f"/build/{f}" for f in files)]
    for name in [runtime, *files]:
        assert (cfn.ROOT / "layers" / name).is_file()


@pytest.mark.parametrize(("model", "refused"), [
    ("models/digits", False), ("", True), ("models/", True), ("digits", True), (".", True)])
def test_a_model_build_arg_other_than_a_model_folder_stops_the_build(model: str,
                                                                      refused: bool) -> None:
    guard = model_guard(DockerfileParser(path=str(DOCKERFILE)))
    result = subprocess.run(["sh", "-c", guard], env={"MODEL": model}, capture_output=True,
                            text=True)
    assert (result.returncode != 0) is refused
    assert ("MODEL=models/NAME is required" in result.stderr) is refused
