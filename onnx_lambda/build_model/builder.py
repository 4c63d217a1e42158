"""``build``: inspect → example → fuse → quantize (gated) → pipeline math → optimize → package →
verify and measure.

The pipeline math (``graph_math``) is appended once, to the fused and quantized graph: fusions
and quantizers never see it (it stays fp32, untouched). The gate compares like with like: the
reference and every candidate it evaluates carry the same math (in memory).

Intermediate files live in a temporary folder; the artifact is assembled in a staging folder
and renamed into place only when every step has passed. Under ``output.cancellable`` (the
command installs it) SIGINT/SIGTERM unwind like a failure: nothing is left behind.
"""

from __future__ import annotations

import dataclasses
import shutil
import signal
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from rich.console import Console

from handler import pipelines
from handler.manifest import ITEM_BY_ITEM, RUNS_ALONE, Manifest, takes_text, tokenizer_file
from onnx_lambda.build_model import (
    decoder_build,
    example,
    gpu,
    graph_math,
    inspect,
    ladder,
    measure,
    optimize,
    output,
    package,
    quant_auto,
    quant_methods,
    quantize,
    signature,
    tokenizer_split,
)
from onnx_lambda.build_model.errors import AccuracyGateError
from onnx_lambda.build_model.gate import (
    Accuracy,
    Feeds,
    Thresholds,
    batch_invariance,
    collect,
    compare,
    rows_of,
    split,
)
from onnx_lambda.build_model.progress import Steps
from onnx_lambda.build_model.spec import BuildOptions, ModelSpec

DEFAULT_COSINE = (Thresholds.mean_cosine, Thresholds.min_cosine)


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
    staging = scratch = None
    # SIGINT/SIGTERM held from the folders' mkdir to their names' assignment: a cancel landing
    # in between (its handler raises) would leave the staging or the scratch folder behind
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, output.SIGNALS)
    try:
        try:
            staging = output.staging_for(target)
            scratch = tempfile.TemporaryDirectory(prefix="onnx-lambda-build-")
        finally:  # a signal that came meanwhile is delivered here, with the names set
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        spec = _without_links(spec, Path(scratch.name))
        if spec.pipeline == "generate" or decoder_build.is_decoder(spec.source):
            manifest, before, after, accuracy = decoder_build.build(
                spec, staging, Path(scratch.name), options, steps)
            report = BuildReport(target, manifest, before, after, accuracy, steps.timings)
        else:
            report = _build(spec, target, staging, Path(scratch.name), options, steps)
        with steps.step(f"publish {target}"):
            output.publish(staging, target)
        return report
    finally:
        if scratch is not None:
            scratch.cleanup()
        if staging is not None:
            output.discard(staging)


def _without_links(spec: ModelSpec, work: Path) -> ModelSpec:
    """The source with no symbolic link in its folder. onnx refuses external data behind one
    ("... but it is a symbolic link"; a hard link too), and a Hugging Face cache snapshot links
    every file into its blobs: such a folder is copied into the scratch folder, and the build
    reads the copy."""
    folder = spec.source.parent
    if not any(path.is_symlink() for path in (spec.source, *folder.iterdir())):
        return spec
    real = work / "source"
    real.mkdir()
    for path in folder.iterdir():
        if path.is_file():  # (a link to a file counts: is_file follows it)
            shutil.copyfile(path, real / path.name)
    return dataclasses.replace(spec, source=real / spec.source.name)


def _build(spec: ModelSpec, target: Path, staging: Path, work: Path, options: BuildOptions,
           steps: Steps) -> BuildReport:
    limits = options.thresholds
    if limits.max_abs_error is None and spec.max_abs_error is not None:
        limits = dataclasses.replace(limits, max_abs_error=spec.max_abs_error)
    if spec.cosine and (limits.mean_cosine, limits.min_cosine) == DEFAULT_COSINE:
        limits = dataclasses.replace(limits, mean_cosine=spec.cosine[0], min_cosine=spec.cosine[1])
    options = dataclasses.replace(options, thresholds=limits)
    settings = _quantize_settings(spec, options)
    candidates = _auto_candidates(spec, options, settings)
    with steps.step("inspect"):
        proto = signature.parse(spec.source)
        # Summarized before its external data is read in (the summary reports it as such),
        # with the op types this build quantizes.
        summary = inspect.summarize(
            spec.source, proto, op_types=quantize.op_types(settings or quantize.QuantizeSettings()),
            example=f"the {spec.name} example's samples" if spec.samples else None)
        proto = signature.load(spec.source, proto)
        session = signature.check_runnable(spec.source, proto)  # the source's one session
        inputs = signature.tensor_infos(session.get_inputs())
        outputs = signature.tensor_infos(session.get_outputs())
        inspect.render(summary, steps.console)
    found = None
    run_source = signature.runner(session)
    with steps.step("example") as note:
        if spec.samples:
            samples = spec.samples
            note(f"{len(samples)} sample batch(es) from the {spec.name} example")
        else:
            found = ladder.find(proto, inputs, example.check(spec.given, inputs), run_source)
            samples = found.samples
            note(f"{example.describe(found.feeds)} ({found.how}); {len(samples)} gate sample(s)")
    feeds = found.feeds if found is not None else _batch_one(samples[0])  # batch 1, measured
    # Tuning (calibration, node ranking, auto's choice) sees one half, the gate judges the other;
    # --calibration's feeds join the samples (split too) where the reference is the source's own.
    extra = list(options.calibration) if spec.reference is None else []
    samples = [*samples, *extra]
    parts = split(samples, synthetic=found is not None and found.how != "given" and not extra)
    current, run_reference = spec.source, run_source
    metadata = dict(spec.metadata)
    comparable, pipeline_options, graph_outputs = spec.comparable, dict(spec.pipeline_options), {}
    math: graph_math.Appended | None = None
    raw_outputs: dict[str, np.ndarray] = {}

    def append(model: onnx.ModelProto) -> graph_math.Appended:
        """The pipeline's math on (a copy of) ``model``, at ``model``'s own opset."""
        appended = graph_math.for_pipeline(model, spec.pipeline, spec.pipeline_options,
                                           spec.files, raw_outputs)
        assert appended is not None  # spec.pipeline is one of graph_math.PIPELINES
        return appended

    if spec.pipeline in graph_math.PIPELINES:
        with steps.step("pipeline math into the graph") as note:
            raw_outputs = run_source(samples[0])
            try:
                math = append(proto)
            except graph_math.GraphMathError as exc:
                note(f"not appended ({exc}): the runtime pipeline computes it in Python")
            else:
                with_math = signature.check_runnable(spec.source, math.model,
                                                     math.model.SerializeToString())
                outputs = signature.tensor_infos(with_math.get_outputs())
                run_reference = signature.runner(with_math)
                graph_outputs, metadata["graph_math"] = math.outputs, math.note
                pipeline_options.update(math.options)
                comparable = graph_math.gated(spec.comparable, math)
                note(f"{', '.join(math.note['appended'])} → "
                     f"{', '.join(sorted(set(math.outputs.values())))}")

    def shipped(core: Path) -> onnx.ModelProto | None:
        """``core`` as the artifact ships it: with the pipeline math, and the source with its
        external data inside (None: the file as it is)."""
        if core == spec.source:
            return proto if math is None else math.model
        return None if math is None else append(onnx.load(str(core))).model

    if spec.reference is None:
        reference = collect(run_reference, samples, comparable)
    else:  # an example's own reference rows (minilm: PyTorch's embeddings)
        reference = (spec.reference if isinstance(spec.reference, dict)
                     else {"output": spec.reference})
    tune_reference = rows_of(samples, reference, parts.tune_index)
    judge_reference = rows_of(samples, reference, parts.judge_index)
    if not reference:
        steps.console.print("    [dim]accuracy gate: nothing comparable (no numeric, label or "
                            "map output): outputs are not checked[/dim]")
    fuse = options.fuse == "bert" or (options.fuse == "auto"
                                      and optimize.looks_like_transformer(proto))
    if fuse:
        with steps.step("transformer fusions") as note:
            fused = optimize.fuse_transformer(current, work / "fused.onnx", spec.num_heads,
                                              spec.hidden_size)
            note(", ".join(f"{op} ×{n}" for op, n in fused.items()) or "no pattern matched")
            current = work / "fused.onnx"
            metadata["fusions"] = fused

    def evaluate(path: Path) -> Accuracy:
        model = shipped(path)
        run = _runner(path if model is None else model.SerializeToString())
        candidate = collect(run, parts.tune, comparable)
        return compare(tune_reference, candidate, classifier=spec.classifier)

    if settings is not None and not reference:
        steps.console.print("[yellow]![/yellow] quantize skipped: the accuracy gate has no "
                            "output it can compare, so a quantized model could not be checked")
        metadata["quantization"] = {"type": "none", "reason": "no comparable output"}
        settings = None
    if settings is not None:
        calibration = [*parts.tune, *([] if extra else options.calibration)]
        current = _quantize(current, work, settings, candidates, evaluate, options, steps,
                            metadata, calibration, feeds)
        if _runs_alone(metadata, spec.pipeline):  # declared, not guessed at serve time
            pipeline_options.setdefault(ITEM_BY_ITEM, True)
    with steps.step("optimize" if options.optimize else "package") as note:
        final = shipped(current)
        if final is None:
            shutil.copyfile(current, staging / package.PORTABLE)
        else:
            onnx.save(final, staging / package.PORTABLE)
            if "graph" in metadata.get("quantization", {}):  # what the file holds, math too
                metadata["quantization"]["graph"] = quantize.tally(quantize.precisions(final))
        chosen = package.loaded_file(staging, options, note)
        for name, path in spec.files.items():
            shutil.copyfile(path, staging / name)
        tokenizer = tokenizer_file(pipeline_options)
        if (takes_text(spec.pipeline, pipeline_options, spec.files) and tokenizer in spec.files
                and "vocabulary" not in pipeline_options):
            named = tokenizer_split.split(staging / tokenizer, staging)
            if named is not None:  # the same tokens, a third of the tokenizer's load cost
                pipeline_options.update(named)
                note(f"tokenizer: {named['tokenizer']} + {named['vocabulary']}")
        inline, example_file = spec.example, None
        if found is not None:
            inline, example_file = example.write(found.feeds, spec.pipeline, staging)
            note(f"example: {example_file or 'inline in model.json'}")
        manifest = package.manifest(
            staging, spec.name, chosen, options, inputs=inputs, outputs=outputs,
            pipeline=spec.pipeline, pipeline_options=pipeline_options,
            graph_outputs=graph_outputs, labels=spec.labels, example=inline,
            example_file=example_file, metadata=metadata,
            gpu=gpu.suitability(staging / package.PORTABLE))
        manifest.dump(staging)
    with steps.step("verify and measure") as note:
        before, _ = measure.figures(measure.load_raw, spec.source,
                                    spec.source.stat().st_size, feeds)
        after, model = measure.figures(measure.load_folder, staging,
                                       measure.folder_size(staging), feeds)
        # as served: through the pipeline's run where it runs each item alone
        alone = pipeline_options.get(ITEM_BY_ITEM) is True
        run = pipelines.load(spec.pipeline, model, pipeline_options).run if alone else model.run
        accuracy = compare(judge_reference, collect(run, parts.judge, comparable),
                           classifier=spec.classifier).on(parts.describe())
        note(f"as the runtime loads it: {accuracy.describe()}")
        invariance = batch_invariance(run, parts.judge, comparable)
        note(invariance.describe() + (f" ({ITEM_BY_ITEM}: the pipeline runs each item alone)"
                                      if alone else ""))
        failures = accuracy.failures(options.thresholds)
        quantized = metadata.get("quantization", {}).get("type", "none") != "none"
        if invariance.fails(options.thresholds) and quantized and options.quantize in (None,
                                                                                       "auto"):
            # a default quantization must be; a named method warns; an fp32 build reports what
            # the source model itself does
            failures.append(invariance.describe())
        if failures:
            raise AccuracyGateError(f"the built artifact fails the accuracy gate: "
                                    f"{'; '.join(failures)}")
        metadata["build"] = {"accuracy": accuracy.to_dict(), "split": parts.to_dict(),
                             "batch_invariance": invariance.min_cosine,
                             "before": dataclasses.asdict(before),
                             "after": dataclasses.asdict(after)}
        manifest = manifest._replace(metadata=metadata)
        manifest.dump(staging)
    return BuildReport(target, manifest, before, after, accuracy, steps.timings)


def _quantize(current: Path, work: Path, settings: quantize.QuantizeSettings,
              candidates: list[quantize.QuantizeSettings] | None,
              evaluate: Callable[[Path], Accuracy], options: BuildOptions, steps: Steps,
              metadata: dict[str, object], calibration: list[Feeds], feeds: Feeds) -> Path:
    """The quantize step: the model to build on, and what was really applied in ``metadata``;
    ``candidates``: ``auto``'s tries (None: ``settings`` alone)."""
    auto = candidates is not None
    title = f"auto, objective {options.objective}" if auto else settings.label
    with steps.step(f"quantize ({title})") as note:
        if auto:
            chosen = quant_auto.choose(current, work, candidates, evaluate, options.thresholds,
                                       calibration, feeds, options.objective, options.budget_s,
                                       options.level if options.optimize else "basic", note)
            settings, result, path = chosen.settings, chosen.result, chosen.path
        else:
            path = work / "quantized.onnx"
            result = quantize.tune(current, path, settings, evaluate, options.thresholds,
                                   on_attempt=note, calibration=calibration)
        label = f"auto → {settings.name}" if auto else settings.label
        fp32 = sum(result.counts["fp32"].values())
        applied = {"op_types": list(quantize.op_types(settings)), **settings.applied(),
                   "fp32_nodes": list(result.fp32), "nodes": result.counts,
                   "graph": result.graph, "tuned_on": quant_methods.cpu()}
        if settings.label in quant_methods.CALIBRATED:
            applied["calibration_samples"] = len(calibration)
        if result.smoothing:
            applied["smoothing"] = result.smoothing
        if result.awq:
            applied["awq"] = result.awq
        if auto:
            applied["auto"] = {"objective": options.objective, "budget_s": options.budget_s,
                               "tries": chosen.tries}
        if not result.quantized:
            note.title = (f"quantize: nothing quantized (all {fp32} candidate node(s) had to "
                          "stay fp32 to pass the gate)")
            metadata["quantization"] = {"type": "none", "reason": "every candidate node kept "
                                        "fp32 to pass the accuracy gate", **applied}
            return current
        note.title = (f"quantize ({label}: {result.quantized} node(s) quantized, {fp32} "
                      "kept fp32)")
        # int8-dynamic keeps the type manifests had before the menu ("dynamic-int8").
        kind = "dynamic-int8" if settings.method == "int8-dynamic" else settings.method
        metadata["quantization"] = {"type": kind, "method": settings.label, **applied}
        return path


def _runs_alone(metadata: dict[str, object], pipeline: str) -> bool:
    """Whether the chosen quantization shares an activation scale across the batch on a
    pipeline that can then run each item alone (``handler.manifest.RUNS_ALONE``)."""
    quantization = metadata.get("quantization")
    method = quantization.get("method") if isinstance(quantization, dict) else None
    return (pipeline in RUNS_ALONE and method in quant_methods.BY_LABEL
            and not quant_methods.BY_LABEL[method].batch_invariant)


def _batch_one(feeds: Feeds) -> Feeds:
    """The first item of an example's sample batch (each of its inputs is batch-major)."""
    return {name: value[:1] if value.ndim else value for name, value in feeds.items()}


def _runner(model: Path | bytes) -> Callable[[Feeds], dict[str, np.ndarray]]:
    """A session on a file or a serialized model."""
    return signature.runner(signature.cpu_session(model))


def _quantize_settings(spec: ModelSpec, options: BuildOptions) -> quantize.QuantizeSettings | None:
    method = options.quantize
    if method == "none" or (method is None and spec.quantize is None):
        return None
    settings = spec.quantize or quantize.QuantizeSettings()
    if method not in (None, "auto"):
        settings = settings.switched(method)
    return _overridden(settings, options)


def _overridden(settings: quantize.QuantizeSettings, options: BuildOptions
                ) -> quantize.QuantizeSettings:
    """``settings`` with what the command line sets."""
    changes = {"op_types": options.quantize_ops, "max_fp32_nodes": options.max_fp32_nodes,
               "algo": options.algo, "block_size": options.block_size,
               "symmetric": options.symmetric, "smooth": options.smooth,
               "reduce_range": options.reduce_range}
    return dataclasses.replace(settings, **{k: v for k, v in changes.items() if v is not None})


def _auto_candidates(spec: ModelSpec, options: BuildOptions,
                     settings: quantize.QuantizeSettings | None
                     ) -> list[quantize.QuantizeSettings] | None:
    """``auto``'s tries: the whole menu for ``--quantize auto``; the example's own set for the
    objective when the command line names no method; None: one method (or none)."""
    if settings is None:
        return None
    if options.quantize == "auto":
        return quant_auto.menu(settings, options.objective, spec.pipeline)
    own = spec.auto_tries.get(options.objective, ()) if options.quantize is None else ()
    return [_overridden(candidate, options) for candidate in own] or None
