"""The README, the tutorials and the how-to guides, run as a reader runs them: every shell and
Python block of a page, in page order, in one terminal of a fresh copy of the checkout
(``tests/support/doc_blocks.py`` says how blocks are marked: servers in the background and
stopped, deploy-only and not-here blocks checked for syntax).

The README and the tutorials start in a plain shell (nothing of the venv on ``PATH``: the page
itself must activate it); a how-to guide starts with the venv active, as its first lines say.
Each page gets its own copy (pages edit the template, build into ``models/``), with
``models/digits`` and ``models/tiny-chat`` built once for the whole run and copied in; the
venv is the suite's own (``ONNX_LAMBDA_NO_INSTALL=1``: a script that would install fails
instead of touching it). A failure names the page and the line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from onnx_lambda.source_tree import root
from tests.support.doc_blocks import Block, DocError, Reader, blocks

ROOT = root()
PAGES = ["README.md",
         *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "tutorial").glob("*.md")),
         *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "how-to").glob("*.md"))]
SHARED_MODELS = ("digits", "tiny-chat")
ACTIVATE = "source .venv/bin/activate"


def _marks(page: str) -> list[pytest.MarkDecorator]:
    return [pytest.mark.slow] if any(b.slow for b in blocks(ROOT / page, page)) else []


@pytest.fixture(scope="session")
def built_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``models/digits`` and ``models/tiny-chat``, built once (the pages that build them again
    pay seconds)."""
    from onnx_lambda.cli import main

    folder = tmp_path_factory.mktemp("doc-models")
    for name in SHARED_MODELS:
        assert main(["build-model", name, "-o", str(folder / name)]) == 0
    return folder


def _fresh_copy(target: Path, models: Path) -> Path:
    """The checkout's files (tracked and untracked, not ignored) as a clone would have them,
    the suite's venv, and the shared models."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    (target / ".venv").symlink_to((ROOT / ".venv").resolve())
    for name in SHARED_MODELS:
        shutil.copytree(models / name, target / "models" / name)
    return target


def _plain_shell(checkout: Path, scratch: Path) -> dict[str, str]:
    """A new terminal's environment: the venv off ``PATH``; the copy's code first on
    ``PYTHONPATH`` (the suite's venv has the original checkout installed); ``curl`` failing on
    an HTTP error status (``--fail-with-body``: the page's curl would exit 0 on a 400)."""
    venv = str((ROOT / ".venv").resolve())
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and not p.startswith((venv, str(ROOT / ".venv")))]
    curl = shutil.which("curl", path=os.pathsep.join(path))
    assert curl is not None, "the docs' examples need curl"
    strict = scratch / "bin"
    strict.mkdir()
    (strict / "curl").write_text(f'#!/bin/sh\nexec {curl} --fail-with-body "$@"\n')
    (strict / "curl").chmod(0o755)
    path.insert(0, str(strict))
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONHOME") and not k.startswith("PYTEST_")}
    (scratch / "tmp").mkdir()
    return {**env, "PATH": os.pathsep.join(path), "PYTHONPATH": str(checkout),
            "ONNX_LAMBDA_NO_INSTALL": "1", "HF_HUB_OFFLINE": "1", "TMPDIR": str(scratch / "tmp"),
            "SAM_CLI_TELEMETRY": "0"}


@pytest.fixture
def reader(tmp_path: Path, built_models: Path) -> Iterator[Reader]:
    checkout = _fresh_copy(tmp_path / "clone", built_models)
    scratch = tmp_path / "reader"
    scratch.mkdir()
    terminal = Reader(checkout, _plain_shell(checkout, scratch), scratch)
    try:
        yield terminal
    finally:
        terminal.stop()


@pytest.mark.parametrize("page", [pytest.param(p, marks=_marks(p)) for p in PAGES])
def test_page_runs_as_written(page: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    found = blocks(ROOT / page, page)
    if all(b.syntax_only for b in found):  # nothing runs: no copy of the checkout needed
        for block in found:
            Reader(tmp_path, dict(os.environ), tmp_path).run(block)
        return
    reader: Reader = request.getfixturevalue("reader")
    if page.startswith("docs/how-to/"):
        text = (ROOT / page).read_text()
        assert ACTIVATE in text, f"{page}: runs commands but never says `{ACTIVATE}`"
        reader.run(Block(page, 1, "bash", ACTIVATE + "\n"))
    for block in found:
        reader.run(block)
    reader.stop()
    print("\n".join(f"{where}: {seconds:.1f} s" for where, seconds in reader.timings))


def test_blocks_name_their_page_and_line(tmp_path: Path) -> None:
    """A failing block is reported at its page's line; unknown marks are refused."""
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```bash\ntrue\nfalse\necho never\n```\n\n```bash deploy\n"
                    "sam deploy --guided\n```\n\n```python\nx = 1\nraise SystemExit(x)\n```\n")
    found = blocks(page, "page.md")
    assert [(b.line, b.syntax_only) for b in found] == [(3, ""), (9, "deploy"), (13, "")]
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    terminal = Reader(tmp_path, env, tmp_path)
    with pytest.raises(DocError, match=r"^page\.md:5: exit status 1"):
        terminal.run(found[0])
    terminal.run(found[1])  # syntax only: sam never runs
    with pytest.raises(DocError, match=r"^page\.md:13: exit status 1"):
        terminal.run(found[2])
    page.write_text("```bash servre\n./scripts/run\n```\n")
    with pytest.raises(ValueError, match=r"page\.md:1: unknown block mark"):
        blocks(page, "page.md")
