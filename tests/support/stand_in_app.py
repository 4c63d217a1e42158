"""``handler.app`` with its pipeline swapped for the stand-in generator
(``tests.support.stand_in_generator``): the real handler, init and event sources behind the
OpenAI generation routes before a decoder model exists. The e2e tests point the emulator's
function at ``tests.support.stand_in_app.handler``; with a real decoder they run
``handler.app.handler`` on it instead (one fixture)."""

from __future__ import annotations

from handler import app
from tests.support.stand_in_generator import StandInGenerator

app.SERVICE.pipeline = StandInGenerator(context_length=64, eos_after=8)  # type: ignore[assignment]
handler = app.handler
