"""``Served``: what init built, as every route sees it (never the whole ``Service``)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from handler.environment import EnvironmentState
    from handler.model import Model
    from handler.pipelines import Pipeline
    from handler.settings import Settings
    from handler.telemetry import Telemetry


class Served:
    """The model, its pipeline, the settings, telemetry and the environment's state, with the
    model's public name and what it can serve (``Pipeline.capabilities``, read once here)."""

    __slots__ = ("capabilities", "model", "name", "pipeline", "settings", "state", "telemetry")

    def __init__(self, settings: Settings, model: Model, pipeline: Pipeline,
                 telemetry: Telemetry, state: EnvironmentState) -> None:
        self.settings, self.model, self.pipeline = settings, model, pipeline
        self.telemetry, self.state = telemetry, state
        self.name: str = model.name
        self.capabilities: frozenset[str] = pipeline.capabilities
