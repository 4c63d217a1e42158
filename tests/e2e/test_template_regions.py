"""The multi-region and GPU templates as a user checks them: ``cfn-lint`` and
``sam validate --lint`` on global.yaml, and ``cfn-lint`` on template.yaml with the GPU variant
and the custom domain set (the one rule silenced for the GPU function, E3002 for
AcceleratorConfig, is silenced on that resource only: another resource's unknown property
still fails)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.e2e.test_template_cli import BIN, ROOT, run

pytestmark = pytest.mark.e2e


def test_global_template_lints_and_validates() -> None:
    result = run(str(BIN / "cfn-lint"), "global.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    result = run(str(BIN / "sam"), "validate", "--lint", "--template", "global.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is a valid SAM Template" in result.stdout + result.stderr


def edited(folder: Path, replacements: dict[str, str]) -> Path:
    text = (ROOT / "template.yaml").read_text()
    for old, new in replacements.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = folder / "template.yaml"
    path.write_text(text)
    for package in ("handler", "warmer"):
        (folder / package).symlink_to(ROOT / package, target_is_directory=True)
    shutil.copy(ROOT / "global.yaml", folder / "global.yaml")
    return path


GPU_AND_DOMAIN = {
    "      Accelerator: 0 ": "      Accelerator: 24 ",
    '      CustomDomainName: ""': "      CustomDomainName: api.example.com",
    '      HostedZoneId: ""': "      HostedZoneId: Z0123456789ABC",
}


def test_gpu_variant_and_custom_domain_lint(tmp_path: Path) -> None:
    template = edited(tmp_path, GPU_AND_DOMAIN)
    result = run(str(BIN / "cfn-lint"), str(template), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    # the silenced rule is the GPU function's alone: an unknown property elsewhere still fails
    other = tmp_path / "other"
    other.mkdir()
    leaked = edited(other, {**GPU_AND_DOMAIN, "          SecurityPolicy: TLS_1_2":
                            "          SecurityPolicy: TLS_1_2\n          NoSuchProperty: 1"})
    result = run(str(BIN / "cfn-lint"), str(leaked), cwd=other)
    assert result.returncode != 0 and "E3002" in result.stdout, result.stdout
