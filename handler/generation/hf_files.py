"""The Hugging Face files that say how to use a language model, read the way transformers reads
them, and the rule where two of them disagree.

- Chat template: ``chat_template.jinja`` (transformers >= 4.43 saves it there), else
  ``chat_template.json`` (``{"chat_template": ...}``, a processor's file), else
  ``tokenizer_config.json``'s ``chat_template`` (a string, or a list of named templates: the one
  named ``default``). A separate file wins over the config's entry, as in transformers.
- Special tokens: ``tokenizer_config.json``'s ``bos_token`` / ``eos_token``, else
  ``special_tokens_map.json``'s.
- End of sequence: every id that any file names stops generation: the pipeline option
  ``eos_token_ids`` (build-model writes the union below), ``generation_config.json``'s
  ``eos_token_id`` (an id or a list), ``config.json``'s, the tokenizer's ``eos_token``, and an
  instruct model's turn-end token (``TURN_ENDS``) where the chat template writes it: a chat
  answer ends at the turn's end even when the tokenizer names another EOS (Llama 3's
  ``<|end_of_text|>`` beside ``<|eot_id|>``).
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

# the turn-end tokens of the common chat formats: ChatML (SmolLM, Qwen), Llama 3, Phi-3, Gemma
TURN_ENDS = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>")
TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")


class FileError(ValueError):
    """A settings file that exists but cannot be read."""


def read_json(path: str) -> dict[str, Any]:
    """A settings file, {} when absent."""
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise FileError(f"cannot read {path}: {exc}") from exc
    return data if isinstance(data, dict) else {}


def special_tokens(path_of: Callable[[str], str]) -> dict[str, Any]:
    """``tokenizer_config.json`` with ``special_tokens_map.json``'s tokens where it has none."""
    settings = read_json(path_of("tokenizer_config.json"))
    mapped = read_json(path_of("special_tokens_map.json"))
    return {**{k: v for k, v in mapped.items() if k.endswith("_token")}, **settings}


def chat_template(path_of: Callable[[str], str], settings: Mapping[str, Any]) -> str | None:
    """The chat template's source by the rule above, or None."""
    jinja = path_of(TEMPLATE_FILES[0])
    if os.path.isfile(jinja):
        try:
            with open(jinja, encoding="utf-8") as fh:
                return fh.read() or None
        except (OSError, UnicodeDecodeError) as exc:
            raise FileError(f"cannot read {jinja}: {exc}") from exc
    template = read_json(path_of(TEMPLATE_FILES[1])).get("chat_template",
                                                         settings.get("chat_template"))
    if isinstance(template, list):  # [{"name": "default", "template": ...}, ...]
        template = next((t.get("template") for t in template
                         if isinstance(t, dict) and t.get("name") == "default"), None)
    return template if isinstance(template, str) and template else None


def eos_ids(configured: tuple[Any, ...], tokenizer: Any, eos_token: str,
            template: str | None) -> set[int]:
    """The ids that end generation: each of ``configured`` (an id or a list: the option, the
    configs' ``eos_token_id``), the tokenizer's ``eos_token`` and the turn-end tokens the
    template writes."""
    ids: set[int] = set()
    for value in configured:
        values = [value] if isinstance(value, int) else value if isinstance(value, list) else []
        ids.update(i for i in values if isinstance(i, int) and not isinstance(i, bool))
    names = [eos_token] if eos_token else []
    names += [t for t in TURN_ENDS if template and t in template]
    for name in names:
        found = tokenizer.token_to_id(name)
        if found is not None:
            ids.add(found)
    return ids
