"""Real OpenAI clients against the real handler behind ``template.yaml`` in the emulator: the
``openai`` SDK's ``embeddings.create`` and ``models`` calls, its exceptions carrying our
messages, and LangChain's ``OpenAIEmbeddings`` and LlamaIndex's ``OpenAIEmbedding`` configured
with a base URL, a key and the model (nothing else changed), all giving the ``/predict``
pipeline's vectors."""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from onnx_lambda.emulator import Emulator
from tests.e2e.emulator_support import OPENAI_KEY, openai_sdk, serving_with_key
from tests.support import build_models

pytestmark = pytest.mark.e2e
openai = pytest.importorskip("openai", reason="pip install 'onnx-lambda[test]'")
MODEL = "words"
SENTENCES = ["hello world", "the cat sat on the mat", "dog"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    from onnx_lambda.cli import main

    folder = tmp_path_factory.mktemp("text")
    source, _ = build_models.token_embeddings(folder / "tokens.onnx", dim=32)
    tokenizer = build_models.word_tokenizer(folder / "tokenizer.json")
    assert main(["build-model", str(source), "-o", str(folder / MODEL), "--pipeline",
                 "text-embedding", "--file", str(tokenizer), "--pipeline-option",
                 "matryoshka=true"]) == 0
    emulator = serving_with_key(folder / MODEL)
    with emulator.running():
        yield emulator


@pytest.fixture(scope="module")
def client(served: Emulator) -> Iterator[Any]:
    with openai_sdk(served) as sdk:
        yield sdk


@pytest.fixture(scope="module")
def predicted(served: Emulator) -> np.ndarray:
    """The text-embedding pipeline's own answer through /predict."""
    request = urllib.request.Request(
        f"{served.url}/predict", json.dumps({"inputs": SENTENCES}).encode(),
        {"content-type": "application/json", "authorization": f"Bearer {OPENAI_KEY}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return np.array(json.load(answer)["embeddings"], np.float32)


def cosines(a: Any, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, np.float64)
    return (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.mark.parametrize("encoding", [openai.NOT_GIVEN, "base64", "float"])
def test_sdk_embeds_a_list_as_the_pipeline_does(client: Any, predicted: np.ndarray,
                                                encoding: Any) -> None:
    """The SDK asks for base64 when the caller says nothing, and decodes it itself."""
    answer = client.embeddings.create(input=SENTENCES, model=MODEL, encoding_format=encoding)
    assert answer.model == MODEL and [d.index for d in answer.data] == [0, 1, 2]
    vectors = [d.embedding for d in answer.data]
    if encoding == "base64":  # asked for explicitly, the SDK hands back the text
        vectors = [np.frombuffer(base64.b64decode(v), "<f4") for v in vectors]
    assert cosines(vectors, predicted).min() >= 0.9999
    assert answer.usage.prompt_tokens == answer.usage.total_tokens == 2 + 6 + 1


def test_sdk_embeds_a_string_and_shortens_with_dimensions(client: Any,
                                                          predicted: np.ndarray) -> None:
    one = client.embeddings.create(input="hello world", model=MODEL)
    assert cosines([one.data[0].embedding], predicted[:1]).min() >= 0.9999
    short = client.embeddings.create(input="hello world", model=MODEL, dimensions=8)
    vector = np.array(short.data[0].embedding)
    expected = predicted[0, :8] / np.linalg.norm(predicted[0, :8])
    assert vector.shape == (8,) and cosines([vector], expected[None])[0] >= 0.9999


def test_sdk_lists_and_retrieves_the_model(client: Any) -> None:
    assert [m.id for m in client.models.list()] == [MODEL]
    assert client.models.retrieve(MODEL).owned_by == "onnx-lambda"


def test_sdk_exceptions_carry_our_messages(client: Any, served: Emulator) -> None:
    with pytest.raises(openai.BadRequestError) as bad:
        client.embeddings.create(input=[], model=MODEL)
    assert "'input' must be a non-empty" in bad.value.message and bad.value.param == "input"
    with pytest.raises(openai.NotFoundError) as missing:
        client.embeddings.create(input="hi", model="text-embedding-3-small")
    assert missing.value.code == "model_not_found" and MODEL in missing.value.message
    with pytest.raises(openai.BadRequestError, match="at most 2048"):
        client.embeddings.create(input=["hi"] * 10_000, model=MODEL)
    with pytest.raises(openai.BadRequestError, match="characters"):
        client.embeddings.create(input="word " * 200_000, model=MODEL)
    with (openai_sdk(served, "sk-wrong") as other,
          pytest.raises(openai.AuthenticationError) as denied):
        other.embeddings.create(input="hi", model=MODEL)
    assert denied.value.code == "invalid_api_key" and "invalid API key" in denied.value.message
    assert denied.value.request_id  # our x-request-id header


def test_langchain_embeds_documents_and_a_query(served: Emulator,
                                                predicted: np.ndarray) -> None:
    embeddings_module = pytest.importorskip("langchain_openai")
    # check_embedding_ctx_length=False: otherwise LangChain sends tiktoken's token ids (of
    # OpenAI's vocabulary, not the model's) and needs tiktoken's files from the internet
    embeddings = embeddings_module.OpenAIEmbeddings(
        base_url=f"{served.url}/v1", api_key=OPENAI_KEY, model=MODEL,
        check_embedding_ctx_length=False, max_retries=0)
    documents = embeddings.embed_documents(SENTENCES)
    assert cosines(documents, predicted).min() >= 0.9999
    query = embeddings.embed_query("the cat sat on the mat")
    assert cosines([query], predicted[1:2])[0] >= 0.9999


def test_llama_index_embeds_documents_and_a_query(served: Emulator,
                                                  predicted: np.ndarray) -> None:
    embeddings_module = pytest.importorskip("llama_index.embeddings.openai")
    # model_name, not model: ``model`` must be one of OpenAI's names (an enum); ``model_name``
    # is LlamaIndex's way to name any other deployment's model
    embeddings = embeddings_module.OpenAIEmbedding(
        api_base=f"{served.url}/v1", api_key=OPENAI_KEY, model_name=MODEL, max_retries=0)
    documents = embeddings.get_text_embedding_batch(SENTENCES)
    assert cosines(documents, predicted).min() >= 0.9999
    query = embeddings.get_query_embedding("the cat sat on the mat")
    assert cosines([query], predicted[1:2])[0] >= 0.9999


def test_tiktoken_ids_are_refused_not_embedded_as_garbage(client: Any) -> None:
    """What LangChain sends by default: OpenAI's token ids, far outside a small vocabulary."""
    with pytest.raises(openai.BadRequestError, match="outside the model's vocabulary"):
        client.embeddings.create(input=[[15339, 1917]], model=MODEL)

