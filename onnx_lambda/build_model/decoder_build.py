"""``build-model`` for a decoder-only language model: recognise its layout, ship its tokenizer
and Hugging Face settings beside it, quantize its weights (optional; weight-only, the
``quant_methods`` records marked ``decoder``) behind a gate measured on generated tokens, and
record in the manifest what the ``generate`` pipeline needs.

The layout is read from the ONNX signature by the handler's own ``recognise``
(``handler.generation.layout``): a model the pipeline cannot run is refused here with the same
message that says what was expected. The files beside the source that the pipeline reads
(``llm_folder.HF_FILES``: the tokenizer, the chat template, the generation and model configs)
are shipped when present; ``tokenizer.json`` is required. The artifact holds one model file,
the optimized or the staged one, whichever decodes faster (``llm_package``).

The gate — greedy token agreement with the fp32 model over a fixed prompt set. For each of
``GATE_PROMPTS`` the fp32 model's greedy continuation of ``GATE_TOKENS`` tokens is the reference;
the candidate reads the same text (teacher forcing: prompt, then the reference tokens one by one)
and at each position its own greedy choice is compared with the reference's next token. The score
is the share of positions that agree, over all prompts. Teacher forcing scores every position on
the same context, so one early flip does not count as 32 (free-running prefix agreement is
reported beside it). The default threshold (``Thresholds.token_agreement``) is 0.90: a
position where the quantized model picks another token is almost always one where fp32's two
best tokens were nearly tied (interchangeable continuations); at one flip in ten the text is
still the model's own, while a broken quantization (a wrong scale, a lost layer) drops far
below it. Random-weight decoders, whose logits are nearly flat, measured 0.72 (512-token
vocabulary) and 0.23 (32,000) with int4 RTN, and fail it, as they should.
``--min-token-agreement`` overrides it.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import onnxruntime as ort

from handler.artifact import resolve
from handler.bootstrap import graph_optimization
from handler.errors import ModelLoadError
from handler.generation.cache import KVCache
from handler.generation.decoder import Decoder
from handler.generation.layout import DecoderLayout, LayoutError, recognise
from handler.manifest import Manifest
from handler.model import Model, first_line, threads_for, visible_cpus
from handler.ort import capi
from handler.ort.session import Session
from onnx_lambda.build_model import llm_graph, llm_package, package, quant_methods, signature
from onnx_lambda.build_model.errors import (
    AccuracyGateError,
    BuildError,
    InvalidModelError,
    NothingToQuantizeError,
)
from onnx_lambda.build_model.gate import Accuracy
from onnx_lambda.build_model.llm_folder import HF_FILES
from onnx_lambda.build_model.llm_package import save
from onnx_lambda.build_model.measure import Figures, folder_size
from onnx_lambda.build_model.progress import Steps
from onnx_lambda.build_model.spec import BuildOptions, ModelSpec
from onnx_lambda.build_model.vocab_projection import last_position_logits
from onnx_lambda.examples.sentences import SENTENCES

GATE_PROMPTS = SENTENCES[:8]
# The prompts the decoder defaults below were chosen on (benchmarks/decoder_quant.py: SmolLM2,
# 24 greedy tokens each): none of them judges a build.
CHOICE_PROMPTS = SENTENCES[8:16]
GATE_TOKENS = 32
# What the decoder build takes: the records that say so (weight-only: nothing calibrates on
# feeds, which a decoder's cache would need), and int4's default algorithm for a decoder.
METHODS = (*dict.fromkeys(r.method for r in quant_methods.RECORDS if r.decoder), "none")
DECODER_ALGOS = tuple(r.algo for r in quant_methods.RECORDS if r.decoder and r.algo)
# int4's algorithm for a decoder, chosen on SmolLM2-135M-Instruct (CHOICE_PROMPTS, 24 greedy
# tokens, teacher-forced agreement with fp32; 1 thread, tokens/s over fp32's): mixed (minmax
# blocks, the vocabulary projection in 8 bits) 0.969 at 2.32x; minmax alone 0.833; hqq 0.78;
# rtn 0.64-0.68 at 3.3x, onnxruntime-genai's int4 0.65 at 3.4x; int8-weights 0.948 at 1.98x
# (docs/how-to/quantize.md).
DECODER_ALGO = "mixed"
RUNNABLE = ("To get one that runs, from the Hugging Face checkpoint: `onnx-lambda build-model "
            "CHECKPOINT -o OUT` (it exports and checks it), or `python -m "
            "onnxruntime_genai.models.builder -i CHECKPOINT -o EXPORT -p fp32 -e cpu` then "
            "`onnx-lambda build-model EXPORT -o OUT`")
TIMED_TOKENS = 12  # the optimized file against the source (llm_package.keep_faster)


def is_decoder(source: Path) -> bool:
    """Whether the graph has a key/value cache input (the decoder layouts' mark)."""
    return any(i.name.startswith("past_key_values.")
               for i in signature.parse(source).graph.input)


@dataclass(frozen=True)
class Agreement:
    forced: float  # teacher-forced share of positions that agree
    prefix: float  # free-running: the mean share of tokens before the first difference
    worst: float  # the lowest prompt's teacher-forced share
    positions: int

    def to_dict(self) -> dict[str, Any]:
        return {"token_agreement": round(self.forced, 4), "prefix_agreement":
                round(self.prefix, 4), "worst_prompt": round(self.worst, 4),
                "positions": self.positions, "prompts": len(GATE_PROMPTS)}


def build(spec: ModelSpec, staging: Path, work: Path, options: BuildOptions,
          steps: Steps) -> tuple[Manifest, Figures, Figures, Accuracy]:
    with steps.step("inspect (decoder)") as note:
        inputs, outputs = signature.graph_infos(signature.parse(spec.source))
        given = _symbolic_head(inputs, spec)
        try:
            layout = recognise(inputs, outputs, given)
        except LayoutError as exc:
            raise InvalidModelError(f"{spec.source}: not a decoder the generate pipeline runs: "
                                    f"{exc}. {RUNNABLE}") from None
        note(f"{layout.layers} layers, {layout.kv_heads} key/value heads × {layout.head_dim}, "
             f"{layout.kv_dtype} cache")
    files = _files(spec)
    method = options.quantize or "none"
    if method not in METHODS:
        raise BuildError(f"--quantize {method}: a decoder is quantized weight-only, "
                         f"--quantize {' | '.join(METHODS)}")
    threshold = options.thresholds.token_agreement
    tokenizer = _tokenizer(files["tokenizer.json"])
    prompts = [tokenizer.encode(p).ids for p in GATE_PROMPTS]
    try:  # (the first session on the source: onnxruntime's verdict on it)
        reference = _Runner(spec.source, layout)
    except capi.OrtError as exc:
        raise InvalidModelError(f"{spec.source}: onnxruntime cannot load it: "
                                f"{first_line(exc)}") from None
    with steps.step("reference: fp32 greedy tokens") as note:
        references = [reference.greedy(p, GATE_TOKENS) for p in prompts]
        note(f"{len(prompts)} prompts × {GATE_TOKENS} tokens")
    current, metadata = spec.source, dict(spec.metadata)
    if method != "none":
        algo = (options.algo or DECODER_ALGO) if method == "int4" else None
        record = quant_methods.record(method, algo)
        with steps.step(f"quantize ({record.label}, weight-only)") as note:
            current = work / "quantized.onnx"
            if not record.decoder:  # they calibrate on feeds: a decoder's need a cache
                raise BuildError(f"--algo {algo}: a decoder's int4 is {' or '.join(DECODER_ALGOS)}"
                                 " here (gptq and awq calibrate on sample feeds, which this "
                                 "build does not make for a decoder yet)")
            matmuls = work / "matmul.onnx"
            rewritten = gemm_as_matmul(spec.source, matmuls)
            quant_methods.apply(method, matmuls if rewritten else spec.source, current,
                                op_types=("MatMul",),
                                per_channel=False, reduce_range=False, algo=algo or "rtn",
                                block_size=options.block_size or 32,
                                symmetric=True if options.symmetric is None else options.symmetric,
                                keep_fp32_ops=(), calibration=[], candidates=[])
            blocks = sum(n.op_type == "MatMulNBits"
                         for n in signature.parse(current).graph.node)
            if not blocks:
                raise NothingToQuantizeError(
                    f"{spec.source}: {record.label} found no MatMul or Gemm with constant "
                    "weights to quantize: build it fp32")
            agreement = _Runner(current, layout).agreement(prompts, references)
            metadata["quantization"] = {"type": method, "method": record.label,
                                        "nodes": blocks, "gemm_as_matmul": rewritten,
                                        "block_size": options.block_size or 32,
                                        "gate": agreement.to_dict(), "threshold": threshold}
            note(f"token agreement {agreement.forced:.3f} (threshold {threshold})")
            if agreement.forced < threshold:
                raise AccuracyGateError(
                    f"{record.label} fails the generation gate: greedy token agreement with the "
                    f"fp32 model {agreement.forced:.3f} < {threshold} (worst prompt "
                    f"{agreement.worst:.3f}, free-running prefix {agreement.prefix:.3f}); keep "
                    "it fp32, or lower --min-token-agreement knowingly")
    with steps.step("logits of the last position only") as note:
        last = work / "last.onnx"
        if spec.pipeline_options.get("all_logits") is True:  # prompt lookup checks drafts
            if current == spec.source:  # (package copies one file: the data comes inside)
                import onnx

                current = work / "all.onnx"
                save(onnx.load(str(spec.source)), current)
            note("not applied: the pipeline option all_logits keeps every position's logits")
        elif blocks := last_position_logits(current, last, layout):
            current = last
            metadata["last_position_logits"] = True
            note("the vocabulary projection runs on the last position, not the whole prompt")
            if blocks > 1:  # (vocab_split: the load's peak memory)
                metadata["vocabulary_blocks"] = blocks
                note(f"... in {blocks} column blocks: loading peaks one block above the weights")
        else:
            note("not applied: logits is not a MatMul of [batch, sequence, hidden] states")
    with steps.step("package") as note:
        llm_package.stage(current, staging)
        for name, path in files.items():
            shutil.copyfile(path, staging / name)
        chosen = llm_package.keep_faster(
            staging, package.loaded_file(staging, options, note),
            lambda path: _Runner(path, layout).timer(prompts[0], TIMED_TOKENS), note)
        if chosen == package.PORTABLE:
            options = replace(options, optimize=False)  # (the manifest: not optimized)
        manifest = package.manifest(
            staging, spec.name, chosen, options, inputs=inputs, outputs=outputs,
            pipeline="generate", pipeline_options={
                **spec.pipeline_options, **({"head_dim": given} if given else {}),
                **_shared_cache(spec.source)},
            example=spec.example or "Hello", metadata=metadata)
        manifest.dump(staging)
    with steps.step("verify: the artifact as the runtime loads it") as note:
        pipeline, load_ms = _load_artifact(staging)
        shipped = _Runner(None, layout, decoder=pipeline.decoder)
        agreement = shipped.agreement(prompts, references)
        note(f"token agreement {agreement.forced:.3f}, prefix {agreement.prefix:.3f}")
        if agreement.forced < threshold:  # (offline optimization changed what it chooses)
            raise AccuracyGateError(f"the built artifact's greedy tokens differ from the "
                                    f"source's: agreement {agreement.forced:.3f} < {threshold}")
        metadata["decoder"] = {
            **layout.summary(), "context_length": pipeline.context_length,
            "eos_token_ids": sorted(pipeline.decoder.eos_ids),
            "bos_token": pipeline.bos_token or None, "chat_template": pipeline.chat is not None}
        metadata["build"] = {"accuracy": agreement.to_dict()}
        options_out = {**manifest.pipeline_options, "context_length": pipeline.context_length,
                       "eos_token_ids": sorted(pipeline.decoder.eos_ids)}
        manifest = manifest._replace(metadata=metadata, pipeline_options=options_out)
        manifest.dump(staging)
    size = sum(p.stat().st_size for p in (spec.source, spec.source.with_name(
        f"{spec.source.name}.data")) if p.is_file())  # (with an export's external data)
    before = Figures(size, reference.load_ms, reference.ms_per_token())
    after = Figures(folder_size(staging), load_ms, shipped.ms_per_token())
    accuracy = Accuracy(None, None, None, agreement.forced, agreement.positions,
                        compared=("greedy tokens (teacher-forced agreement)",))
    return manifest, before, after, accuracy


def _symbolic_head(inputs: tuple[Any, ...], spec: ModelSpec) -> int | None:
    """The head size where the signature leaves it symbolic (onnxruntime-genai's cache), read
    from the files beside the source or its graph (``llm_graph``); None where it is fixed."""
    first = next((i for i in inputs if i.name == "past_key_values.0.key"), None)
    if first is None or len(first.shape) != 4 or isinstance(first.shape[3], int):
        return None
    given = spec.pipeline_options.get("head_dim")  # --pipeline-option head_dim=N wins
    return given if given is not None else llm_graph.head_size(
        spec.source, signature.parse(spec.source))


def _shared_cache(source: Path) -> dict[str, bool]:
    """``past_present_share_buffer`` for a graph whose attention is ``GroupQueryAttention``: its
    kernel writes new positions in place when past and present are one buffer
    (``handler.generation.cache``)."""
    graph = signature.parse(source).graph
    shared = any(n.op_type == "GroupQueryAttention" for n in graph.node)
    return {"past_present_share_buffer": True} if shared else {}


def gemm_as_matmul(source: Path, target: Path) -> int:
    """Rewrite each ``Gemm`` whose weights are a constant (``alpha`` 1, ``A`` untransposed) as
    ``MatMul`` (+ ``Add`` of its bias): int4's ``MatMulNBits`` takes MatMuls only, and GPT-2-style
    exports project with Gemm (its ``Conv1D`` layers). Saved to ``target``; → how many."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    weights = {i.name: i for i in graph.initializer}
    nodes, count, transposed = [], 0, set()
    for node in graph.node:
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if (node.op_type != "Gemm" or node.input[1] not in weights
                or attributes.get("alpha", 1.0) != 1.0 or attributes.get("transA", 0)):
            nodes.append(node)
            continue
        weight = node.input[1]
        if attributes.get("transB", 0) and weight not in transposed:  # [N, K] → [K, N]
            flipped = numpy_helper.to_array(weights[weight]).T.copy()
            weights[weight].CopyFrom(numpy_helper.from_array(flipped, weight))
            transposed.add(weight)
        bias = node.input[2] if len(node.input) > 2 and node.input[2] else ""
        product = f"{node.output[0]}_matmul" if bias else node.output[0]
        nodes.append(helper.make_node("MatMul", [node.input[0], weight], [product],
                                      name=f"{node.name}_matmul"))
        if bias:
            if attributes.get("beta", 1.0) != 1.0:
                scaled = f"{bias}_beta"
                graph.initializer.append(numpy_helper.from_array(
                    numpy_helper.to_array(weights[bias]) * attributes["beta"], scaled))
                bias = scaled
            nodes.append(helper.make_node("Add", [product, bias], [node.output[0]],
                                          name=f"{node.name}_bias"))
        count += 1
    if count:
        del graph.node[:]
        graph.node.extend(nodes)
        save(model, target)
    return count


class _Runner:
    """Greedy decoding on the handler's own decode path (C API, the cache as OrtValues)."""

    def __init__(self, path: Path | None, layout: DecoderLayout,
                 decoder: Decoder | None = None) -> None:
        started = time.perf_counter()
        if decoder is None:
            assert path is not None
            session = Session(str(path), intra_op_threads=threads_for(None, visible_cpus()))
            decoder = Decoder(session, layout, 1 << 20, frozenset())
        self.load_ms = (time.perf_counter() - started) * 1000.0
        self.decoder, self.layout = decoder, layout
        self._step_ms: list[float] = []

    def _cache(self, length: int) -> KVCache:
        return KVCache(self.decoder.runner, self.layout, length)

    def _choose(self, cache: KVCache) -> int:
        argmax = self.decoder.argmax
        if argmax is not None:
            return argmax.choose(cache.logits)
        row = cache.row()
        return row.index(max(row))

    def greedy(self, prompt: list[int], count: int) -> list[int]:
        cache = self._cache(len(prompt) + count)
        try:
            cache.forward(prompt)
            tokens: list[int] = []
            for _ in range(count):
                tokens.append(self._choose(cache))
                started = time.perf_counter()
                cache.forward([tokens[-1]])
                self._step_ms.append((time.perf_counter() - started) * 1000.0)
            return tokens
        finally:
            cache.close()

    def forced(self, prompt: list[int], reference: list[int]) -> list[bool]:
        """Whether this model's greedy choice equals ``reference``'s next token, at each
        position, reading the prompt and then the reference tokens one by one."""
        cache = self._cache(len(prompt) + len(reference))
        try:
            cache.forward(prompt)
            hits = []
            for token in reference:
                hits.append(self._choose(cache) == token)
                cache.forward([token])
            return hits
        finally:
            cache.close()

    def agreement(self, prompts: list[list[int]], references: list[list[int]]) -> Agreement:
        """Teacher-forced agreement, and the free-running prefix read off the same pass: up to
        the first miss the model's own tokens are the reference's, so a free-running decode
        makes the same forward calls on a cache of the same length (``greedy``) and the same
        choices, the miss included."""
        hits = [self.forced(p, r) for p, r in zip(prompts, references, strict=True)]
        prefixes = [next((i for i, hit in enumerate(h) if not hit), len(h)) / len(h)
                    for h in hits]
        positions = sum(len(h) for h in hits)
        return Agreement(sum(map(sum, hits)) / positions, sum(prefixes) / len(prefixes),
                         min(sum(h) / len(h) for h in hits), positions)

    def timer(self, prompt: list[int], count: int) -> Callable[[], float]:
        """A function that decodes ``count`` greedy tokens and returns their median ms."""
        def run() -> float:
            self._step_ms.clear()
            self.greedy(prompt, count)
            return self.ms_per_token()

        return run

    def ms_per_token(self) -> float:
        times = sorted(self._step_ms)
        return times[len(times) // 2] if times else 0.0


def _files(spec: ModelSpec) -> dict[str, Path]:
    files = dict(spec.files)
    for name in HF_FILES:
        beside = spec.source.parent / name
        if name not in files and beside.is_file():
            files[name] = beside
    if "tokenizer.json" not in files:
        raise BuildError(f"{spec.source}: a decoder needs its tokenizer.json (beside the model, "
                         "or --file PATH/tokenizer.json)")
    return files


def _tokenizer(path: Path) -> Any:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))


def _load_artifact(folder: Path) -> tuple[Any, float]:
    """The built folder through the handler (resolve, Model, the generate pipeline)."""
    from handler.pipelines.generate import GeneratePipeline

    started = time.perf_counter()
    try:
        artifact = resolve(str(folder), ort_version=ort.__version__, verify="never",
                           cache_dir=str(folder))
        model = Model(artifact, threads=threads_for(None, visible_cpus()),
                      graph_optimization=graph_optimization("auto", "generate"))
        pipeline = GeneratePipeline(model, artifact.manifest.pipeline_options
                                    if artifact.manifest else {})
    except ModelLoadError as exc:
        raise BuildError(f"the built decoder does not load in the handler: {exc}") from exc
    return pipeline, (time.perf_counter() - started) * 1000.0
