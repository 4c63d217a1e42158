"""OpenAI's embeddings API (``handler.api.openai``) behind the real handler, on a word-level
text model whose token vectors are rows of a known table: the vectors, OpenAI's answer and
error shapes, ``dimensions``, token-id inputs, and bad requests as 4xx in OpenAI's shape."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from onnx_lambda.cli import main
from tests.conftest import Context
from tests.functional.test_handler_errors import http_event
from tests.support import build_models

DIM = 8
MAX_BATCH = 4


def build(folder: Path, *options: str) -> tuple[Path, np.ndarray]:
    source, table = build_models.token_embeddings(folder / "tokens.onnx", dim=DIM)
    tokenizer = build_models.word_tokenizer(folder / "tokenizer.json")
    out = folder / "model"
    extra = [arg for option in options for arg in ("--pipeline-option", option)]
    assert main(["build-model", str(source), "-o", str(out), "--pipeline", "text-embedding",
                 "--file", str(tokenizer), "--name", "words",
                 "--pipeline-option", f"max_batch={MAX_BATCH}", *extra]) == 0
    return out, table


@pytest.fixture(scope="module")
def text_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    return build(tmp_path_factory.mktemp("text"))


@pytest.fixture
def service(text_model: tuple[Path, np.ndarray], make_service: Callable[..., Any]) -> Any:
    return make_service(text_model[0])


def expected(sentence: str, table: np.ndarray) -> np.ndarray:
    ids = [build_models.VOCAB.get(w, build_models.VOCAB["[UNK]"]) for w in sentence.split()]
    vector = table[ids].mean(axis=0)
    return vector / np.linalg.norm(vector)


def call(service: Any, body: Any, path: str = "/v1/embeddings", method: str = "POST",
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    raw = body if isinstance(body, str) else json.dumps(body)
    result = service(http_event(method, path, raw, headers), Context("req-1"))
    return result["statusCode"], json.loads(result["body"])


def vectors(answer: dict[str, Any]) -> np.ndarray:
    rows = [item["embedding"] for item in answer["data"]]
    if isinstance(rows[0], str):
        return np.array([np.frombuffer(base64.b64decode(r), "<f4") for r in rows])
    return np.array(rows, dtype=np.float32)


def test_embeddings_answer_in_openais_shape_with_the_pipelines_vectors(
        service: Any, text_model: tuple[Path, np.ndarray]) -> None:
    sentences = ["hello world", "the cat sat on the mat", "dog"]
    status, answer = call(service, {"input": sentences, "model": "words"})
    assert status == 200
    assert answer["object"] == "list" and answer["model"] == "words"
    assert [(d["object"], d["index"]) for d in answer["data"]] == [("embedding", 0),
                                                                    ("embedding", 1),
                                                                    ("embedding", 2)]
    assert answer["usage"] == {"prompt_tokens": 2 + 6 + 1, "total_tokens": 9}
    for sentence, vector in zip(sentences, vectors(answer), strict=True):
        np.testing.assert_allclose(vector, expected(sentence, text_model[1]), rtol=1e-5,
                                   atol=1e-6)
    predicted = service({"inputs": sentences}, Context())["embeddings"]
    np.testing.assert_array_equal(vectors(answer), np.array(predicted, np.float32))


def test_base64_is_the_float32_bytes_of_the_float_answer(service: Any) -> None:
    body = {"input": "hello world", "model": "words"}
    _, decimals = call(service, body)
    status, packed = call(service, {**body, "encoding_format": "base64"})
    assert status == 200 and isinstance(packed["data"][0]["embedding"], str)
    np.testing.assert_array_equal(vectors(packed), vectors(decimals))


def test_more_inputs_than_a_batch_run_in_batches_and_keep_their_order(
        service: Any, text_model: tuple[Path, np.ndarray]) -> None:
    words = list(build_models.VOCAB)[2:]
    sentences = [" ".join(words[: 1 + i % 5]) for i in range(3 * MAX_BATCH + 1)]
    status, answer = call(service, {"input": sentences, "model": "words"})
    assert status == 200 and [d["index"] for d in answer["data"]] == list(range(len(sentences)))
    for sentence, vector in zip(sentences, vectors(answer), strict=True):
        np.testing.assert_allclose(vector, expected(sentence, text_model[1]), rtol=1e-5,
                                   atol=1e-6)


def test_token_ids_embed_as_their_words(service: Any) -> None:
    vocab = build_models.VOCAB
    ids = [[vocab["hello"], vocab["world"]], [vocab["dog"]]]
    _, by_text = call(service, {"input": ["hello world", "dog"], "model": "words"})
    status, by_ids = call(service, {"input": ids, "model": "words"})
    assert status == 200 and by_ids["usage"]["prompt_tokens"] == 3
    np.testing.assert_allclose(vectors(by_ids), vectors(by_text), rtol=1e-6)
    _, one = call(service, {"input": ids[0], "model": "words"})
    np.testing.assert_allclose(vectors(one), vectors(by_text)[:1], rtol=1e-6)


def test_dimensions_shorten_and_renormalise_a_matryoshka_model(
        tmp_path: Path, make_service: Callable[..., Any]) -> None:
    folder, table = build(tmp_path, "matryoshka=true")
    service = make_service(folder)
    for encoding in ("float", "base64"):
        status, answer = call(service, {"input": "the cat", "model": "words", "dimensions": 3,
                                        "encoding_format": encoding})
        assert status == 200
        short = expected("the cat", table)[:3]
        np.testing.assert_allclose(vectors(answer)[0], short / np.linalg.norm(short),
                                   rtol=1e-5)
    status, answer = call(service, {"input": "the cat", "model": "words", "dimensions": DIM})
    assert status == 200 and len(answer["data"][0]["embedding"]) == DIM


def test_models_list_and_card(service: Any) -> None:
    status, listing = call(service, None, "/v1/models", "GET")
    assert status == 200 and listing["object"] == "list"
    (card,) = listing["data"]
    assert card["id"] == "words" and card["object"] == "model" and card["owned_by"]
    assert isinstance(card["created"], int)
    assert call(service, None, "/v1/models/words", "GET") == (200, card)
    status, missing = call(service, None, "/v1/models/other", "GET")
    assert status == 404 and missing["error"]["code"] == "model_not_found"


@pytest.mark.parametrize(("body", "status", "param", "says"), [
    ({"input": "hi", "model": "gpt"}, 404, "model", "'gpt' does not exist"),
    ({"input": "hi"}, 400, "model", "'model' must be a string"),
    ({"input": [], "model": "words"}, 400, "input", "non-empty"),
    ({"input": ["hi"] * 10_000, "model": "words"}, 400, "input", "at most 2048"),
    ({"input": "x" * 1_000_000, "model": "words"}, 400, "input", "1000000 characters"),
    ({"input": "", "model": "words"}, 400, "input", "input[0] is empty"),
    ({"input": ["hi", 3], "model": "words"}, 400, "input", "input[1] is not a string"),
    ({"input": {"text": "hi"}, "model": "words"}, 400, "input", "'input' must be"),
    ({"input": [[1, 2], "hi"], "model": "words"}, 400, "input", "input[1] is not"),
    ({"input": [1.5], "model": "words"}, 400, "input", "token ids"),
    ({"input": [True], "model": "words"}, 400, "input", "token ids"),
    ({"input": [10**6], "model": "words"}, 400, "input", "outside the model's vocabulary"),
    ({"input": "hi", "model": "words", "encoding_format": "int8"}, 400, "encoding_format",
     "'float' or 'base64'"),
    ({"input": "hi", "model": "words", "dimensions": 3}, 400, "dimensions",
     "not trained for shortened"),
    ({"input": "hi", "model": "words", "dimensions": 0}, 400, "dimensions", "positive"),
    ({"input": "hi", "model": "words", "dimensions": DIM + 1}, 400, "dimensions",
     f"embeds in {DIM}"),
    ({"input": "hi", "model": "words", "user": 5}, 400, "user", "'user' must be"),
    ({"input": "hi", "model": "words", "temperature": 1}, 400, "temperature", "Unrecognized"),
    ("[1, 2", 400, None, "malformed JSON"),
    ([1, 2], 400, None, "JSON object"),
])
def test_bad_requests_are_4xx_in_openais_shape_and_leave_the_service_healthy(
        service: Any, body: Any, status: int, param: str | None, says: str) -> None:
    got, answer = call(service, body)
    assert got == status
    error = answer["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and error["param"] == param
    assert says in error["message"]
    assert call(service, {"input": "hi", "model": "words"})[0] == 200


def test_unknown_v1_route_and_wrong_method_answer_in_openais_shape(service: Any) -> None:
    status, answer = call(service, {}, "/v1/audio/speech")
    assert status == 404 and "no route" in answer["error"]["message"]
    # a route of generative models: 404 naming the model, as OpenAI answers for a model the
    # endpoint does not serve
    status, answer = call(service, {"model": "words", "messages": [{"role": "user",
                                                                    "content": "hi"}]},
                          "/v1/chat/completions")
    assert status == 404 and answer["error"]["param"] == "model"
    assert "text-embedding model, not a generative one" in answer["error"]["message"]
    status, answer = call(service, None, "/v1/embeddings", "GET")
    assert status == 405 and answer["error"]["type"] == "invalid_request_error"


def test_a_model_that_is_not_a_text_embedding_one_says_so(
        make_service: Callable[..., Any], model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx")
    status, answer = call(service, {"input": "hi", "model": "linear"})
    assert status == 400 and "needs a text-embedding model" in answer["error"]["message"]


def test_api_keys_guard_every_http_route_but_not_direct_invocations(
        text_model: tuple[Path, np.ndarray], make_service: Callable[..., Any]) -> None:
    service = make_service(text_model[0], api_keys=" k1 ,k2,")
    body = {"input": "hi", "model": "words"}
    assert call(service, body, headers={"authorization": "Bearer k2"})[0] == 200
    assert call(service, body, headers={"authorization": "bearer k1"})[0] == 200
    for headers, says in (({}, "missing API key"), ({"authorization": "Bearer k3"}, "invalid"),
                          ({"authorization": "Basic k1"}, "invalid"),
                          ({"authorization": "Bearer "}, "invalid")):
        status, answer = call(service, body, headers=headers)
        assert status == 401 and says in answer["error"]["message"]
        assert answer["error"]["code"] == "invalid_api_key"
    status, answer = call(service, None, "/health", "GET")
    assert status == 401 and answer["error"]["type"] == "Unauthorized"
    assert "embeddings" in service({"inputs": ["hello"]}, Context())


def test_an_answer_over_lambdas_limit_is_a_413_the_sdk_does_not_retry() -> None:
    from handler.api.openai import errors as openai_api
    from handler.errors import ResponseTooLargeError

    answer = openai_api.error(ResponseTooLargeError("the response would be 7000000 bytes"), {})
    assert answer.status == 413
    assert answer.payload["error"]["message"] == "the response would be 7000000 bytes"
