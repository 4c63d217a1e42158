"""The rerank pipeline's pure helpers (``handler.pipelines.reranker``): the sigmoid at extreme
logits, best-first order with ties, and the request checks."""

from __future__ import annotations

import math

import pytest

from handler.errors import InvalidInputError
from handler.pipelines.reranker import check_pair, ranked, raw_scores, sigmoid


@pytest.mark.parametrize(("logit", "score"), [
    (0.0, 0.5), (2.0, 1 / (1 + math.exp(-2.0))), (-2.0, 1 / (1 + math.exp(2.0))),
    (1000.0, 1.0), (-1000.0, 0.0), (-745.0, 5e-324)])
def test_sigmoid_never_overflows(logit: float, score: float) -> None:
    assert sigmoid(logit) == pytest.approx(score, rel=1e-12, abs=0)


def test_ranked_is_best_first_and_keeps_input_order_on_ties() -> None:
    assert ranked([0.1, 0.9, 0.5, 0.9]) == [
        {"index": 1, "score": 0.9}, {"index": 3, "score": 0.9}, {"index": 2, "score": 0.5},
        {"index": 0, "score": 0.1}]


@pytest.mark.parametrize(("query", "texts", "says"), [
    (5, ["a"], "query must be a string"),
    ("q", [], "non-empty list of strings"),
    ("q", "a", "non-empty list of strings"),
    ("q", ["a", None], "non-empty list of strings"),
    ("q", ["a"] * 3, "3 texts: at most 2"),
])
def test_check_pair_refuses_what_is_not_a_query_and_texts(query: object, texts: object,
                                                          says: str) -> None:
    with pytest.raises(InvalidInputError, match=says):
        check_pair(query, texts, 2)


def test_raw_scores_is_a_boolean() -> None:
    assert raw_scores({}) is False and raw_scores({"raw_scores": True}) is True
    with pytest.raises(InvalidInputError, match="true or false"):
        raw_scores({"raw_scores": 1})
