"""Every relative link of the front door and the shelf (README.md, docs/**/*.md,
benchmarks/README.md, tests/README.md) names a file that exists, so a moved page cannot
silently break another. Anchors are not checked; links inside code are not links."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", ROOT / "benchmarks" / "README.md",
                ROOT / "tests" / "README.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def relative_targets(text: str) -> list[str]:
    """The link targets of a Markdown text that point into the repository."""
    prose = CODE.sub("", FENCE.sub("", text))
    targets = (m.group(1) for m in LINK.finditer(prose))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:|#", t)]


def test_the_parser_finds_links_and_skips_code_and_urls() -> None:
    text = ("[a](x.md) ![p](img/p.png) [b](y.md#part) [u](https://e.com) [s](#here)\n"
            "`[c](code.md)`\n```\n[d](fenced.md)\n```\n")
    assert relative_targets(text) == ["x.md", "img/p.png", "y.md#part"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    missing = [target for target in relative_targets(page.read_text(encoding="utf-8"))
               if not (page.parent / target.split("#", 1)[0]).exists()]
    assert not missing, missing
