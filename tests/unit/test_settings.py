from __future__ import annotations

import pytest

from handler.model import threads_for
from handler.settings import LAMBDA_MAX_SYNC_PAYLOAD, VARIABLES, Settings


def test_defaults_need_no_environment() -> None:
    settings = Settings.from_env({})
    assert settings.model == "models/digits"
    assert settings.max_payload_bytes == LAMBDA_MAX_SYNC_PAYLOAD
    assert settings.cache_size == 0 and settings.warmup is True
    assert settings.memory_mb is None and settings.initialization_type == "on-demand"


def test_explicit_beats_environment_beats_default() -> None:
    env = {"ONNX_LAMBDA_THREADS": "3", "ONNX_LAMBDA_WARMUP": "off"}
    assert Settings.from_env(env).threads == 3
    assert Settings.from_env(env, threads=1).threads == 1
    assert Settings.from_env(env).warmup is False


def test_lambda_variables_are_read() -> None:
    settings = Settings.from_env({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "3008",
                                  "AWS_LAMBDA_INITIALIZATION_TYPE": "provisioned-concurrency",
                                  "AWS_LAMBDA_FUNCTION_NAME": "fn"})
    assert (settings.memory_mb, settings.initialization_type, settings.function_name) == \
        (3008, "provisioned-concurrency", "fn")


@pytest.mark.parametrize(("name", "value"), [
    ("ONNX_LAMBDA_WARMUP", "maybe"), ("ONNX_LAMBDA_CACHE_SIZE", "-1"),
    ("ONNX_LAMBDA_LOG_LEVEL", "loud"), ("ONNX_LAMBDA_GRAPH_OPTIMIZATION", "max"),
])
def test_bad_values_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name):
        Settings.from_env({name: value})


def test_unknown_explicit_setting_is_rejected() -> None:
    with pytest.raises(TypeError, match="unknown settings: colour"):
        Settings.from_env({}, colour="red")


def test_every_variable_is_documented_in_the_configuration_reference() -> None:
    from onnx_lambda.source_tree import root

    table = (root() / "docs" / "reference" / "configuration.md").read_text()
    for var in VARIABLES:
        assert f"`{var.env_name}`" in table, var.env_name


@pytest.mark.parametrize(("memory", "cpus", "threads"), [
    (None, 2, 2), (128, 2, 1), (1769, 2, 1), (3008, 2, 2), (3538, 8, 2), (10240, 8, 6),
    (10240, 2, 2), (5307, 8, 3),
])
def test_threads_follow_the_vcpus_memory_buys(memory: int | None, cpus: int,
                                              threads: int) -> None:
    assert threads_for(memory, cpus) == threads


def test_unknown_prefixed_variables_are_reported() -> None:
    env = {"ONNX_LAMBDA_VERIFY_SHA256": "1", "ONNX_LAMBDA_THREADS": "1",
           "ONNX_LAMBDA_WARM_TARGET": "fn", "OTHER": "x"}
    assert Settings.from_env(env).unknown == ("ONNX_LAMBDA_VERIFY_SHA256",)


@pytest.mark.parametrize(("env", "threads"), [
    ({"AWS_LAMBDA_MAX_CONCURRENCY": "32"}, 1),  # Managed Instances: one thread per process
    ({"AWS_LAMBDA_MAX_CONCURRENCY": "32", "ONNX_LAMBDA_THREADS": "4"}, 4),  # asked for
    ({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "3538"}, 0),  # on-demand: left to the memory rule
])
def test_threads_default_to_one_per_process_on_managed_instances(env: dict[str, str],
                                                                 threads: int) -> None:
    assert Settings.from_env(env).threads == threads
