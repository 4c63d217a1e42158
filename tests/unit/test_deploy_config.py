"""``onnx-lambda deploy-config models/NAME``: the model's one home (template.yaml's Mappings Model)
changes, one line, comments and every other line untouched; every consumer reads that home."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from onnx_lambda import cli
from onnx_lambda.deploy.shipped_model import (
    SHIPPED,
    TEMPLATE,
    DeployConfigError,
    apply,
    model_name,
    shipped,
)
from onnx_lambda.emulator.intrinsics import parse_yaml
from tests.support import cfn
from tests.support.layer import build_layer

FIND_IN_MAP = {"Fn::FindInMap": list(SHIPPED[1:])}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the template, and one built model folder."""
    shutil.copy(cfn.TEMPLATE, tmp_path / TEMPLATE)
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


def test_every_consumer_reads_the_one_home() -> None:
    template = cfn.load()
    resources = template["Resources"]
    for function in ("InferenceFunction", "InferenceManagedFunction"):
        assert resources[function]["Metadata"]["DockerBuildArgs"]["MODEL"] == FIND_IN_MAP
    for function in ("InferenceFunction", "InferenceZipFunction", "InferenceManagedFunction"):
        variables = resources[function]["Properties"]["Environment"]["Variables"]
        assert variables["ONNX_LAMBDA_MODEL"] == {
            "Fn::If": ["HasModelS3Uri", {"Ref": "ModelS3Uri"}, FIND_IN_MAP]}
    # nobody else names a model: no default in the Dockerfile or the Makefile, none in samconfig
    dockerfile = (cfn.ROOT / "handler" / "Dockerfile").read_text()
    assert "\nARG MODEL\n" in dockerfile and "ARG MODEL=" not in dockerfile
    makefile = (cfn.ROOT / "layers" / "Makefile").read_text()
    assert "\nMODEL := $(shell $(PYTHON) layers/build_layer.py shipped-model)\n" in makefile
    assert "digits" not in (cfn.ROOT / "samconfig.toml").read_text()
    assert build_layer.shipped_model() == shipped(cfn.ROOT) == "models/digits"


# samtranslator's own validator (which SAM CLI runs) warns about jsonschema's RefResolver
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_sam_cli_resolves_the_image_build_argument_from_the_mapping(project: Path) -> None:
    """What `sam build` hands to `docker build`: the functions' Metadata as SAM CLI's providers
    resolve it (Fn::FindInMap included), after a deploy-config."""
    from samcli.lib.providers.sam_function_provider import SamFunctionProvider
    from samcli.lib.providers.sam_stack_provider import SamLocalStackProvider

    apply(project, "detector-v2")
    overrides = {"ColdStartStrategy": "managed-instances",
                 "CapacityProviderSubnetIds": "subnet-0a1"}
    for strategy, function in (({}, "InferenceFunction"), (overrides, "InferenceManagedFunction")):
        stacks, _ = SamLocalStackProvider.get_stacks(str(project / TEMPLATE),
                                                     parameter_overrides=strategy)
        metadata = SamFunctionProvider(stacks).get(function).metadata
        assert metadata["DockerBuildArgs"]["MODEL"] == "models/detector-v2"


def test_the_model_is_one_line_and_nothing_else_changes(project: Path) -> None:
    before = (project / TEMPLATE).read_text()
    assert apply(project, "detector-v2") == [TEMPLATE]
    after = (project / TEMPLATE).read_text()
    assert changed_lines(before, after) == [("      Path: models/digits",
                                             "      Path: models/detector-v2")]
    assert shipped(project) == "models/detector-v2"
    assert build_layer.shipped_model(project / TEMPLATE) == "models/detector-v2"
    assert apply(project, "detector-v2") == []  # idempotent
    apply(project, "digits")  # and reversible, byte for byte
    assert (project / TEMPLATE).read_text() == before


def test_the_edited_template_still_passes_cfn_lint(project: Path) -> None:
    from cfnlint.api import ManualArgs, lint

    apply(project, "detector-v2")
    matches = lint((project / TEMPLATE).read_text(), config=ManualArgs(regions=["us-east-1"]))
    assert [str(m) for m in matches] == []


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


def test_a_template_it_cannot_edit_is_left_as_it_was(project: Path) -> None:
    template = project / TEMPLATE
    template.write_text(template.read_text().replace("      Path: models/digits\n",
                                                     "      Path: [models/digits]\n", 1))
    before = template.read_text()
    with pytest.raises(DeployConfigError, match=r"Mappings\.Model\.Shipped\.Path"):
        apply(project, "detector-v2")
    assert template.read_text() == before
    with pytest.raises(SystemExit, match="deploy-config"):  # and the zip build says so too
        build_layer.shipped_model(template)


def test_the_command(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = project / "models" / "detector-v2"
    assert cli.main(["deploy-config", str(model), "--root", str(project)]) == 0
    assert "models/detector-v2 is what `sam build && sam deploy` ships" in capsys.readouterr().out
    assert parse_yaml((project / TEMPLATE).read_text())["Mappings"]["Model"] == {
        "Shipped": {"Path": "models/detector-v2"}}
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
