"""The execution provider chosen at init, on the CPU-only onnxruntime wheel of the dev venv (no
GPU here): the C-API slots it binds, auto → CPU with its reason, forced CUDA → a clear init error,
the choice in ``/health``."""

from __future__ import annotations

import json
import os
from ctypes import byref, c_void_p
from pathlib import Path
from typing import Any

import pytest

from handler.errors import ModelLoadError
from handler.ort import capi, providers
from tests.conftest import EVENTS, Context
from tests.functional.test_init import make_folder, service_for

SLOTS = Path(__file__).parents[1] / "support" / "ort_api_v13_slots.txt"


def test_every_bound_slot_matches_the_header() -> None:
    names = [line.strip() for line in SLOTS.read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert len(names) == len(set(names))
    for name, (index, _, _) in capi._FUNCTIONS.items():
        assert names[index] == name, (name, index)


def test_the_cpu_wheel_offers_no_cuda() -> None:
    offered = providers.available(capi.api())
    assert "CPUExecutionProvider" in offered and providers.CUDA_PROVIDER not in offered


def test_cuda_options_fail_cleanly_on_a_cpu_build() -> None:
    api = capi.api()
    options = c_void_p()
    api.check(api.CreateSessionOptions(byref(options)))
    try:
        with pytest.raises(capi.OrtError, match="CUDA execution provider is not enabled"):
            providers.append_cuda(api, options)
    finally:
        api.ReleaseSessionOptions(options)


@pytest.fixture
def device(tmp_path: Path) -> str:
    node = tmp_path / "nvidia0"  # stands in for /dev/nvidia0: only its existence is read
    node.touch()
    return str(node)


def test_auto_without_a_device_is_cpu_and_asks_no_library(tmp_path: Path) -> None:
    class NoCalls:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"the CPU path called {name}")

    choice = providers.choose("auto", env={}, manifest_allows=True, api=NoCalls(),  # type: ignore[arg-type]
                              node=str(tmp_path / "absent"))
    assert choice == providers.Choice("cpu", choice.reason) and "no GPU device" in choice.reason


def test_auto_with_a_device_but_the_cpu_library_is_cpu(device: str) -> None:
    choice = providers.choose("auto", env={}, manifest_allows=True, node=device)
    assert choice.provider == "cpu" and "not CUDAExecutionProvider" in choice.reason


def test_hidden_devices_and_the_manifest_each_rule_cuda_out(device: str) -> None:
    hidden = providers.choose("auto", env={"CUDA_VISIBLE_DEVICES": "-1"}, manifest_allows=True,
                              node=device)
    assert "no GPU device" in hidden.reason
    manifest = providers.choose("auto", env={}, manifest_allows=False, node=device)
    assert manifest.provider == "cpu" and "not GPU-suitable" in manifest.reason


def test_forced_cuda_without_it_is_an_error_naming_the_cause(device: str) -> None:
    with pytest.raises(providers.ProviderError, match="=cuda, but this onnxruntime offers"):
        providers.choose("cuda", env={}, manifest_allows=True, node=device)
    assert providers.choose("cpu", env={}, manifest_allows=True, node=device).provider == "cpu"


def test_forced_cuda_fails_the_init(tmp_path: Path, model_dir: Path) -> None:
    with pytest.raises(ModelLoadError, match="ONNX_LAMBDA_EXECUTION_PROVIDER=cuda, but"):
        service_for(make_folder(tmp_path, model_dir), execution_provider="cuda")


@pytest.mark.skipif(os.path.exists(providers.DEVICE_NODE), reason="a GPU is visible here")
def test_health_shows_the_provider_and_why(tmp_path: Path, model_dir: Path) -> None:
    service = service_for(make_folder(tmp_path, model_dir, gpu={"suitable": True}))
    event = json.loads((EVENTS / "http-api-health.json").read_text())
    body = json.loads(service(event, Context())["body"])
    assert body["executionProvider"] == "cpu"
    assert "no GPU device visible" in body["executionProviderReason"]
