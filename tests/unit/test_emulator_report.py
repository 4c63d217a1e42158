"""REPORT lines, billing, log tails, CPU shares and the Invoke API's name parsing."""

from __future__ import annotations

import base64
import dataclasses
import os
from pathlib import Path

import pytest

from onnx_lambda.emulator.environment import exit_status
from onnx_lambda.emulator.limits import CpuLimiter, PeakRss, vcpus_for
from onnx_lambda.emulator.report import InvocationRecord, billed_ms, log_tail
from onnx_lambda.emulator.template import FunctionSpec

RECORD = InvocationRecord(
    function="F", request_id="rid", environment_id="e", version="$LATEST", cold=True,
    initialization_type="on-demand", init_ms=123.456, duration_ms=1.234, billed_ms=125,
    memory_size_mb=1769, max_memory_used_mb=80, error_type=None,
    cpu_limit="cfs-quota 1.00 vCPU", memory_limit="rss-poll 1769 MB")


def test_report_line_format() -> None:
    assert RECORD.report_line() == (
        "REPORT RequestId: rid\tDuration: 1.23 ms\tBilled Duration: 125 ms\t"
        "Memory Size: 1769 MB\tMax Memory Used: 80 MB\tInit Duration: 123.46 ms\t"
        "CPU: cfs-quota 1.00 vCPU\tMemory Limit: rss-poll 1769 MB")
    warm = dataclasses.replace(RECORD, init_ms=None, error_type="Sandbox.Timedout")
    line = warm.report_line()
    assert "Init Duration" not in line
    assert "\tStatus: error\tError Type: Sandbox.Timedout\t" in line


def test_billed_duration() -> None:
    assert billed_ms(0.2, None) == 1
    assert billed_ms(1.01, None) == 2
    assert billed_ms(1.5, 100.2) == 102


def test_log_tail_is_the_last_4kb() -> None:
    text = base64.b64decode(log_tail(RECORD, "hello\n")).decode()
    assert text.splitlines() == [RECORD.start_line(), "hello", RECORD.end_line(),
                                 RECORD.report_line()]
    long = base64.b64decode(log_tail(RECORD, "x" * 10_000))
    assert len(long) == 4096 and long.endswith(RECORD.report_line().encode() + b"\n")


@pytest.mark.parametrize(("memory", "share"), [(1769, 1.0), (128, 128 / 1769),
                                               (10240, 5.788), (20000, 6.0)])
def test_cpu_share(memory: int, share: float) -> None:
    assert vcpus_for(memory) == pytest.approx(share, abs=1e-3)
    assert FunctionSpec("F", "app.handler", Path("/code"), memory_mb=memory).vcpus == vcpus_for(
        memory)


def test_a_managed_instances_environment_has_its_own_share() -> None:
    spec = FunctionSpec("F", "app.handler", Path("/code"), memory_mb=512,
                        processes_per_environment=4, vcpus_per_environment=2.0)
    assert spec.vcpus == 2.0


def test_cpu_limiter_off_and_pinned_descriptions() -> None:
    assert CpuLimiter("off").describe(vcpus_for(512)) == "unlimited"
    assert CpuLimiter("pinned").describe(vcpus_for(512)) == "pinned 1 core(s) for 0.29 vCPU"
    with pytest.raises(ValueError):
        CpuLimiter("bogus")


def test_peak_rss_of_this_process() -> None:
    rss = PeakRss(os.getpid())
    first = rss.mb()
    assert first > 1 and rss.mb() >= first  # a peak: never goes down
    rss.track([os.getpid(), 2**22 + 1])  # no such process: ignored
    assert rss.mb() >= first
    rss.close()
    assert rss.mb() == 0


def test_exit_status_wording() -> None:
    assert exit_status(1) == "exit status 1"
    assert exit_status(-9) == "signal: killed"
    assert exit_status(-11) == "signal: segmentation fault"
