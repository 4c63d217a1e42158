"""The unit tier: no network, no subprocess (tests/README.md), enforced for every test here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import tier_guard


@pytest.fixture(autouse=True)
def unit_tier(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    with tier_guard.guard(monkeypatch) as attempts:
        yield attempts
    tier_guard.check(attempts)
