"""Weight-only quantization of a decoder, side by side in one process (the table of
docs/how-to/quantize.md, "Decoders"):

    python -m benchmarks.decoder_quant GENAI_FP32_FOLDER [--genai-int4 FOLDER] [--tokens 24]
        [--rounds 3]

GENAI_FP32_FOLDER is what onnxruntime-genai's builder writes (``-p fp32 -e cpu``) for a
checkpoint; each int4 algorithm of the decoder build (``quant_methods`` records with
``decoder``) and ``int8-weights`` is applied to its ``model.onnx`` as the build applies it.
For each, and for genai's own int4 export of the same weights when given, at one thread:

- the gate figure, measured the same way on every graph: teacher-forced greedy agreement with
  the fp32 graph over ``decoder_build.CHOICE_PROMPTS`` (the prompts the decoder defaults were
  chosen on; the build's gate judges on ``GATE_PROMPTS``, which chose nothing);
- the chat answer to "What is the capital of France?";
- ``--tokens`` greedy tokens' wall time, each graph timed in fresh processes of its own (one
  warm-up generation, then the timed one; ``--rounds`` processes per graph, the order rotated):
  in one process the model loaded second decodes 15-20 % faster than the first
  (``benchmarks.target_worker``), which would flatter every graph against fp32 loaded first.
  The median, and the speed-up over fp32.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from onnx_lambda.build_model import decoder_build, quant_methods

QUESTION = "What is the capital of France?"
ROUNDS = 3  # fresh processes per graph for the timing


class Greedy:
    """onnxruntime-genai's decoder layout (input_ids, attention_mask, past_key_values.N.*),
    one thread, no spinning."""

    def __init__(self, path: Path, config: dict) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), options,
                                            providers=["CPUExecutionProvider"])
        decoder = config["model"]["decoder"]
        self.layers, self.heads = decoder["num_hidden_layers"], decoder["num_key_value_heads"]
        self.head_size = decoder["head_size"]
        self.names = [o.name for o in self.session.get_outputs()]

    def _forward(self, ids: list[int]) -> np.ndarray:
        self.seen += len(ids)
        feeds = {"input_ids": np.array([ids], np.int64),
                 "attention_mask": np.ones((1, self.seen), np.int64), **self.past}
        outputs = dict(zip(self.names, self.session.run(None, feeds), strict=True))
        self.past = {name: outputs[name.replace("past_key_values", "present")]
                     for name in self.past}
        logits: np.ndarray = outputs["logits"][0, -1]
        return logits

    def _start(self, prompt: list[int]) -> np.ndarray:
        empty = np.zeros((1, self.heads, 0, self.head_size), np.float32)
        self.past = {f"past_key_values.{i}.{kind}": empty for i in range(self.layers)
                     for kind in ("key", "value")}
        self.seen = 0
        return self._forward(prompt)

    def greedy(self, prompt: list[int], count: int) -> list[int]:
        logits, tokens = self._start(prompt), []
        for _ in range(count):
            tokens.append(int(logits.argmax()))
            logits = self._forward(tokens[-1:])
        return tokens

    def agreement(self, prompt: list[int], reference: list[int]) -> float:
        logits, hits = self._start(prompt), 0
        for token in reference:
            hits += int(logits.argmax()) == token
            logits = self._forward([token])
        return hits / len(reference)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--genai-int4", type=Path)
    parser.add_argument("--tokens", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help="fresh processes per graph for the timing")
    args = parser.parse_args(argv)
    from tokenizers import Tokenizer

    config = json.loads((args.folder / "genai_config.json").read_text())
    tok = Tokenizer.from_file(str(args.folder / "tokenizer.json"))
    source = args.folder / "model.onnx"
    work = Path(tempfile.mkdtemp(prefix="decoder-quant-"))
    graphs = {"fp32": source}
    for record in quant_methods.RECORDS:
        if not record.decoder or (record.needs and quant_methods.missing_package(
                record.method, record.algo)):
            continue
        target = work / f"{record.label.replace(' ', '-')}.onnx"
        quant_methods.apply(record.method, source, target, op_types=("MatMul",),
                            per_channel=False, reduce_range=False, algo=record.algo or "rtn",
                            block_size=32, symmetric=True, keep_fp32_ops=(), calibration=[],
                            candidates=[])
        graphs[record.label] = target
    if args.genai_int4:
        graphs["onnxruntime-genai int4"] = args.genai_int4 / "model.onnx"
    chat = tok.encode(f"<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n").ids
    times: dict[str, list[float]] = {name: [] for name in graphs}
    for round_ in range(args.rounds):
        for name in list(graphs) if round_ % 2 == 0 else list(reversed(graphs)):
            times[name].append(_timed_alone(graphs[name], args.folder, chat, args.tokens))
    runs = {name: Greedy(path, config) for name, path in graphs.items()}
    prompts = [tok.encode(p).ids for p in decoder_build.CHOICE_PROMPTS]
    references = [runs["fp32"].greedy(p, args.tokens) for p in prompts]
    base = float(np.median(times["fp32"]))
    print(f"| graph | agreement ({len(prompts)} choice prompts × {args.tokens}) | "
          f"chat answer | {args.tokens} tokens, 1 thread | × fp32 |\n|---|---|---|---|---|")
    for name, run in runs.items():
        agreement = np.mean([run.agreement(p, r) for p, r in zip(prompts, references,
                                                                 strict=True)])
        answer = tok.decode(run.greedy(chat, 12)).replace("\n", "\\n")
        median = float(np.median(times[name]))
        print(f"| {name} | {agreement:.3f} | {answer!r} | {median:.3f} s | "
              f"{base / median:.2f}× |", flush=True)
    return 0


def _timed_alone(path: Path, folder: Path, chat: list[int], tokens: int) -> float:
    """Seconds for ``tokens`` greedy tokens on ``path`` in a fresh process (after a warm-up)."""
    out = subprocess.run([sys.executable, "-m", "benchmarks.decoder_quant", "--time-alone",
                          str(path), str(folder), json.dumps(chat), str(tokens)],
                         check=True, capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    return float(out.split()[-1])


def _time_alone(path: str, folder: str, chat: str, tokens: str) -> None:
    config = json.loads((Path(folder) / "genai_config.json").read_text())
    run, ids = Greedy(Path(path), config), json.loads(chat)
    run.greedy(ids, int(tokens))
    started = time.perf_counter()
    run.greedy(ids, int(tokens))
    print(time.perf_counter() - started)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--time-alone"]:
        _time_alone(*sys.argv[2:6])
        raise SystemExit(0)
    raise SystemExit(main())
