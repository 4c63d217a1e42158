"""CPU vs GPU on Lambda Managed Instances, from measured numbers only.

The GPU side comes from one of two places, never from a guess:
- this machine, when the handler's provider choice (``handler/ort/providers.py``, ``auto``)
  finds CUDA for the model: ``tune`` then measures the GPU variant in the emulator like a CPU
  setting (``ONNX_LAMBDA_EXECUTION_PROVIDER=cuda``);
- a GPU latency table written elsewhere by ``scripts/gpu-check`` (``benchmarks/gpu_check.py``,
  in a source checkout), on a machine with a GPU; its ``device`` names the GPU it ran on.

A measurement is priced only on an instance type of ``prices.json`` whose GPU is the one that
was measured (``gpu`` field): an H200's latency says nothing about an L4's. Without a GPU
measurement the comparison says so and claims nothing.

Without either, ``estimate`` makes the GPU side from the model's counted FLOPs (``flops``) and
the GPU's published throughput (``prices.json``), and every sentence made from it says
"estimate".

"At equal p99": the target is the larger of the two sides' best p99 (a latency both reach);
each side's cheapest measured option at or under it is compared on USD per million requests.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from onnx_lambda import json_documents
from onnx_lambda.plan.cost import PriceTable
from onnx_lambda.plan.equal_p99 import Option, cheapest
from onnx_lambda.plan.flops import Work
from onnx_lambda.plan.managed import Instance

FORMAT = "onnx-lambda-gpu-table/1"


class GpuTableError(ValueError):
    """A GPU table that is not one ``scripts/gpu-check`` wrote, or lacks the model."""


class GpuSide(NamedTuple):
    """What is known of the GPU variant: a measured option, or why there is none."""

    option: Option | None
    note: str
    estimated: bool = False  # the option is ``estimate``'s, not a measurement


def local_choice(model: Path, env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(provider, reason): what the handler's ``auto`` would pick for ``model`` here."""
    from handler.ort import providers

    allows = True
    manifest = model / "model.json" if model.is_dir() else None
    if manifest is not None and manifest.exists():
        allows = json.loads(manifest.read_text()).get("gpu", {}).get("suitable", True) is not False
    choice = providers.choose("auto", env=os.environ if env is None else env,
                              manifest_allows=allows)
    return choice.provider, choice.reason


def probe(env: dict[str, str] | None = None) -> dict[str, Any]:
    """What this machine offers; ``reason`` is set when CUDA cannot be used."""
    env = dict(os.environ if env is None else env)
    found: dict[str, Any] = {"device_node": os.path.exists("/dev/nvidia0"), "gpu": None,
                             "driver": None, "onnxruntime": None, "providers": []}
    if shutil.which("nvidia-smi"):
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             check=False, env=env)
        if out.returncode == 0 and out.stdout.strip():
            name, _, driver = out.stdout.strip().splitlines()[0].partition(",")
            found["gpu"], found["driver"] = name.strip(), driver.strip()
    try:
        import onnxruntime

        found["onnxruntime"] = onnxruntime.__version__
        found["providers"] = list(onnxruntime.get_available_providers())
    except ImportError as exc:
        found["reason"] = f"onnxruntime not importable ({exc})"
        return found
    if not found["device_node"] or found["gpu"] is None:
        found["reason"] = "no CUDA device (/dev/nvidia0 absent or nvidia-smi shows no GPU)"
    elif "CUDAExecutionProvider" not in found["providers"]:
        found["reason"] = (f"onnxruntime {found['onnxruntime']} offers "
                           f"{', '.join(found['providers'])}: install onnxruntime-gpu "
                           "(layers/requirements-gpu.txt)")
    return found


def load_table(path: Path) -> dict[str, Any]:
    return json_documents.read(path, FORMAT, GpuTableError,
                               "a GPU table from scripts/gpu-check")


def table_entry(table: Mapping[str, Any], model: str) -> dict[str, Any] | None:
    return next((m for m in table.get("models", []) if m.get("name") == model), None)


def gpu_instance(prices: PriceTable, device: str) -> Instance | None:
    """The priced instance type whose GPU is ``device`` (e.g. "NVIDIA L4"), cheapest first."""
    from onnx_lambda.plan.managed import instance

    names = [name for name, spec in prices.raw["managed_instances"]["instances"].items()
             if spec.get("gpu") and spec["gpu"].lower() in device.lower()]
    found = [instance(prices, name) for name in names]
    return min(found, key=lambda i: i.per_hour, default=None)


def priced(prices: PriceTable, inst: Instance, rps: float, utilization: float) -> float:
    """USD per million requests for one GPU environment (the whole instance) at ``rps``."""
    from onnx_lambda.plan.tune_managed import cost_per_million

    return cost_per_million(prices, inst, inst.vcpus, rps, utilization)


def from_table(table: Mapping[str, Any], model: str, prices: PriceTable,
               utilization: float) -> GpuSide:
    """The GPU side from a table ``scripts/gpu-check`` wrote."""
    if not table.get("measured"):
        return GpuSide(None, f"GPU variant not measured: the GPU table says "
                             f"{table.get('reason', 'nothing was measured')}")
    entry = table_entry(table, model)
    device = (table.get("device") or {}).get("name", "unknown GPU")
    if entry is None or "cuda" not in entry:
        return GpuSide(None, f"GPU variant not measured: the GPU table has no {model!r}")
    if not entry.get("parity", {}).get("ok"):
        return GpuSide(None, f"GPU variant not compared: CUDA outputs of {model!r} differ "
                             "from CPU beyond fp32 tolerance on " + device)
    cuda = entry["cuda"]
    where = f"{device}, scripts/gpu-check {table.get('date', '')}".strip()
    inst = gpu_instance(prices, device)
    if inst is None:
        return GpuSide(None, f"GPU measured on {device} (p99 {cuda['p99_ms']:.2f} ms), but no "
                             "priced Managed Instances type has that GPU: no cost comparison")
    option = Option(f"GPU {inst.name} ({where})", float(cuda["p99_ms"]),
                    priced(prices, inst, float(cuda["rps"]), utilization))
    weights = f"; weights {entry['weights']}" if entry.get("weights") else ""
    return GpuSide(option, f"GPU measured on {where}{weights}")


# The estimate's assumptions (used only when no GPU was measured; each figure it makes says
# "estimate"): a batch-1 inference's small kernels reach a fraction of the fp32 peak, every node
# costs a kernel launch plus the CUDA provider's bookkeeping, a run has a fixed cost (two
# synchronised host-device copies and the provider's run overhead), inputs and outputs cross
# PCIe 4.0 x16, and the tail is a fixed multiple of the median.
EFFICIENCY = 0.25
LAUNCH_MS = 0.015
RUN_MS = 0.2
PCIE_GBPS = 25.0
TAIL = 1.25


def estimated_ms(work: Work, tflops: float, gbps: float) -> float:
    """One inference's GPU time (ms) from its counted work (``flops.Work``): launches, copies,
    then the slower of compute at ``EFFICIENCY`` of the peak and reading the weights once."""
    compute = work.flops / (tflops * 1e12 * EFFICIENCY) * 1e3
    memory = work.weight_bytes / (gbps * 1e9) * 1e3
    return (RUN_MS + work.nodes * LAUNCH_MS + work.io_bytes / (PCIE_GBPS * 1e9) * 1e3
            + max(compute, memory))


def estimate(work: Work, prices: PriceTable, utilization: float) -> GpuSide:
    """The GPU side from the model's counted FLOPs and weights and the GPU's published
    throughput, on the cheapest priced GPU type: an estimate, labelled as one."""
    from onnx_lambda.plan.managed import instance

    specs = prices.raw["managed_instances"]["instances"]
    names = [n for n, spec in specs.items() if spec.get("gpu_fp32_tflops")]
    if not names:
        return GpuSide(None, "GPU variant not measured, and prices.json has no GPU throughput "
                             "to estimate from")
    inst = min((instance(prices, n) for n in names), key=lambda i: i.per_hour)
    p50 = estimated_ms(work, inst.gpu_fp32_tflops, inst.gpu_memory_gbps)
    rps = 1000.0 / p50  # one GPU: concurrent requests' kernels take turns on it
    option = Option(f"GPU {inst.name} (estimate)", p50 * TAIL,
                    priced(prices, inst, rps, utilization))
    return GpuSide(option, estimated=True, note=(
        f"GPU figures are ESTIMATES (nothing was measured on a GPU): {work.flops / 1e9:.3f} "
        f"GFLOPs and {work.weight_bytes / 1e6:.1f} MB of weights counted from the graph, "
        f"{inst.gpu} at {EFFICIENCY:.0%} of {inst.gpu_fp32_tflops} TFLOPS, "
        f"{work.nodes} kernel launches, p99 = {TAIL}× the estimated {p50:.2f} ms; the CPU "
        "figures are measured"))


def at_equal_p99(cpu: Sequence[Option], gpu: Option) -> dict[str, Any] | None:
    """The cheapest CPU option and the GPU at the p99 both reach; None if no CPU option
    (costs: USD per million requests)."""
    compared = cheapest(cpu, [gpu]) if math.isfinite(gpu.p99_ms) else None
    if compared is None:
        return None
    return {"p99_target_ms": compared["p99_target_ms"], "cpu": compared["first"],
            "gpu": compared["second"], "cheaper": "GPU" if compared["ratio"] < 1 else "CPU",
            "ratio_gpu_to_cpu": compared["ratio"]}


def summary(cpu: Sequence[Option], side: GpuSide) -> tuple[str, dict[str, Any]]:
    """The report's sentence and its JSON."""
    if side.option is None:
        return side.note + ".", {"measured": False, "note": side.note}
    known = {"measured": not side.estimated, "estimate": side.estimated, "note": side.note}
    compared = at_equal_p99(cpu, side.option)
    if compared is None:
        return (f"{side.note}; no CPU setting qualified, so no comparison.",
                {**known, "gpu": side.option._asdict()})
    cpu_best, gpu = compared["cpu"], compared["gpu"]
    fastest = min(cpu, key=lambda o: o.p99_ms)
    faster = "GPU" if side.option.p99_ms < fastest.p99_ms else "CPU"
    compared["p99"] = {"gpu_ms": side.option.p99_ms, "best_cpu_ms": fastest.p99_ms,
                       "lower": faster}
    text = (f"p99: {side.option.label} {side.option.p99_ms:.2f} ms vs the fastest CPU setting "
            f"{fastest.p99_ms:.2f} ms: {faster} is faster. At equal p99 "
            f"(≤ {compared['p99_target_ms']:.2f} ms): CPU {cpu_best['label']} "
            f"${cpu_best['cost']:.3f} vs {gpu['label']} ${gpu['cost']:.3f} per million "
            f"requests: {compared['cheaper']} is cheaper ({side.note}).")
    return text, {**known, **compared}
