"""``build``: inspect → fuse → quantize (gated) → optimize → package → verify and measure.

Intermediate files live in a temporary folder; the artifact is assembled in a staging folder
and renamed into place only when every step has passed.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from rich.console import Console

from handler.manifest import Manifest
from onnx_lambda.build import graph_math, measure, optimize, output, quantize, signature
from onnx_lambda.build.errors import AccuracyGateError
from onnx_lambda.build.gate import Accuracy, Feeds, collect, compare
from onnx_lambda.build.progress import Steps
from onnx_lambda.build.spec import BuildOptions, ModelSpec

PORTABLE = "model.onnx"


@dataclass(frozen=True)
class BuildReport:
    output: Path
    manifest: Manifest
    before: measure.Figures
    after: measure.Figures
    accuracy: Accuracy
    timings: dict[str, float]


def build(spec: ModelSpec, target: Path, options: BuildOptions, console: Console) -> BuildReport:
    steps = Steps(console)
    staging = output.staging_for(target)
    try:
        with tempfile.TemporaryDirectory(prefix="onnx-lambda-build-") as scratch:
            report = _build(spec, target, staging, Path(scratch), options, steps)
        with steps.step(f"publish {target}"):
            output.publish(staging, target)
        return report
    finally:
        output.discard(staging)


def _build(spec: ModelSpec, target: Path, staging: Path, work: Path, options: BuildOptions,
           steps: Steps) -> BuildReport:
    with steps.step("inspect") as note:
        proto = signature.load(spec.source)
        session = signature.check_runnable(spec.source, proto)
        inputs = signature.tensor_infos(session.get_inputs())
        outputs = signature.tensor_infos(session.get_outputs())
        for info in (*inputs, *outputs):
            note(f"{info.name}: {info.dtype}{list(info.shape)}")
        samples = spec.samples or [signature.synthetic_feeds(inputs)]
    current = spec.source
    metadata = dict(spec.metadata)
    pipeline_options, graph_outputs = dict(spec.pipeline_options), {}
    append: Callable[[onnx.ModelProto], graph_math.Appended] | None = None
    if spec.pipeline in graph_math.PIPELINES:
        with steps.step("pipeline math into the graph") as note:
            raw_outputs = _runner(current)(samples[0])

            def append(model: onnx.ModelProto) -> graph_math.Appended:
                return graph_math.for_pipeline(model, spec.pipeline, spec.pipeline_options,
                                               spec.files, raw_outputs)
            try:
                math = append(proto)
            except graph_math.GraphMathError as exc:
                append = None
                note(f"not appended ({exc}): the runtime pipeline computes it in Python")
            else:
                current = work / "graph.onnx"
                onnx.save(math.model, current)
                outputs = signature.tensor_infos(
                    signature.check_runnable(current, math.model).get_outputs())
                graph_outputs, metadata["graph_math"] = math.outputs, math.note
                pipeline_options.update(math.options)
                note(f"{', '.join(math.note['appended'])} → "
                     f"{', '.join(sorted(set(math.outputs.values())))}")
    # The gate compares like with like: the reference and every candidate include the math.
    reference = spec.reference
    if reference is None:
        reference = collect(_runner(current), samples, spec.comparable)
    fuse = options.fuse == "bert" or (options.fuse == "auto"
                                      and optimize.looks_like_transformer(proto))
    if fuse:
        with steps.step("transformer fusions") as note:
            # On the model as given: the fusions' shape inference fails on the appended pooling
            # (SkipLayerNormalization is then not fused); the math goes onto the fused graph.
            fused = optimize.fuse_transformer(spec.source, work / "fused.onnx", spec.num_heads,
                                              spec.hidden_size)
            note(", ".join(f"{op} ×{n}" for op, n in fused.items()) or "no pattern matched")
            current = work / "fused.onnx"
            if append is not None:
                onnx.save(append(onnx.load(str(current))).model, current)
            metadata["fusions"] = fused

    def evaluate(path: Path) -> Accuracy:
        candidate = collect(_runner(path), samples, spec.comparable)
        return compare(reference, candidate, classifier=spec.classifier)

    settings = _quantize_settings(spec, options)
    if settings is not None:
        with steps.step("quantize (dynamic INT8)") as note:
            result = quantize.tune(current, work / "quantized.onnx", settings, evaluate,
                                   options.thresholds, on_attempt=note)
            current = work / "quantized.onnx"
            metadata["quantization"] = {
                "type": "dynamic-int8", "op_types": list(settings.op_types),
                "per_channel": settings.per_channel, "fp32_nodes": list(result.excluded)}
    with steps.step("optimize" if options.optimize else "package") as note:
        shutil.copyfile(current, staging / PORTABLE)
        chosen = PORTABLE
        if options.optimize:
            chosen = "model.ort" if options.ort_format else "model.opt.onnx"
            optimize.optimize_offline(staging / PORTABLE, staging / chosen, options.level)
            note(f"{chosen}: onnxruntime {ort.__version__}, level {options.level}")
        for name, path in spec.files.items():
            shutil.copyfile(path, staging / name)
        manifest = Manifest(
            name=spec.name, model=chosen, portable=PORTABLE, onnxruntime=ort.__version__,
            optimization=options.level if options.optimize else "none",
            inputs=inputs, outputs=outputs,
            files={p.name: output.sha256(p) for p in sorted(staging.iterdir())},
            pipeline=spec.pipeline, pipeline_options=pipeline_options,
            graph_outputs=graph_outputs, labels=spec.labels, example=spec.example,
            metadata=metadata)
        manifest.dump(staging)
    with steps.step("verify and measure") as note:
        feeds = {name: value[:1] for name, value in samples[0].items()}  # batch 1
        before, _ = measure.figures(measure.load_raw, spec.source,
                                    spec.source.stat().st_size, feeds)
        after, model = measure.figures(measure.load_folder, staging,
                                       measure.folder_size(staging), feeds)
        accuracy = compare(reference, collect(model.run, samples, spec.comparable),
                           classifier=spec.classifier)
        note(f"as the runtime loads it: {accuracy.describe()}")
        failures = accuracy.failures(options.thresholds)
        if failures:
            raise AccuracyGateError(f"the built artifact fails the accuracy gate: "
                                    f"{'; '.join(failures)}")
        metadata["build"] = {"accuracy": accuracy.to_dict(),
                             "before": dataclasses.asdict(before),
                             "after": dataclasses.asdict(after)}
        manifest = dataclasses.replace(manifest, metadata=metadata)
        manifest.dump(staging)
    return BuildReport(target, manifest, before, after, accuracy, steps.timings)


def _runner(path: Path) -> Callable[[Feeds], dict[str, np.ndarray]]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]

    def run(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(names, session.run(names, feeds), strict=True))

    return run


def _quantize_settings(spec: ModelSpec, options: BuildOptions) -> quantize.QuantizeSettings | None:
    wanted = options.quantize if options.quantize is not None else spec.quantize is not None
    if not wanted:
        return None
    settings = spec.quantize or quantize.QuantizeSettings()
    if options.quantize_ops is not None:
        settings = dataclasses.replace(settings, op_types=options.quantize_ops)
    if options.max_fp32_nodes is not None:
        settings = dataclasses.replace(settings, max_fp32_nodes=options.max_fp32_nodes)
    return settings
