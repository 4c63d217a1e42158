"""text-embeddings-inference's routes (``handler.api.tei``) behind the real handler: every
request sent and answer received is checked against TEI's own OpenAPI schemas
(tests/support/tei_openapi.json says which version), the vectors against the pipeline's, and
bad requests answer TEI's error shape and statuses."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from onnx_lambda.source_tree import root
from tests.conftest import Context
from tests.functional.test_handler_errors import http_event
from tests.functional.test_openai_embeddings import DIM, MAX_BATCH, build, expected
from tests.support import build_models

SCHEMAS = json.loads((root() / "tests" / "support" / "tei_openapi.json").read_text())["schemas"]
MAX_LENGTH = 6


def conforms(value: Any, schema: str) -> None:
    from openapi_schema_validator import OAS30Validator

    OAS30Validator({"$ref": f"#/components/schemas/{schema}",
                    "components": {"schemas": SCHEMAS}}).validate(value)


@pytest.fixture(scope="module")
def text_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    return build(tmp_path_factory.mktemp("text"), f"max_length={MAX_LENGTH}")


@pytest.fixture
def service(text_model: tuple[Path, np.ndarray], make_service: Callable[..., Any]) -> Any:
    return make_service(text_model[0])


def call(service: Any, path: str, body: Any = None, method: str = "POST",
         request_schema: str | None = None) -> tuple[int, Any]:
    if request_schema:
        conforms(body, request_schema)
    raw = body if isinstance(body, str) else json.dumps(body)
    result = service(http_event(method, path, raw), Context("req-1"))
    answer = json.loads(result["body"])
    if result["statusCode"] >= 400:
        conforms(answer, "ErrorResponse")
    return result["statusCode"], answer


@pytest.mark.parametrize("inputs", ["hello world", ["hello world", "the cat sat", "dog"]])
def test_embed_answers_the_pipelines_vectors_in_teis_shape(
        service: Any, text_model: tuple[Path, np.ndarray], inputs: Any) -> None:
    status, answer = call(service, "/embed", {"inputs": inputs}, request_schema="EmbedRequest")
    assert status == 200
    conforms(answer, "EmbedResponse")
    sentences = [inputs] if isinstance(inputs, str) else inputs
    np.testing.assert_allclose(answer, [expected(s, text_model[1]) for s in sentences],
                               rtol=1e-5, atol=1e-6)


def test_truncation_is_refused_unless_asked_and_cuts_from_the_side_asked(
        service: Any, text_model: tuple[Path, np.ndarray]) -> None:
    words = "the cat sat on the mat dog runs"  # 8 words: over MAX_LENGTH tokens
    status, answer = call(service, "/embed", {"inputs": words}, request_schema="EmbedRequest")
    assert status == 422 and answer["error_type"] == "Validation"
    assert answer["error"] == ("Input validation error: `inputs` must have less than "
                               f"{MAX_LENGTH} tokens. Given: 8")
    table = text_model[1]
    for direction, kept in (("Right", words.split()[:MAX_LENGTH]),
                            ("left", words.split()[-MAX_LENGTH:])):
        status, answer = call(service, "/embed", {"inputs": [words], "truncate": True,
                                                  "truncation_direction": direction})
        assert status == 200
        np.testing.assert_allclose(answer[0], expected(" ".join(kept), table), rtol=1e-5)
    status, answer = call(service, "/embed", {"inputs": "hello"})  # the tokenizer is restored
    np.testing.assert_allclose(answer[0], expected("hello", table), rtol=1e-5)


def test_embed_takes_token_ids_and_dimensions_of_a_matryoshka_model(
        tmp_path: Path, make_service: Callable[..., Any]) -> None:
    folder, table = build(tmp_path, "matryoshka=true")
    service = make_service(folder)
    vocab = build_models.VOCAB
    status, answer = call(service, "/embed", {"inputs": [vocab["the"], vocab["cat"]],
                                              "dimensions": 3}, request_schema="EmbedRequest")
    assert status == 200
    short = expected("the cat", table)[:3]
    np.testing.assert_allclose(answer[0], short / np.linalg.norm(short), rtol=1e-5)


def test_tokenize_answers_teis_tokens(service: Any) -> None:
    body = {"inputs": ["hello world", "dog"], "add_special_tokens": True}
    status, answer = call(service, "/tokenize", body, request_schema="TokenizeRequest")
    assert status == 200
    conforms(answer, "TokenizeResponse")
    vocab = build_models.VOCAB
    assert answer == [
        [{"id": vocab["hello"], "text": "hello", "special": False, "start": 0, "stop": 5},
         {"id": vocab["world"], "text": "world", "special": False, "start": 6, "stop": 11}],
        [{"id": vocab["dog"], "text": "dog", "special": False, "start": 0, "stop": 3}]]


def test_info_describes_the_model_and_its_limits(service: Any) -> None:
    status, info = call(service, "/info", method="GET")
    assert status == 200
    conforms(info, "Info")
    assert info["model_id"] == "words" and info["model_type"] == {"embedding": {"pooling":
                                                                                  "mean"}}
    assert info["max_input_length"] == MAX_LENGTH
    assert info["max_client_batch_size"] == MAX_BATCH and info["auto_truncate"] is False


@pytest.mark.parametrize(("path", "body", "status", "error_type", "says"), [
    ("/embed", {"inputs": []}, 400, "Empty", "`inputs` cannot be empty"),
    ("/tokenize", {"inputs": []}, 400, "Empty", "`inputs` cannot be empty"),
    ("/embed", {"inputs": ["hi"] * 10_000}, 422, "Validation",
     f"batch size 10000 > maximum allowed batch size {MAX_BATCH}"),
    ("/embed", {"inputs": "x" * 1_000_000}, 422, "Validation",
     f"must have less than {MAX_LENGTH * 250} characters. Given: 1000000"),
    ("/embed", {"inputs": 5}, 422, "Validation", "`inputs` must be a string"),
    ("/embed", {"inputs": ["hi", 5]}, 422, "Validation", "not a mix"),
    ("/embed", {"inputs": [10**6]}, 422, "Validation", "outside the model's vocabulary"),
    ("/embed", {"inputs": "hi", "normalize": "yes"}, 422, "Validation", "true or false"),
    ("/embed", {"inputs": "hi", "normalize": False}, 422, "Validation", "normalises"),
    ("/embed", {"inputs": "hi", "truncation_direction": ["up"]}, 422, "Validation",
     "'left' or 'right'"),
    ("/embed", {"inputs": "hi", "dimensions": 3}, 422, "Validation", "not trained"),
    ("/embed", {"inputs": "hi", "dimensions": DIM + 1}, 422, "Validation", f"in {DIM}"),
    ("/embed", {"inputs": "hi", "prompt_name": "query"}, 422, "Validation", "no prompts"),
    ("/embed", {"input": "hi"}, 422, "Validation", "unknown field `input`"),
    ("/tokenize", {"inputs": [[1, 2]]}, 422, "Validation", "`inputs` must be a string"),
    ("/embed", "{", 400, "Validation", "malformed JSON"),
])
def test_bad_requests_answer_teis_error_shape_and_leave_the_service_healthy(
        service: Any, path: str, body: Any, status: int, error_type: str, says: str) -> None:
    got, answer = call(service, path, body)
    assert (got, answer["error_type"]) == (status, error_type)
    assert says in answer["error"]
    assert call(service, "/embed", {"inputs": "hi"})[0] == 200


def test_a_model_without_text_is_a_424_backend_error(make_service: Callable[..., Any],
                                                     model_dir: Path) -> None:
    service = make_service(model_dir / "linear.onnx")
    status, answer = call(service, "/embed", {"inputs": "hi"})
    assert (status, answer["error_type"]) == (424, "Backend")
    status, info = call(service, "/info", method="GET")
    assert status == 200 and info["model_id"] == "linear"
