"""The committed event fixtures are exactly what ``sam local generate-event`` produces."""

from __future__ import annotations

import json

from tests.conftest import EVENTS
from tests.events.generate import generate


def test_fixtures_are_current_sam_output() -> None:
    for name, event in generate().items():
        assert json.loads((EVENTS / name).read_text()) == event, name
