"""The committed events (events/, one home for `sam local invoke -e` and the tests) are exactly
what events/generate.py makes from ``sam local generate-event``: they cannot drift."""

from __future__ import annotations

from tests.conftest import EVENTS
from tests.support.scripts import load


def test_committed_events_are_the_generators_output() -> None:
    generate = load(EVENTS / "generate.py")
    assert generate.stale(generate.generate()) == []
