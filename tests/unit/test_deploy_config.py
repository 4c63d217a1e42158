"""``onnx-lambda deploy-config models/NAME``: template, Dockerfile, Makefile and samconfig all name
the model afterwards, with comments and every other line untouched."""

from __future__ import annotations

import difflib
import shutil
import tomllib
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

from onnx_lambda import cli
from onnx_lambda.deploy.shipped_model import (
    DOCKERFILE,
    MAKEFILE,
    SAMCONFIG,
    TEMPLATE,
    DeployConfigError,
    apply,
    model_name,
    shipped,
)
from onnx_lambda.emulator.intrinsics import parse_yaml
from tests.support import cfn

FILES = (TEMPLATE, DOCKERFILE, MAKEFILE, SAMCONFIG)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the files the step edits, and one built model folder."""
    for rel in FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(cfn.ROOT / rel, tmp_path / rel)
    (tmp_path / "models" / "detector-v2").mkdir(parents=True)
    (tmp_path / "models" / "detector-v2" / "model.json").write_text("{}")
    return tmp_path


def changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    old, new = before.splitlines(), after.splitlines()
    pairs = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new).get_opcodes():
        if tag != "equal":
            assert tag == "replace" and i2 - i1 == j2 - j1, (old[i1:i2], new[j1:j2])
            pairs += list(zip(old[i1:i2], new[j1:j2], strict=True))
    return pairs


def test_the_repository_files_agree_on_the_shipped_model() -> None:
    named = shipped(cfn.ROOT)
    assert len({model for model in named.values() if model is not None}) == 1, named
    assert None not in (named["template DockerBuildArgs"], named[DOCKERFILE], named[MAKEFILE])


def test_every_place_names_the_model_and_nothing_else_changes(project: Path) -> None:
    before = {rel: (project / rel).read_text() for rel in FILES}
    assert sorted(apply(project, "detector-v2")) == sorted(FILES)
    after = {rel: (project / rel).read_text() for rel in FILES}

    assert set(shipped(project).values()) == {"detector-v2"}
    template = parse_yaml(after[TEMPLATE])
    assert template["Parameters"]["ModelPath"]["Default"] == "models/detector-v2"
    metadata = template["Resources"]["InferenceFunction"]["Metadata"]
    assert metadata["DockerBuildArgs"] == {"MODEL": "detector-v2"}
    managed = template["Resources"]["InferenceManagedFunction"]["Metadata"]["DockerBuildArgs"]
    assert managed["MODEL"] == "detector-v2"  # the Managed Instances image ships the same model
    args = [i["value"] for i in DockerfileParser(path=str(project / DOCKERFILE)).structure
            if i["instruction"] == "ARG"]
    assert "MODEL=detector-v2" in args
    overrides = [section["parameters"].get("parameter_overrides")
                 for section in tomllib.loads(after[SAMCONFIG])["default"].values()]
    overrides = [value for value in overrides if value is not None]
    assert len(overrides) == 3
    assert all('ModelPath="models/detector-v2"' in value for value in overrides)

    # targeted edits: the same number of lines, only the value lines differ, comments intact
    assert [len(changed_lines(before[rel], after[rel])) for rel in FILES] == [3, 1, 1, 3]
    for rel in FILES:
        comments = [line for line in before[rel].splitlines() if line.lstrip().startswith("#")]
        assert comments and all(line in after[rel].splitlines() for line in comments), rel
    assert changed_lines(before[TEMPLATE], after[TEMPLATE]) == [
        ("    Default: models/digits", "    Default: models/detector-v2"),
        ("        MODEL: digits", "        MODEL: detector-v2"),
        ("        MODEL: digits", "        MODEL: detector-v2")]

    assert apply(project, "detector-v2") == []  # idempotent
    apply(project, "digits")  # and reversible, byte for byte
    for rel in (TEMPLATE, DOCKERFILE, MAKEFILE):
        assert (project / rel).read_text() == before[rel]


def test_the_edited_template_still_passes_cfn_lint(project: Path) -> None:
    from cfnlint.api import ManualArgs, lint

    apply(project, "detector-v2")
    matches = lint((project / TEMPLATE).read_text(), config=ManualArgs(regions=["us-east-1"]))
    assert [str(m) for m in matches] == []


def test_a_missing_samconfig_gets_the_deploy_section(project: Path) -> None:
    (project / SAMCONFIG).unlink()
    apply(project, "detector-v2")
    params = tomllib.loads((project / SAMCONFIG).read_text())["default"]["deploy"]["parameters"]
    assert params == {"parameter_overrides": 'ModelPath="models/detector-v2"'}


@pytest.mark.parametrize(("make", "message"), [
    (lambda root: root / "models" / "detector-v2" / "model.json", "is a file"),
    (lambda root: root / "elsewhere" / "detector-v2", "not a folder directly under"),
    (lambda root: root / "models" / "empty", "model.json missing"),
    (lambda root: root / "models" / "bad name", "use letters, digits"),
])
def test_what_cannot_ship_is_refused_with_the_fix(project: Path, make: object,
                                                  message: str) -> None:
    path = make(project)  # type: ignore[operator]
    if not path.exists():
        path.mkdir(parents=True)
        if "bad" in path.name:
            (path / "model.json").write_text("{}")
    with pytest.raises(DeployConfigError, match=message):
        model_name(project, path)


def test_a_template_it_cannot_edit_changes_no_file(project: Path) -> None:
    template = project / TEMPLATE
    template.write_text(template.read_text().replace("        MODEL: digits\n",
                                                     "        {MODEL: digits}\n", 1))
    before = {rel: (project / rel).read_text() for rel in FILES}
    with pytest.raises(DeployConfigError, match=r"DockerBuildArgs\.MODEL"):
        apply(project, "detector-v2")
    assert {rel: (project / rel).read_text() for rel in FILES} == before


def test_the_command(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = project / "models" / "detector-v2"
    assert cli.main(["deploy-config", str(model), "--root", str(project)]) == 0
    assert "models/detector-v2 is what `sam build && sam deploy` ships" in capsys.readouterr().out
    assert cli.main(["deploy-config", str(project / "models" / "nope"),
                     "--root", str(project)]) == 2
    assert "model.json missing" in capsys.readouterr().err


@pytest.mark.parametrize(("manifest", "reminded"), [
    ('{"pipeline": "text-embedding"}', True),
    ('{"pipeline": "classifier", "files": {"tokenizer.json": "x"}}', True),
    ('{"pipeline": "classifier", "pipeline_options": {"tokenizer": "tokenizer.base.json"}, '
     '"files": {"tokenizer.base.json": "x", "vocab.txt": "y"}}', True),
    ('{"pipeline": "classifier", "files": {"model.onnx": "x"}}', False),
])
def test_a_model_that_takes_text_gets_the_requirements_reminder(
        project: Path, capsys: pytest.CaptureFixture[str], manifest: str,
        reminded: bool) -> None:
    """text-embedding, or a classifier that ships its tokenizer (a text classifier)."""
    (project / "models" / "detector-v2" / "model.json").write_text(manifest)
    assert cli.main(["deploy-config", str(project / "models" / "detector-v2"),
                     "--root", str(project)]) == 0
    assert ("EXTRA_REQUIREMENTS: requirements-text.txt" in capsys.readouterr().err) is reminded
