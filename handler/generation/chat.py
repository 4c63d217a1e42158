"""OpenAI-style messages → a prompt, through the model's own Jinja chat template (the
``chat_template`` of its ``tokenizer_config.json``), rendered the way transformers'
``apply_chat_template`` renders it: ``trim_blocks``, ``lstrip_blocks``, loop controls,
``raise_exception``, ``strftime_now``, its ``tojson`` (no HTML escaping),
``bos_token``/``eos_token`` and ``add_generation_prompt``.

The template is the artifact's, not the caller's, but still code: it runs in jinja2's immutable
sandbox (no attribute access to internals, no mutation of the messages).
"""

from __future__ import annotations

import json
import time

from handler.errors import InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ROLES = ("system", "user", "assistant", "tool", "developer")


class ChatTemplate:
    def __init__(self, source: str, bos_token: str, eos_token: str) -> None:
        # jinja2 (~30 ms of imports) for generative models with a template only
        from jinja2.exceptions import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message: str) -> None:
            raise TemplateError(message)

        def tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None,
                   separators: Any = None, sort_keys: bool = False) -> str:
            # transformers' own: no HTML escaping (jinja2's tojson writes \u003c for "<")
            return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent,
                              separators=separators, sort_keys=sort_keys)

        def strftime_now(format: str) -> str:  # Llama 3.x templates date their system turn
            return time.strftime(format)

        environment = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
        environment.filters["tojson"] = tojson
        environment.globals.update(raise_exception=raise_exception, strftime_now=strftime_now)
        self.template = environment.from_string(source)
        self.error: type[Exception] = TemplateError
        self.tokens = {"bos_token": bos_token, "eos_token": eos_token}

    def render(self, messages: list[dict[str, Any]]) -> str:
        """The prompt for ``messages`` with the assistant's turn opened."""
        checked = [_message(m, i) for i, m in enumerate(messages)]
        if not checked:
            raise InvalidInputError("messages is empty: send at least one message")
        try:
            return str(self.template.render(messages=checked, add_generation_prompt=True,
                                            **self.tokens))
        except self.error as exc:
            raise InvalidInputError(f"the model's chat template rejects these messages: "
                                    f"{exc}") from None


def _message(message: Any, index: int) -> dict[str, Any]:
    """A message with ``role`` and text ``content`` (OpenAI's text parts joined)."""
    if not isinstance(message, dict):
        raise InvalidInputError(f"messages[{index}] must be an object")
    role, content = message.get("role"), message.get("content")
    if role not in ROLES:
        raise InvalidInputError(f"messages[{index}].role must be one of {', '.join(ROLES)}")
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        if not all(isinstance(p, dict) and p.get("type") == "text"
                   and isinstance(p.get("text"), str) for p in content):
            raise InvalidInputError(f"messages[{index}].content parts must be text parts")
        content = "".join(p["text"] for p in content)
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise InvalidInputError(f"messages[{index}].content must be a string or text parts")
    return {**message, "role": role, "content": content}
