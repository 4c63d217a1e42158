"""The unit tier: no network, no subprocess (tests/README.md), enforced for every test here."""

from __future__ import annotations

from collections.abc import Generator, Iterator

import pytest

# urllib3 binds a socket to ::1 once, at import, to learn whether IPv6 works (its HAS_IPV6):
# imported here, before any guard is armed, so that a unit test that imports boto3 or
# samtranslator (which bring urllib3) alone is not charged with that probe.
import urllib3  # noqa: F401

from tests.support import tier_guard

CALL_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, pytest.TestReport, None]:
    report = (yield).get_result()
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed


@pytest.fixture(autouse=True)
def unit_tier(monkeypatch: pytest.MonkeyPatch,
              request: pytest.FixtureRequest) -> Iterator[list[str]]:
    with tier_guard.guard(monkeypatch) as attempts:
        yield attempts
    if not request.node.stash.get(CALL_FAILED, False):  # a failed call has said it already
        tier_guard.check(attempts)
