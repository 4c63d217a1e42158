"""``onnx-lambda warm``: arguments, client, report and exit status."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from onnx_lambda.warm import commands
from warmer.fanout import PingResult
from warmer.settings import WarmConfig


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    commands.register(parser.add_subparsers())
    return parser.parse_args(argv)


class FakePings:
    """Stands in for the network: ping number n answers from environment n % environments."""

    def __init__(self) -> None:
        self.environments = 1000
        self.seen: list[WarmConfig] = []

    def ping(self, client: Any, config: WarmConfig, sleep: Any) -> PingResult:
        self.seen.append(config)
        environment = f"env-{len(self.seen) % self.environments}"
        return PingResult(attempts=1, answer={"warm": True, "environmentId": environment,
                                              "coldStart": False})


@pytest.fixture
def pings(monkeypatch: pytest.MonkeyPatch) -> FakePings:
    fake = FakePings()
    monkeypatch.setattr("warmer.fanout.ping", fake.ping)
    monkeypatch.setattr(commands, "client_for", lambda *args: object())
    return fake


def test_warm_pings_n_times_with_the_options_and_prints_the_report(
        pings: FakePings, capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(["warm", "InferenceFunction", "-n", "3", "--qualifier", "blue",
                  "--hold-ms", "200"])
    assert args.func(args) == 0
    assert len(pings.seen) == 3
    assert {(c.target, c.qualifier, c.hold_ms) for c in pings.seen} == {
        ("InferenceFunction", "blue", 200)}
    report = json.loads(capsys.readouterr().out)
    assert (report["asked"], report["environments"]) == (3, 3)


def test_warm_fails_when_pings_share_environments(
        pings: FakePings, capsys: pytest.CaptureFixture[str]) -> None:
    pings.environments = 2
    args = parse(["warm", "fn", "-n", "4"])
    assert args.func(args) == 1
    assert json.loads(capsys.readouterr().out)["environments"] == 2


def test_local_endpoint_client_needs_no_aws_configuration(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION",
                 "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    client = commands.client_for("http://127.0.0.1:3999", None, 8)
    assert client.meta.endpoint_url == "http://127.0.0.1:3999"
    assert client.meta.region_name == "us-east-1"
    assert client.meta.config.max_pool_connections == 10
    assert client._request_signer._credentials.access_key == "local"


@pytest.mark.parametrize(("flags", "message"), [(["--hold-ms", "5000"], "hold_ms"),
                                                (["-n", "0"], "concurrency")])
def test_bad_flags_are_a_one_line_error_not_a_traceback(
        flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(["warm", "fn", *flags])
    assert args.func(args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"onnx-lambda warm: {message}: ")
    assert "Traceback" not in captured.err
