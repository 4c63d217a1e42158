"""``onnx_lambda.examples.smollm2._parsed_once``: within it transformers' repeated reads of one
GGUF get one parse, and its per-tensor name tables one table; outside it gguf is as it was."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from onnx_lambda.examples import smollm2


def _tiny_gguf(path: Path) -> Path:
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.arange(8, dtype=np.float32).reshape(4, 2))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_one_parse_per_file_inside_and_gguf_restored_after(tmp_path: Path) -> None:
    import gguf

    path = _tiny_gguf(tmp_path / "tiny.gguf")
    reader, table = gguf.GGUFReader, gguf.get_tensor_name_map
    with smollm2._parsed_once():
        first = gguf.GGUFReader(path)
        assert gguf.GGUFReader(str(path)) is first  # a str or a Path: the same file
        assert [t.name for t in first.tensors] == ["token_embd.weight"]
        names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 1)
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 1) is names
        assert names.get_name("model.embed_tokens.weight", try_suffixes=(".weight",)) == (
            "token_embd.weight")
    assert gguf.GGUFReader is reader and gguf.get_tensor_name_map is table
    assert gguf.GGUFReader(path) is not first
