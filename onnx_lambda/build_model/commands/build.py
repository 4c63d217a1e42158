"""``onnx-lambda build-model SOURCE -o models/NAME``: SOURCE is an ``.onnx`` file, a language
model's folder (a Hugging Face checkpoint, an onnxruntime-genai or optimum export:
``build_model.llm_folder``) or an example name (``digits``, ``minilm``, ``minilm-reranker``,
``tiny-chat``).

build-model exit codes: 0 built, 1 other failure, 2 bad arguments (--example/--shape/--dim that
do not fit included), 3 not a valid ONNX model, 4 unsupported operators, 5 accuracy gate failed,
6 output not writable, 7 no example input runs the model (the message names the error and the
flags to pass), 8 nothing to quantize, 130/143 cancelled by SIGINT/SIGTERM (nothing written)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnx_lambda.build_model.quant_methods import ALGOS, CALIBRATED, METHODS, help_text, label
from onnx_lambda.sizes import human_size

if TYPE_CHECKING:
    from rich.console import Console

    from onnx_lambda.build_model.builder import BuildReport
    from onnx_lambda.build_model.spec import ModelSpec


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "build-model", help="optimize, quantize and package a model for Lambda",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", metavar="SOURCE",
                        help="an .onnx file; a language model's folder (a Hugging Face "
                             "checkpoint, an onnxruntime-genai or optimum export); or: digits, "
                             "minilm, minilm-reranker, tiny-chat")
    parser.add_argument("-o", "--output", required=True, type=Path,
                        help="the model folder to write (e.g. models/NAME)")
    model = parser.add_argument_group("model (for an .onnx SOURCE; examples set their own)")
    model.add_argument("--name", help="model name (default: the output folder's name)")
    model.add_argument("--pipeline",
                       help="tensor | classifier | text-embedding | rerank | generate | "
                            "package.module (default: generate for a decoder with a "
                            "key/value cache, rerank for a cross-encoder shipped with its "
                            "tokenizer.json, else tensor)")
    model.add_argument("--pipeline-option", action="append", default=[], metavar="KEY=JSON",
                       help="a pipeline setting, e.g. max_length=128 (repeatable)")
    model.add_argument("--labels", type=Path, help="a text file, one class label per line")
    model.add_argument("--file", action="append", type=Path, default=[], dest="files",
                       help="a file to ship beside the model, e.g. tokenizer.json (repeatable)")
    given = parser.add_argument_group(
        "example input (default: found from the graph and a ladder of sizes; "
        "see docs/how-to/build-a-model.md)")
    given.add_argument("--example", type=Path, metavar="FILE",
                       help='real input: .npz (one array per input), .npy (a one-input model) '
                            'or JSON {"name": nested list}; may cover some inputs only')
    given.add_argument("--shape", action="append", default=[], metavar="NAME=1x3x640x640",
                       help="an input's shape (repeatable; NAME= for a scalar)")
    given.add_argument("--dim", action="append", default=[], metavar="SYMBOL=N",
                       help="a symbolic dim's size wherever it appears, e.g. batch=1 "
                            "(repeatable)")
    steps = parser.add_argument_group("steps")
    steps.add_argument("--no-optimize", action="store_false", dest="optimize",
                       help="skip the offline onnxruntime optimization")
    steps.add_argument("--opt-level", choices=("basic", "extended", "all"), default="extended",
                       help="offline optimization level (default: extended; 'all' adds "
                            "CPU-specific layouts)")
    steps.add_argument("--ort-format", action="store_true",
                       help="save the optimized model in ORT format (.ort)")
    steps.add_argument("--fuse", choices=("auto", "bert", "none"), default="auto",
                       help="transformer fusions (auto: when the model takes input_ids and "
                            "attention_mask)")
    steps.add_argument("--num-heads", type=int, default=0,
                       help="attention heads, for the Attention fusion (default: detect)")
    steps.add_argument("--hidden-size", type=int, default=0,
                       help="hidden size, for the Attention fusion (default: detect)")
    steps.add_argument("--quantize", nargs="?", const="int8-dynamic", default=None,
                       choices=(*METHODS, "auto", "none"), metavar="METHOD",
                       help=f"quantize, gated: {' | '.join(METHODS)} | auto (--quantize alone: "
                            "int8-dynamic; default: off; minilm: auto over its own "
                            f"variants); put it after SOURCE. {help_text()}")
    steps.add_argument("--objective", choices=("latency", "size"), default="latency",
                       help="--quantize auto keeps the passing method with the lowest batch-1 "
                            "CPU time (latency, default) or the smallest file (size)")
    steps.add_argument("--budget", type=float, default=600.0, metavar="SECONDS",
                       help="--quantize auto starts no further try after this long (600)")
    steps.add_argument("--no-quantize", action="store_const", const="none", dest="quantize",
                       help="no quantization (same as --quantize none)")
    steps.add_argument("--algo", choices=ALGOS,
                       help="int4 weight-only algorithm (default: rtn; "
                            f"{' and '.join(c.split()[1] for c in CALIBRATED if ' ' in c)} "
                            "calibrate, on the calibration split only)")
    steps.add_argument("--block-size", type=_block_size,
                       help="int4, int8-mixed, int8-weights: weights per block, a power of "
                            "two ≥ 16 (default: 32)")
    steps.add_argument("--symmetric", action=argparse.BooleanOptionalAction, default=None,
                       help="int4 rtn, int8-mixed: symmetric blocks, no zero point "
                            "(default: asymmetric)")
    steps.add_argument("--reduce-range", action=argparse.BooleanOptionalAction, default=None,
                       help="int8-dynamic/-mixed/-static: 7-bit weights, so that x86 CPUs "
                            "without VNNI (whose u8s8 kernels saturate 16-bit pair sums) compute "
                            "what the gate measured (default: on; --no-reduce-range: full "
                            "8-bit weights, for CPUs with VNNI or arm64 only)")
    steps.add_argument("--smooth", type=_alpha, metavar="ALPHA",
                       help="activation-aware smoothing (SmoothQuant) before quantizing, any "
                            "method but fp16: per input channel of each MatMul/Attention, s = "
                            "max|X|^ALPHA / max|W|^(1-ALPHA) calibrated on the build's samples, "
                            "X/s and s·W (exact in fp32); 0 < ALPHA < 1, 0 turns it off "
                            "(default: off; minilm: its candidates' own)")
    steps.add_argument("--calibration", type=Path, metavar="FILE",
                       help="more calibration input for int8-static, int4 --algo gptq / awq "
                            "and --smooth: .npz, one array per input (besides the build's own "
                            "samples)")
    steps.add_argument("--quantize-ops", type=lambda s: tuple(s.split(",")),
                       help="operator types to quantize (default: MatMul,Attention)")
    steps.add_argument("--max-fp32-nodes", type=int,
                       help="how many sensitive nodes tuning may keep in fp32 (default: 16)")
    gate = parser.add_argument_group("accuracy gate (outputs vs the unquantized model)")
    gate.add_argument("--min-cosine", type=float, default=0.99, help="mean cosine (0.99)")
    gate.add_argument("--min-cosine-floor", type=float, default=0.98,
                      help="cosine of the worst sample (0.98)")
    gate.add_argument("--min-top1", type=float, default=0.99,
                      help="top-1 agreement, classifiers only (0.99)")
    gate.add_argument("--max-abs-error", type=float, help="gate the max abs error too")
    gate.add_argument("--min-token-agreement", type=float, default=0.90,
                      help="decoders: greedy token agreement with the fp32 model (0.90)")
    parser.set_defaults(func=run)


def _block_size(text: str) -> int:
    value = int(text)
    if value < 16 or value & (value - 1):
        raise argparse.ArgumentTypeError(f"{text}: a power of two ≥ 16 (16, 32, 64, 128, …)")
    return value


def _alpha(text: str) -> float:
    value = float(text)
    if not (0 < value < 1 or value == 0):
        raise argparse.ArgumentTypeError(f"{text}: between 0 and 1 (e.g. 0.5; 0 turns it off)")
    return value


def run(args: argparse.Namespace) -> int:
    # The build stack (onnx, the quantizer, examples' frameworks) is heavy: loaded on use only.
    from rich.console import Console
    from rich.markup import escape

    from onnx_lambda.build_model import output
    from onnx_lambda.build_model.builder import build
    from onnx_lambda.build_model.errors import BuildCancelledError, BuildError
    from onnx_lambda.build_model.gate import Thresholds
    from onnx_lambda.build_model.spec import BuildOptions

    console = Console(stderr=True)
    options = BuildOptions(
        optimize=args.optimize, level=args.opt_level, ort_format=args.ort_format,
        fuse=args.fuse, quantize=args.quantize, quantize_ops=args.quantize_ops,
        max_fp32_nodes=args.max_fp32_nodes, algo=args.algo, block_size=args.block_size,
        symmetric=args.symmetric, smooth=args.smooth, reduce_range=args.reduce_range,
        objective=args.objective,
        budget_s=args.budget,
        thresholds=Thresholds(args.min_cosine, args.min_cosine_floor, args.min_top1,
                              args.max_abs_error, args.min_token_agreement))
    try:
        with output.cancellable(), \
                tempfile.TemporaryDirectory(prefix="onnx-lambda-source-") as workdir:
            if args.smooth and args.quantize in ("fp16", "none"):
                raise _UsageError(f"--smooth applies to the integer methods, not --quantize "
                                  f"{args.quantize}")
            spec = _spec(args, Path(workdir), console)
            if args.calibration is not None:
                options = dataclasses.replace(options, calibration=_calibration(args))
            report = build(spec, args.output, options, console)
    except (BuildError, BuildCancelledError) as exc:
        console.print(f"[red]error:[/red] {escape(exc.message)}", highlight=False, soft_wrap=True)
        return exc.exit_code
    except _UsageError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 2
    _summary(report, console)
    return 0


class _UsageError(Exception):
    pass


def _calibration(args: argparse.Namespace) -> tuple[dict[str, Any], ...]:
    """``--calibration FILE``: one more batch of feeds (the .npz's arrays by input name)."""
    import numpy as np

    if args.quantize != "auto" and not args.smooth and (
            args.quantize is None or label(args.quantize, args.algo) not in CALIBRATED):
        raise _UsageError("--calibration applies to --quantize int8-static, --quantize int4 "
                          "--algo gptq / awq and --smooth (the other methods do not "
                          "calibrate)")
    try:
        with np.load(args.calibration, allow_pickle=False) as archive:
            feeds = {name: archive[name] for name in archive.files}
    except (OSError, ValueError) as exc:
        raise _UsageError(f"--calibration {args.calibration}: not a readable .npz ({exc})") \
            from exc
    if not feeds:
        raise _UsageError(f"--calibration {args.calibration}: holds no array")
    return (feeds,)


def _spec(args: argparse.Namespace, workdir: Path, console: Console) -> ModelSpec:
    from onnx_lambda import examples
    from onnx_lambda.build_model.errors import ExampleArgumentError
    from onnx_lambda.build_model.example import parse as parse_given
    from onnx_lambda.build_model.spec import ModelSpec

    if args.source in examples.NAMES:
        if args.example or args.shape or args.dim:
            raise _UsageError(f"{args.source} brings its own samples: --example, --shape and "
                              "--dim apply to an .onnx SOURCE")
        return examples.prepare(args.source, workdir, console)
    source = Path(args.source)
    if source.is_dir():  # a language model's folder: a checkpoint, a genai or optimum export
        from onnx_lambda.build_model import llm_folder

        return llm_folder.spec_for(source, args.name or args.output.name,
                                   _options(args.pipeline_option), workdir, console)
    if not source.is_file():
        raise _UsageError(f"{source}: no such file or folder, and not an example "
                          f"({', '.join(examples.NAMES)})")
    for path in args.files:
        if not path.is_file():
            raise _UsageError(f"--file {path}: no such file")
    labels = None
    if args.labels is not None:
        try:
            labels = tuple(line.strip() for line in args.labels.read_text().splitlines()
                           if line.strip())
        except OSError as exc:
            raise _UsageError(f"--labels {args.labels}: {exc.strerror}") from exc
    try:
        given = parse_given(args.example, args.shape, args.dim)
    except ExampleArgumentError as exc:
        raise _UsageError(exc.message) from exc
    spec = ModelSpec(source=source, name=args.name or args.output.name,
                     pipeline=args.pipeline or "tensor",
                     pipeline_options=_options(args.pipeline_option), labels=labels,
                     files={p.name: p for p in args.files}, given=given,
                     classifier=args.pipeline == "classifier", num_heads=args.num_heads,
                     hidden_size=args.hidden_size)
    return _reranker(spec, args.pipeline is None, console)


def _reranker(spec: ModelSpec, detect: bool, console: Console) -> ModelSpec:
    """``spec`` as a cross-encoder's (pipeline ``rerank``, its gate) when asked for, or, with
    no ``--pipeline``, when the model is one (``rerank.recognise``)."""
    from onnx_lambda.build_model import rerank, signature

    if spec.pipeline != rerank.PIPELINE and not (detect and rerank.TOKENIZER in spec.files):
        return spec  # (a model without its tokenizer is not parsed twice)
    model = signature.parse(spec.source)
    if spec.pipeline != rerank.PIPELINE:
        why = rerank.recognise(model, spec.files, spec.labels is not None)
        if why is None:
            return spec
        console.print(f"    pipeline rerank: {why} (--pipeline to choose another)",
                      highlight=False)
    try:
        output, _ = rerank.output_of(model)
    except ValueError as exc:
        raise _UsageError(f"--pipeline rerank: {exc}") from None
    return dataclasses.replace(
        spec, pipeline=rerank.PIPELINE, comparable=rerank.comparable(output),
        max_abs_error=rerank.MAX_ABS_ERROR,
        pipeline_options={"output": output, **spec.pipeline_options})


def _options(pairs: list[str]) -> dict[str, Any]:
    options = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise _UsageError(f"--pipeline-option {pair!r}: expected KEY=VALUE")
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw  # a bare string needs no JSON quotes
    return options


def _summary(report: BuildReport, console: Console) -> None:
    from rich.table import Table

    before, after = report.before, report.after
    table = Table(title=f"{report.manifest.name} → {report.output}", title_justify="left")
    table.add_column("")
    table.add_column("source", justify="right")
    table.add_column("artifact", justify="right")
    table.add_column("artifact vs source", justify="right")
    table.add_row("size", human_size(before.size_bytes), human_size(after.size_bytes),
                  _ratio(before.size_bytes, after.size_bytes, "smaller", "larger"))
    table.add_row("session load", f"{before.load_ms:.1f} ms", f"{after.load_ms:.1f} ms",
                  _ratio(before.load_ms, after.load_ms, "faster", "slower"))
    table.add_row("inference p50 (batch 1)", f"{before.p50_ms:.3f} ms", f"{after.p50_ms:.3f} ms",
                  _ratio(before.p50_ms, after.p50_ms, "faster", "slower"))
    console.print(table)
    console.print(f"accuracy vs reference: {report.accuracy.describe()}")
    if "synthetic" in report.accuracy.judged_on:
        console.print("[yellow]![/yellow] judged on synthetic inputs only: pass real ones "
                      "(--calibration FILE.npz, one array per input, or --example) for a gate "
                      "that holds on your data", highlight=False)
    console.print(f"model file: {report.manifest.model} (portable: {report.manifest.portable}); "
                  f"pipeline: {report.manifest.pipeline}; example (the warm-up): "
                  f"{report.manifest.example_file or 'inline in model.json'}", highlight=False)


def _ratio(before: float, after: float, less: str, more: str) -> str:
    """``2.10× smaller`` / ``1.30× larger``: the factor always ≥ 1, the word saying which way
    (a bare before ÷ after read "0.46×" for an artifact larger than its source)."""
    if not before or not after:
        return "–"
    return f"{before / after:.2f}× {less}" if after <= before else f"{after / before:.2f}× {more}"
