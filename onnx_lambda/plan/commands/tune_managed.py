"""``onnx-lambda tune --managed-instances``: the processes-per-vCPU sweep (``tune_managed``),
the CPU vs GPU comparison (``gpu_compare``), printed and written as
tune-managed-MODEL.md/.json."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnx_lambda.plan.commands.options import ints

if TYPE_CHECKING:
    from onnx_lambda.plan.cost import PriceTable
    from onnx_lambda.plan.gpu_compare import GpuSide
    from onnx_lambda.plan.managed import Instance
    from onnx_lambda.plan.subject import Subject
    from onnx_lambda.plan.tune_managed import Setting

DEFAULT_PER_VCPU = "1,2,4,8,16"  # 16 per vCPU: PerExecutionEnvironmentMaxConcurrency's default
# Filled only in this mode (so a memory sweep's command line does not list them)
DEFAULTS: dict[str, object] = {
    "processes_per_vcpu": ints(DEFAULT_PER_VCPU), "vcpus": 1, "memory_per_vcpu": 2,
    "concurrency": 4, "utilization": 0.7, "tolerance": 0.1,
    "repeat": 1, "requests": 300}
QUICK = {**DEFAULTS, "requests": 40}
MEMORY_ONLY = ("sizes", "warm", "cold_fraction", "strategy", "weight", "metric",
               "write_samconfig")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "Lambda Managed Instances (--managed-instances)",
        "one LMI environment per setting, real awslambdaric workers sharing its vCPUs")
    group.add_argument("--managed-instances", action="store_true",
                       help="sweep processes per vCPU instead of memory sizes")
    group.add_argument("--processes-per-vcpu", type=ints, default=None,
                       metavar=DEFAULT_PER_VCPU)
    group.add_argument("--vcpus", type=int, default=None,
                       help="vCPUs of the environment (its CPU share; at most this host's; 1)")
    group.add_argument("--memory-per-vcpu", type=int, choices=(2, 4, 8), default=None,
                       help="ExecutionEnvironmentMemoryGiBPerVCpu (2)")
    group.add_argument("--concurrency", type=int, default=None,
                       help="closed-loop clients driving the environment (4)")
    group.add_argument("--requests", type=int, default=None,
                       help="served requests per setting and repetition (300; quick: 40)")
    group.add_argument("--instance", default=None,
                       help="EC2 type to price (default c7i.large, c7g.large for arm64)")
    group.add_argument("--utilization", type=float, default=None,
                       help="busy share instances run at (the target-tracking value; 0.7)")
    group.add_argument("--tolerance", type=float, default=None,
                       help="p99 within this fraction of the lowest ties, then fewer "
                            "processes win (0.1)")
    group.add_argument("--gpu-table", type=Path, default=None, metavar="FILE.json",
                       help="GPU latency table from scripts/gpu-check, for the CPU vs GPU "
                            "comparison (measured on this machine instead when it has CUDA)")


def markdown(settings: list[Setting], best: Setting | None, *, command: str, subject: Subject,
             inst: Instance, prices: PriceTable, args: argparse.Namespace,
             gpu_line: str) -> str:
    from onnx_lambda.plan.tables import fmt, table
    from onnx_lambda.stats import DEFINITION

    rows = []
    for s in settings:
        if s.failed:
            rows.append([str(s.processes_per_vcpu), str(s.processes), f"**failed**: {s.failed}",
                         *["–"] * 8, ""])
            continue
        rows.append([str(s.processes_per_vcpu), str(s.processes), str(s.requests),
                     f"{100 * s.throttle_fraction:.1f} %", fmt(s.p50_ms, 2), fmt(s.p99_ms, 2),
                     fmt(s.client_p99_ms, 2), fmt(s.sustained_rps, 0), fmt(s.rss_mb, 0),
                     fmt(s.pss_mb, 0), "yes" if s.fits else "**no**",
                     fmt(s.cost_per_million, 3) + (" **recommended**" if s is best else "")])
    terms = prices.raw["managed_instances"]
    verdict = (f"Recommended: {best.processes_per_vcpu} processes per vCPU "
               f"(PerExecutionEnvironmentMaxConcurrency {best.processes}), p99 "
               f"{best.p99_ms:.2f} ms." if best else
               "No setting qualifies (each one throttled, failed or did not fit): raise "
               "--processes-per-vcpu or lower --concurrency.")
    lines = [
        f"Lambda Managed Instances sizing of {subject.name} (`{command}`): one environment of "
        f"{args.vcpus} vCPU ({args.vcpus * args.memory_per_vcpu} GiB), {args.concurrency} "
        f"closed-loop clients; priced on {inst.name} ({inst.vcpus} vCPU, "
        f"{inst.memory_gib:g} GiB, ${inst.per_hour}/h {prices.raw['region']} on-demand, "
        f"retrieved {terms['retrieved']}, + {100 * float(terms['management_fee']):g} % + "
        f"${float(terms['request_per_million']):.2f} per million requests) at "
        f"{100 * args.utilization:g} % utilisation; {DEFINITION}.", "",
        *table(["per vCPU", "processes", "served", "throttled", "p50 ms", "p99 ms",
                "client p99 ms", "rps", "RSS MB", "PSS MB", "fits", "USD / 1M"], rows),
        verdict, "",
        "p50/p99: the REPORT durations; client p99 adds the runtime client and the Invoke "
        "API. RSS and PSS are summed over the environment's processes after the run (PSS "
        "splits shared pages: what the environment holds); fits: PSS within the environment's "
        "memory and the instance's memory less 10 % for its environments. A throttled request "
        "found every process busy (behind API Gateway: a 500); a setting that throttles is "
        f"never recommended. Ties: p99 within {100 * args.tolerance:g} % of the lowest, then "
        "fewer processes.", "",
        gpu_line]
    return "\n".join(lines) + "\n"


def gpu_side(args: argparse.Namespace, subject: Subject, prices: PriceTable) -> GpuSide:
    """The GPU variant: measured here when CUDA is found, else from --gpu-table, else an
    estimate from the model's counted FLOPs (labelled as one)."""
    from onnx_lambda.plan import gpu_compare, tune_managed

    provider, reason = gpu_compare.local_choice(subject.model)
    if provider == "cuda":
        from onnx_lambda.plan.gpu_compare import probe

        device = probe().get("gpu") or "an unnamed GPU"
        inst = gpu_compare.gpu_instance(prices, device)
        if inst is None:
            return gpu_compare.GpuSide(None, f"GPU variant not measured: CUDA is here, but no "
                                             f"priced Managed Instances type has {device}")
        per_vcpu = -(-args.concurrency // inst.vcpus)  # a process for each client
        run = tune_managed.measure(subject, per_vcpu, vcpus=inst.vcpus, gib_per_vcpu=2,
                                   concurrency=args.concurrency, requests=args.requests,
                                   timeout_s=300.0,
                                   extra_env={"ONNX_LAMBDA_EXECUTION_PROVIDER": "cuda"})
        measured = tune_managed.setting(per_vcpu, [run], vcpus=inst.vcpus, gib_per_vcpu=2,
                                        inst=inst, prices=prices,
                                        utilization=args.utilization)
        option = gpu_compare.Option(f"GPU {inst.name} (measured here)", measured.p99_ms,
                                    measured.cost_per_million)
        return gpu_compare.GpuSide(option, f"GPU measured here on {device} ({reason})")
    if args.gpu_table is not None:
        table = gpu_compare.load_table(args.gpu_table)
        return gpu_compare.from_table(table, subject.name, prices, args.utilization)
    from onnx_lambda.plan import flops  # the estimate, when nothing was measured

    try:
        work = flops.count(subject.portable)
    except Exception as exc:  # an op shape inference cannot follow: no estimate, say why
        return gpu_compare.GpuSide(None, f"GPU variant not measured: {reason}, no --gpu-table, "
                                         f"and its FLOPs could not be counted ({exc})")
    return gpu_compare.estimate(work, prices, args.utilization)


def validate(args: argparse.Namespace) -> None:
    """Numbers the sweep cannot run with, refused before anything starts."""
    from onnx_lambda.plan.tune import host_cpus

    if min(args.processes_per_vcpu, default=0) < 1:
        raise ValueError("--processes-per-vcpu: every setting needs at least 1 process per vCPU")
    if args.concurrency < 1 or args.requests < 1 or args.repeat < 1:
        raise ValueError("--concurrency, --requests and --repeat must be at least 1")
    if not 1 <= args.vcpus <= host_cpus():
        raise ValueError(f"--vcpus {args.vcpus}: this host can emulate 1 to {host_cpus()}")
    if not 0 < args.utilization <= 1 or args.tolerance < 0:
        raise ValueError("--utilization must be in (0, 1] and --tolerance at least 0")


def measure(args: argparse.Namespace, command: str) -> int:
    from onnx_lambda.plan import gpu_compare, tune_managed
    from onnx_lambda.plan.cost import PriceTable
    from onnx_lambda.plan.managed import instance
    from onnx_lambda.plan.progress import progress_bar
    from onnx_lambda.plan.subject import prepare
    from onnx_lambda.plan.tables import machine

    prices = PriceTable.load()
    try:
        validate(args)
        inst = instance(prices, args.instance or ("c7g.large" if args.arch == "arm64"
                                                  else "c7i.large"))
        tune_managed.check_instance(inst, args.vcpus)
        if args.gpu_table is not None:
            gpu_compare.load_table(args.gpu_table)  # a bad file fails before the long run
    except ValueError as exc:
        raise SystemExit(f"onnx-lambda tune: {exc}") from None
    with prepare(args.model, name=args.model.name if args.model.is_dir() else None) as subject:
        with progress_bar(f"tune {subject.name} (Managed Instances)",
                          args.repeat * len(args.processes_per_vcpu)) as advance:
            settings = tune_managed.run(
                subject, args.processes_per_vcpu, vcpus=args.vcpus,
                gib_per_vcpu=args.memory_per_vcpu, concurrency=args.concurrency,
                requests=args.requests, repeat=args.repeat, inst=inst, prices=prices,
                utilization=args.utilization, on_step=advance)
        cpu_options = [gpu_compare.Option(f"{inst.name}, {s.processes_per_vcpu} per vCPU",
                                          s.p99_ms, s.cost_per_million)
                       for s in settings if s.eligible]
        gpu_line, gpu_json = gpu_compare.summary(cpu_options, gpu_side(args, subject, prices))
    best = tune_managed.recommend(settings, args.tolerance)
    text = markdown(settings, best, command=command, subject=subject, inst=inst, prices=prices,
                    args=args, gpu_line=gpu_line)
    print(text)
    out: Path = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / f"tune-managed-{subject.name}.md", out / f"tune-managed-{subject.name}.json"
    md.write_text(text, encoding="utf-8")
    document: dict[str, Any] = {
        "command": command, "machine": machine(), "model": str(subject.source),
        "instance": vars(inst), "vcpus": args.vcpus, "memory_per_vcpu_gib": args.memory_per_vcpu,
        "concurrency": args.concurrency, "utilization": args.utilization,
        "settings": [s.as_dict() for s in settings],
        "recommended": best.processes_per_vcpu if best else None, "gpu": gpu_json}
    js.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {md}, {js}")
    return 0
