"""The Hugging Face files' rule where two disagree (handler.generation.hf_files): the chat
template from chat_template.jinja over chat_template.json over tokenizer_config.json, special
tokens from tokenizer_config.json over special_tokens_map.json, and every EOS id any file names
plus the chat format's turn-end token."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tokenizers import Tokenizer, models

from handler.generation import hf_files

VOCAB = {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2, "<|eot_id|>": 3, "a": 4}
CHATML = "{% for m in messages %}<|im_start|>{{ m['content'] }}<|im_end|>{% endfor %}"


def _tokenizer() -> Tokenizer:
    return Tokenizer(models.WordLevel(VOCAB, unk_token="a"))


def _path_of(folder: Path) -> Callable[[str], str]:
    return lambda name: str(folder / name)


def test_a_template_file_wins_over_the_configs_entry(tmp_path: Path) -> None:
    path_of = _path_of(tmp_path)
    settings = {"chat_template": "from the config"}
    assert hf_files.chat_template(path_of, settings) == "from the config"
    (tmp_path / "chat_template.json").write_text(json.dumps({"chat_template": "from json"}))
    assert hf_files.chat_template(path_of, settings) == "from json"
    (tmp_path / "chat_template.jinja").write_text("from jinja")
    assert hf_files.chat_template(path_of, settings) == "from jinja"


def test_a_list_of_named_templates_gives_the_default(tmp_path: Path) -> None:
    settings = {"chat_template": [{"name": "tool_use", "template": "tools"},
                                  {"name": "default", "template": "plain"}]}
    assert hf_files.chat_template(_path_of(tmp_path), settings) == "plain"
    assert hf_files.chat_template(_path_of(tmp_path), {}) is None


def test_special_tokens_fall_back_to_the_map(tmp_path: Path) -> None:
    (tmp_path / "special_tokens_map.json").write_text(json.dumps(
        {"bos_token": "<|im_start|>", "eos_token": {"content": "<|endoftext|>"},
         "additional_special_tokens": ["x"]}))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}))
    settings = hf_files.special_tokens(_path_of(tmp_path))
    assert settings["bos_token"] == "<|im_start|>" and settings["eos_token"] == "<|im_end|>"
    assert "additional_special_tokens" not in settings


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "generation_config.json").write_text("{not json")
    with pytest.raises(hf_files.FileError, match=r"generation_config\.json"):
        hf_files.read_json(str(tmp_path / "generation_config.json"))


def test_every_named_eos_and_the_turn_end_the_template_writes_stop() -> None:
    tokenizer = _tokenizer()
    # the tokenizer names <|endoftext|>; the chat template ends a turn with <|im_end|>
    assert hf_files.eos_ids((None, [0, 7], 9), tokenizer, "<|endoftext|>", CHATML) == \
        {0, 7, 9, 2}
    # a template that does not write it: the turn-end token is no EOS
    assert hf_files.eos_ids((None,), tokenizer, "<|endoftext|>", "{{ messages }}") == {0}
    assert hf_files.eos_ids(([True, "2"],), tokenizer, "", None) == set()
