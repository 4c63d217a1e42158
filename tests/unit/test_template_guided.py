"""`sam deploy --guided` run on template.yaml with SAM CLI's own GuidedContext: every question it
asks (click's prompt and confirm, answered with their defaults), no AWS call (the managed bucket
and the image repositories stubbed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import cfn

# What a first deploy needs: strategy, memory, auth, model; then the managed-instances subnets
# and X-Ray (both parameters only because nothing else works, see template.yaml).
ASKED = ["ColdStartStrategy", "MemorySize", "AuthMode", "ModelS3Uri",
         "CapacityProviderSubnetIds", "Tracing"]


def guided_questions(template: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from samcli.commands._utils.template import get_template_parameters
    from samcli.commands.deploy import guided_context
    from samcli.commands.deploy.guided_context import GuidedContext

    asked: list[str] = []

    def answer(text: str, default: Any = None, **_: Any) -> Any:
        asked.append(text.replace("\033[1m", "").replace("\033[0m", "").strip())
        return default if default is not None else ""

    monkeypatch.setattr(guided_context, "prompt", answer)
    monkeypatch.setattr(guided_context, "confirm", lambda text, default=None: answer(
        text, default=True))  # "... no authentication. Is this okay?" must be yes to go on
    monkeypatch.setattr(guided_context, "manage_stack", lambda **_: "managed-bucket")
    monkeypatch.setattr(guided_context, "sync_ecr_stack", lambda *_, **__: {})
    context = GuidedContext(template_file=str(template), stack_name="onnx-lambda",
                            s3_bucket=None, image_repository=None, image_repositories=None,
                            s3_prefix=None, region="us-east-1", confirm_changeset=True,
                            resolve_image_repos=True)
    context.guided_prompts(get_template_parameters(str(template)))  # as GuidedContext.run does
    return asked


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # samtranslator's jsonschema use
def test_guided_deploy_asks_only_the_first_deploy_parameters(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked = guided_questions(cfn.TEMPLATE, monkeypatch)
    parameters = [q.removeprefix("Parameter ") for q in asked if q.startswith("Parameter ")]
    assert parameters == ASKED
    # SAM CLI's own questions besides, the same for any template of this shape
    assert [q for q in asked if not q.startswith("Parameter ")] == [
        "Stack Name", "AWS Region", "Confirm changes before deploy",
        "Allow SAM CLI IAM role creation", "Disable rollback",
        "Save arguments to configuration file", "SAM configuration file",
        "SAM configuration environment"]


def test_samconfig_overrides_name_only_template_parameters() -> None:
    """A saved override of a name the template lacks fails every `sam deploy`."""
    import shlex
    import tomllib

    config = tomllib.loads((cfn.ROOT / "samconfig.toml").read_text())["default"]
    overrides = [tables["parameters"]["parameter_overrides"] for tables in config.values()
                 if "parameter_overrides" in tables.get("parameters", {})]
    names = {item.partition("=")[0] for value in overrides for item in shlex.split(value)}
    assert overrides and names <= set(cfn.load()["Parameters"])
