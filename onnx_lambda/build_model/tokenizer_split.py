"""A WordPiece tokenizer.json split in two files that ``tokenizers`` reads faster at init
(``handler.pipelines.tokenizer_files``): ``tokenizer.base.json`` (the same file, its model's
vocabulary cut to the added tokens' entries) and ``vocab.txt`` (the vocabulary, one token a
line in id order, as ``WordPiece.from_file`` reads it).

The base keeps the added tokens in its vocabulary because ``tokenizers`` gives an added token
the model's id for its text when it loads (an empty vocabulary made a literal ``[CLS]`` in a
sentence id 2, not 101); so the split is made only where every added token is in the
vocabulary, and only once the two files give the same vocabulary, added tokens, ids, masks,
type ids, truncation and padding as the original on ``texts()``. Otherwise (another model
type, a token ``vocab.txt`` cannot hold) the artifact keeps its tokenizer.json alone.

    python -m onnx_lambda.build_model.tokenizer_split ARTIFACT   # an artifact built before
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from handler.manifest import Manifest, tokenizer_file
from handler.pipelines import tokenizer_files
from onnx_lambda.build_model import output

BASE = "tokenizer.base.json"
VOCABULARY = "vocab.txt"
SAMPLES = ("", " ", "\t\n  ", "Hello from AWS Lambda!", "Héllo wörld, café déjà vu.",
           "ÀÉÎÕÜ ñ ç ß ø å æ œ", "日本語のテキストです。", "中文句子，有标点。", "한국어 문장",
           "Ελληνικά κείμενα", "Русский текст", "العربية نص", "עברית", "हिन्दी पाठ",
           "😀 emoji 👍🏽 👨‍👩‍👧 🏳️‍🌈", "tabs\tand\nnewlines\r\n", "zero\u200bwidth\u00a0nbsp",
           "a" * 150, "supercalifragilisticexpialidocious antidisestablishmentarianism",
           "don't won't it's U.S.A. e-mail 3.14 1,000,000 $5 #tag @user",
           "CamelCaseWords and snake_case_words", "\u0301\u0308 combining", "\x00\x1f control",
           "word " * 400)


def texts(count: int = 400, seed: int = 0) -> list[str]:
    """``SAMPLES`` and ``count`` random strings over ASCII, Latin accents, CJK, emoji,
    combining marks and whitespace (deterministic for ``seed``)."""
    ranges = ((0x20, 0x7E), (0xC0, 0x17F), (0x300, 0x36F), (0x4E00, 0x4FFF), (0x3040, 0x30FF),
              (0x1F300, 0x1F64F), (0x400, 0x4FF), (0x600, 0x6FF), (0x2000, 0x206F))
    rng = random.Random(seed)
    generated = []
    for _ in range(count):
        chars = []
        for _ in range(rng.randrange(0, 300)):
            low, high = rng.choice(ranges)
            chars.append(chr(rng.randint(low, high)) if rng.random() < 0.8 else " ")
        generated.append("".join(chars))
    return [*SAMPLES, *generated]


def split(source: Path, folder: Path) -> dict[str, str] | None:
    """Write ``BASE`` and ``VOCABULARY`` for the tokenizer.json ``source`` into ``folder``;
    the pipeline options that name them, or None (nothing left written) where the split would
    not give the same tokens."""
    data = json.loads(source.read_text(encoding="utf-8"))
    model = data.get("model") or {}
    vocab = model.get("vocab")
    if model.get("type") != "WordPiece" or not isinstance(vocab, dict):
        return None
    ordered = sorted(vocab, key=vocab.__getitem__)
    added = {t["content"]: t["id"] for t in data.get("added_tokens") or ()}
    if ([vocab[t] for t in ordered] != list(range(len(ordered)))
            or any(vocab.get(content) != id_ for content, id_ in added.items())):
        return None  # ids with gaps, or added tokens numbered after the vocabulary
    base, vocabulary = folder / BASE, folder / VOCABULARY
    vocabulary.write_text("".join(f"{token}\n" for token in ordered), encoding="utf-8")
    base.write_text(json.dumps({**data, "model": {**model, "vocab": added}}, ensure_ascii=False),
                    encoding="utf-8")
    if _same(source, base, vocabulary):
        return {"tokenizer": BASE, "vocabulary": VOCABULARY}
    base.unlink()
    vocabulary.unlink()
    return None


def _same(source: Path, base: Path, vocabulary: Path) -> bool:
    """Whether the split loads into the tokenizer ``source`` is: as loaded (the file's own
    truncation and padding), then as the pipeline sets it up."""
    whole = tokenizer_files.load(str(source))
    parts = tokenizer_files.load(str(base), str(vocabulary))
    if (whole.get_vocab(with_added_tokens=True) != parts.get_vocab(with_added_tokens=True)
            or whole.get_added_tokens_decoder() != parts.get_added_tokens_decoder()):
        return False
    added = [token.content for token in whole.get_added_tokens_decoder().values()]
    sentences = [*texts(), *added, " ".join(added), "".join(added).lower()]
    batches = [sentences[i:i + 32] for i in range(0, len(sentences), 32)]
    for _ in range(2):
        if any(_encoded(whole.encode_batch(b)) != _encoded(parts.encode_batch(b))
               for b in batches):
            return False
        for tokenizer in (whole, parts):
            tokenizer.enable_truncation(256)
            tokenizer.enable_padding()
    return True


def _encoded(encodings: list[Any]) -> list[tuple[list[int], ...]]:
    return [(e.ids, e.attention_mask, e.type_ids) for e in encodings]


def convert(folder: Path) -> bool:
    """Split the tokenizer of an artifact built before (its manifest updated); whether it did."""
    manifest = Manifest.load(folder)
    options = dict(manifest.pipeline_options)
    if not manifest.takes_text() or "vocabulary" in options:
        return False
    named = split(folder / tokenizer_file(options), folder)
    if named is None:
        return False
    files = {**manifest.files, **{name: output.sha256(folder / name) for name in named.values()}}
    manifest._replace(pipeline_options={**options, **named}, files=dict(sorted(files.items()))
                      ).dump(folder)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("artifact", type=Path)
    args = parser.parse_args(argv)
    done = convert(args.artifact)
    print(f"{args.artifact}: {'split into ' + BASE + ' + ' + VOCABULARY if done else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
