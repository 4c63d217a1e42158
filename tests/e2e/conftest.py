"""Every test in this tier carries the ``e2e`` marker (``-m "not e2e"`` deselects the tier)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import emulator_support

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def _close_lambda_clients() -> Iterator[None]:
    """The boto3 Lambda clients a test made (``emulator_support.lambda_client``) are closed."""
    made = len(emulator_support.CLIENTS)
    yield
    emulator_support.close_clients(made)
