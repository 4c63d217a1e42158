"""A Hugging Face checkpoint folder → an ONNX decoder, checked against transformers.

The exporter: onnxruntime-genai's model builder when it is importable (the ``build-llm`` extra:
``python -m onnxruntime_genai.models.builder -i CHECKPOINT -o OUT -p fp32 -e cpu``; it fuses
attention into ``GroupQueryAttention`` and the norms, the graph genai itself runs), else
``torch.onnx`` in optimum's layout (``torch_export``: ``input_ids``, ``attention_mask``,
optionally ``position_ids``, ``past_key_values.N.key|value`` → ``logits``,
``present.N.key|value``): first its TorchScript exporter, as optimum's own ``export onnx`` runs
it (SmolLM2-135M: ~20 s of CPU), and only where that fails or its export fails the check, the
dynamo exporter (~210 s; torch's future default, and the one that traces what TorchScript
cannot). A build from a checkpoint always takes fp32 here; ``--quantize int4`` quantizes the
export afterwards behind the generation gate.

The check (``check``): transformers and the export read the same tokens; the prefill's logits
at every position and one decode step's (the export's own cache fed back) must agree within
``TOLERANCE`` of the logits' scale (the largest |logit|, at least 1). genai's fp32 SmolLM2-135M
export differs by 2e-6 of it; a wrong rotary base or a cache fed in the wrong order by ~1.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handler.model import first_line
from onnx_lambda.build_model.errors import BuildError

if TYPE_CHECKING:
    from rich.console import Console

TOLERANCE = 1e-3
PROMPT = "The capital of France is Paris, and the capital of Germany is"
GENAI = "onnxruntime_genai"


def export(checkpoint: Path, workdir: Path, console: Console) -> tuple[Path, dict[str, Any]]:
    """The checked export of ``checkpoint`` in ``workdir``, and what made it (the manifest's
    ``exporter``)."""
    out = workdir / "export"
    if importlib.util.find_spec(GENAI) is not None:
        from importlib.metadata import version

        console.print(f"    exporting {checkpoint} with onnxruntime-genai's model builder",
                      highlight=False)
        command = [sys.executable, "-m", f"{GENAI}.models.builder", "-i", str(checkpoint),
                   "-o", str(out), "-p", "fp32", "-e", "cpu", "-c", str(workdir / "cache")]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode or not (out / "model.onnx").is_file():
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise BuildError(f"{checkpoint}: onnxruntime-genai's builder failed ({last[0]}): "
                             f"run `{' '.join(command[1:])}` to see why")
        exporter = {"name": "onnxruntime-genai", "version": version("onnxruntime-genai")}
        worst, scale = check(checkpoint, out / "model.onnx")
    else:
        console.print(f"    exporting {checkpoint} with torch.onnx (onnxruntime-genai is not "
                      "installed: pip install 'onnx-lambda[build-llm]' for its fused graph)",
                      highlight=False)
        exporter, (worst, scale) = _torch_export_checked(checkpoint, out, console)
    console.print(f"    logits vs transformers: max abs diff {worst:.2g} (scale {scale:.3g}, "
                  f"tolerance {TOLERANCE} of it)", highlight=False)
    return out / "model.onnx", {**exporter, "checkpoint": checkpoint.name,
                                "max_abs_diff": float(f"{worst:.3g}"), "tolerance": TOLERANCE}


def _torch_export_checked(checkpoint: Path, out: Path, console: Console
                          ) -> tuple[dict[str, Any], tuple[float, float]]:
    """TorchScript's export if it exports and passes the check, else dynamo's; → what made it
    and its check."""
    try:
        torch_export(checkpoint, out, dynamo=False)
        worst, scale = check(checkpoint, out / "model.onnx")
        how = "torchscript"
    except Exception as exc:  # any failure of the fast exporter (a trace it cannot take, a torch
        # without it, a wrong graph the check refuses) leaves the slow one to try
        console.print(f"    torch.onnx's TorchScript exporter failed ({first_line(exc)}): "
                      "exporting with its dynamo exporter", highlight=False)
        shutil.rmtree(out, ignore_errors=True)
        torch_export(checkpoint, out, dynamo=True)
        worst, scale = check(checkpoint, out / "model.onnx")
        how = "dynamo"
    return {"name": "torch.onnx", "exporter": how}, (worst, scale)


def _transformers(checkpoint: Path) -> tuple[Any, Any]:
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise BuildError(f"{checkpoint}: a checkpoint is exported and checked with torch and "
                         "transformers: pip install 'onnx-lambda[build-llm]'") from None
    model = AutoModelForCausalLM.from_pretrained(str(checkpoint), dtype=torch.float32)
    return model.eval(), AutoTokenizer.from_pretrained(str(checkpoint))


def torch_export(checkpoint: Path, out: Path, position_ids: bool = True,
                 dynamo: bool = True) -> None:
    """``checkpoint`` exported with ``torch.onnx`` to ``out/model.onnx`` in optimum's layout,
    with or without ``position_ids``. ``dynamo=False``: the TorchScript exporter, as optimum's
    own ``export onnx`` uses it (SmolLM2-135M: 19 s of CPU against the dynamo exporter's
    ~210, the same logits within 7e-5)."""
    import torch

    from onnx_lambda.examples.decoder import flat_model

    model, _ = _transformers(checkpoint)
    config = model.config
    layers = config.num_hidden_layers
    flat = flat_model(model, layers)
    past = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    present = [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    heads, size = _cache_shape(config)
    # batch 2 and a past of 3: torch.export specialises a dimension whose example is 0 or 1
    ids = torch.randint(3, config.vocab_size, (2, 4))
    mask = torch.ones(2, 7, dtype=torch.int64)
    positions = torch.arange(3, 7).expand(2, 4).contiguous()
    cache = [torch.randn(2, heads, 3, size) for _ in past]
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
    length, total = torch.export.Dim("past_sequence_length"), torch.export.Dim("total")
    names = ["input_ids", "attention_mask", *(["position_ids"] if position_ids else [])]
    shapes: list[Any] = [{0: batch, 1: sequence}, {0: batch, 1: total}]
    args: list[Any] = [ids, mask]
    if position_ids:
        shapes.append({0: batch, 1: sequence})
        args.append(positions)
        module: Any = flat
    else:
        module = _without_positions(flat)
    out.mkdir(parents=True, exist_ok=True)
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not dynamo:
            axes: dict[str, dict[int, str]] = {
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "total"},
                **({"position_ids": {0: "batch", 1: "sequence"}} if position_ids else {})}
            axes.update({n: {0: "batch", 2: "past_sequence_length"} for n in past})
            axes.update({n: {0: "batch", 2: "total"} for n in present})
            axes["logits"] = {0: "batch", 1: "sequence"}
            torch.onnx.export(module, (*args, cache), str(out / "model.onnx"),
                              input_names=names + past, output_names=["logits", *present],
                              dynamo=False, dynamic_axes=axes, opset_version=17)
            return
        torch.onnx.export(module, (*args, cache), str(out / "model.onnx"),
                          input_names=names + past, output_names=["logits", *present],
                          dynamo=True, external_data=True, verbose=False,
                          dynamic_shapes=(*shapes, [{0: batch, 2: length} for _ in past]))


def _without_positions(flat: Any) -> Any:
    """``flat`` taking no ``position_ids``: the positions follow from the mask (past + new),
    as optimum's exports without them compute them."""
    import torch

    class NoPositions(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.flat = flat

        def forward(self, input_ids: Any, attention_mask: Any, past: list[Any]) -> Any:
            total, new = attention_mask.shape[1], input_ids.shape[1]
            positions = (torch.cumsum(attention_mask, 1) - 1)[:, total - new:]
            return self.flat(input_ids, attention_mask, positions, past)

    return NoPositions().eval()


def _cache_shape(config: Any) -> tuple[int, int]:
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    size = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return int(heads), int(size)


def check(checkpoint: Path, model_path: Path) -> tuple[float, float]:
    """(the largest |difference|, the scale) of the export's logits to transformers' over a
    prefill and a decode step; raises ``BuildError`` past ``TOLERANCE`` × scale."""
    import numpy as np
    import torch

    from onnx_lambda.build_model.signature import cpu_session

    model, tokenizer = _transformers(checkpoint)
    ids = tokenizer(PROMPT)["input_ids"]
    with torch.inference_mode():
        want = model(torch.tensor([ids])).logits[0].numpy()
    session = cpu_session(model_path)
    names = {i.name: i for i in session.get_inputs()}
    heads, size = _cache_shape(model.config)
    kv_type = np.float16 if "float16" in names["past_key_values.0.key"].type else np.float32
    past = {n: np.zeros((1, heads, 0, size), kv_type) for n in names
            if n.startswith("past_key_values.")}
    rows = []
    for start, stop in ((0, len(ids) - 1), (len(ids) - 1, len(ids))):
        feeds = {"input_ids": np.array([ids[start:stop]], np.int64),
                 "attention_mask": np.ones((1, stop), np.int64), **past}
        if "position_ids" in names:
            feeds["position_ids"] = np.arange(start, stop, dtype=np.int64)[None]
        feeds = {k: v for k, v in feeds.items() if k in names}
        outputs = session.run(None, feeds)
        by_name = dict(zip((o.name for o in session.get_outputs()), outputs, strict=True))
        rows.append(by_name["logits"][0, -(stop - start):].astype(np.float32))
        past = {n.replace("present.", "past_key_values.", 1): v for n, v in by_name.items()
                if n.startswith("present.")}
    got = np.concatenate(rows)
    worst = float(np.abs(got - want).max())
    scale = max(1.0, float(np.abs(want).max()))
    if worst > TOLERANCE * scale:
        raise BuildError(f"{model_path}: the export's logits differ from transformers' on "
                         f"{checkpoint} (max abs diff {worst:.3g} > {TOLERANCE} × {scale:.3g}): "
                         "the exporter misread the checkpoint; export with another tool or "
                         "transformers version")
    return worst, scale
