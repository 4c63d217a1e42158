"""The text examples' three sets of texts: ``gate_texts()`` (tuned on by half, judged on by
the other half) and ``UNSEEN`` (judged on by the acceptance bench only). A text in both would
judge what it tuned: the bench's "unseen" figure would then be one the build had seen."""

from __future__ import annotations

from onnx_lambda.examples.sentences import SENTENCES, UNSEEN, gate_texts


def test_unseen_texts_share_nothing_with_the_gate_texts() -> None:
    gate = {text.casefold().strip() for text in gate_texts()}
    assert not [text for text in UNSEEN if text.casefold().strip() in gate]
    assert len(set(UNSEEN)) == len(UNSEEN) == 40


def test_the_gate_texts_keep_every_sentence_once() -> None:
    texts = gate_texts()
    assert len(set(texts)) == len(texts) and set(SENTENCES) <= set(texts)
