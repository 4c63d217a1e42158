"""The fields of an OpenAI ``/v1/chat/completions`` or ``/v1/completions`` request, checked
(docs/reference/openai-generation.md): each bad value is a 400 naming the field as OpenAI's
``param``, each field OpenAI knows but this function cannot honour is a 400 saying so (never
silently ignored), and a field OpenAI does not know is a 400 as OpenAI's own API answers
(``handler.api.openai.errors.body_of``).

Ranges are OpenAI's: ``temperature`` 0–2, ``top_p`` 0–1, ``stop`` at most 4 sequences,
``frequency_penalty`` / ``presence_penalty`` −2–2.
"""

from __future__ import annotations

from handler.errors import FieldError
from handler.generation.params import GenerationParams, integer, number, stop_sequences

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_SEED = 2**63 - 1  # OpenAI's seed is an int64
ROLES = frozenset({"system", "developer", "user", "assistant"})
MESSAGE_FIELDS = frozenset({"role", "content", "name"})
# Taken from the request, in both routes: sampling, limits, streaming, and our extensions
# (top_k, repetition_penalty: vLLM's and text-generation-inference's names for the same knobs)
SHARED = frozenset({"model", "max_tokens", "temperature", "top_p", "n", "stop", "seed",
                    "stream", "stream_options", "user", "frequency_penalty", "presence_penalty",
                    "logprobs", "logit_bias", "top_k", "repetition_penalty"})
# OpenAI's fields that change nothing here: accepted, unused
IGNORED = frozenset({"user", "safety_identifier", "metadata", "prompt_cache_key",
                     "service_tier"})
# OpenAI's fields this function cannot honour: accepted only with a value that asks for
# nothing (absent, null, false, empty, or the listed neutral value)
UNSUPPORTED_CHAT: dict[str, tuple[Any, ...]] = {
    "tools": (), "tool_choice": ("none", "auto"), "parallel_tool_calls": (True,),
    "functions": (), "function_call": ("none", "auto"), "response_format": ({"type": "text"},),
    "modalities": (["text"],), "audio": (), "prediction": (), "reasoning_effort": (),
    "verbosity": (), "web_search_options": (), "store": (), "top_logprobs": (),
    "moderation": (), "prompt_cache_options": (), "prompt_cache_retention": ()}
UNSUPPORTED_COMPLETION: dict[str, tuple[Any, ...]] = {
    "echo": (), "best_of": (1,), "suffix": ("",)}
CHAT_FIELDS = SHARED | IGNORED | {"messages", "max_completion_tokens"} | set(UNSUPPORTED_CHAT)
COMPLETION_FIELDS = SHARED | IGNORED | {"prompt"} | set(UNSUPPORTED_COMPLETION)


def check_fields(body: dict[str, Any], chat: bool) -> None:
    """Known fields asking for what this function does not do → 400 (the unknown ones:
    ``handler.api.openai.errors.body_of``, given ``CHAT_FIELDS`` or ``COMPLETION_FIELDS``)."""
    unsupported = UNSUPPORTED_CHAT if chat else UNSUPPORTED_COMPLETION
    for name, neutral in unsupported.items():
        value = body.get(name)
        if value not in (None, False, [], {}, "") and value not in neutral:
            raise FieldError(f"'{name}' is not supported by this function (text generation "
                               "only)", name, "unsupported_parameter")
    for name in ("logprobs", "logit_bias"):  # both routes: no log-probabilities, no biases
        if body.get(name) not in (None, False, 0, {}):
            raise FieldError(f"'{name}' is not supported by this function", name,
                               "unsupported_parameter")
    for name in IGNORED & set(body):
        value = body[name]
        if name != "metadata" and not isinstance(value, str | None):
            raise FieldError(f"'{name}' must be a string", name)


def messages(value: Any) -> list[dict[str, Any]]:
    """``messages`` → ``[{"role", "content"[, "name"]}]`` with each content as one string
    (a list of text parts joined by newlines), for the model's chat template."""
    if not isinstance(value, list) or not value:
        raise FieldError("'messages' must be a non-empty list of {role, content} objects",
                           "messages")
    checked = []
    for i, message in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise FieldError(f"{where} must be an object with 'role' and 'content'", where)
        role = message.get("role")
        if role not in ROLES:
            supported = ", ".join(sorted(ROLES))
            raise FieldError(f"{where}.role {role!r:.40} is not supported: one of "
                               f"{supported} (no tools here)", f"{where}.role")
        extra = sorted(set(message) - MESSAGE_FIELDS)
        if extra:
            raise FieldError(f"{where} has fields this function does not support: "
                               f"{', '.join(extra)}", f"{where}.{extra[0]}")
        # "developer" is OpenAI's newer name for "system", which chat templates know
        entry = {"role": "system" if role == "developer" else role,
                 "content": _content(message.get("content"), where)}
        name = message.get("name")
        if name is not None:
            if not isinstance(name, str):
                raise FieldError(f"{where}.name must be a string", f"{where}.name")
            entry["name"] = name
        checked.append(entry)
    return checked


def _content(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for j, part in enumerate(value):
            if not (isinstance(part, dict) and part.get("type") == "text"
                    and isinstance(part.get("text"), str)):
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise FieldError(f"{where}.content[{j}] is a {kind!r:.40} part: this "
                                   "function reads text parts only ({type: 'text', text})",
                                   f"{where}.content")
            texts.append(part["text"])
        return "\n".join(texts)
    raise FieldError(f"{where}.content must be a string or a list of text parts",
                       f"{where}.content")


def prompt(value: Any) -> str:
    """``prompt``: one non-empty string (or a list holding one)."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        value = value[0]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        raise FieldError(f"'prompt' holds {len(value)} prompts: send one per request",
                           "prompt")
    if isinstance(value, list) and value and not isinstance(value[0], str):
        raise FieldError("'prompt' as token ids is not supported: send the text", "prompt")
    if not isinstance(value, str):
        raise FieldError("'prompt' must be a string", "prompt")
    if not value:
        raise FieldError("'prompt' is empty", "prompt")
    return value


def max_tokens(body: dict[str, Any]) -> tuple[int | None, str]:
    """``max_completion_tokens`` (chat) or ``max_tokens``, when given → (value, its name)."""
    newer, older = body.get("max_completion_tokens"), body.get("max_tokens")
    if newer is not None and older is not None and newer != older:
        raise FieldError("give 'max_completion_tokens' or 'max_tokens', not both",
                           "max_tokens")
    name = "max_tokens" if newer is None else "max_completion_tokens"
    value = older if newer is None else newer
    if value is None:
        return None, name
    if value.__class__ is not int or value < 1:
        raise FieldError(f"'{name}' must be a positive integer, got {value!r:.40}", name)
    return value, name


def params(body: dict[str, Any], tokens: int) -> GenerationParams:
    """The sampling fields → ``GenerationParams`` for ``tokens`` new tokens at most."""
    n = body.get("n")
    if n is not None and n != 1:
        raise FieldError(f"'n' must be 1: this function generates one choice per request, "
                           f"got {n!r:.40}", "n")
    for name in ("frequency_penalty", "presence_penalty"):
        value = _number(body, name, -2.0, 2.0, 0.0)
        if value:  # additive penalties: not what the pipeline's multiplicative one does
            raise FieldError(f"'{name}' is not supported (only 0): use the extension field "
                               "'repetition_penalty' (1 = none, 1.1–1.3 typical)", name)
    temperature = _number(body, "temperature", 0.0, 2.0, 1.0)
    top_p = _number(body, "top_p", 0.0, 1.0, 1.0)
    if top_p == 0.0:  # no probability mass kept but the likeliest token's: greedy
        temperature, top_p = 0.0, 1.0
    penalty = body.get("repetition_penalty")
    penalty = 1.0 if penalty is None else number("repetition_penalty", penalty, 0.0, None,
                                                 low_open=True)
    return GenerationParams(
        max_tokens=tokens, temperature=temperature, top_p=top_p,
        top_k=max(_integer(body, "top_k", -1, 2**31 - 1, 0), 0),  # -1: vLLM's "off"
        seed=_integer(body, "seed", -MAX_SEED - 1, MAX_SEED, None),
        repetition_penalty=penalty, stop=stop_sequences(body.get("stop")))


def streaming(body: dict[str, Any]) -> tuple[bool, bool]:
    """``stream``, ``stream_options.include_usage`` → (stream, include usage)."""
    stream = body.get("stream")
    if stream not in (None, True, False):
        raise FieldError("'stream' must be true or false", "stream")
    options = body.get("stream_options")
    if options is None:
        return bool(stream), False
    if not stream:
        raise FieldError("'stream_options' is only allowed when 'stream' is true",
                           "stream_options")
    if not isinstance(options, dict):
        raise FieldError("'stream_options' must be an object", "stream_options")
    extra = sorted(set(options) - {"include_usage", "include_obfuscation"})
    if extra:
        raise FieldError(f"Unrecognized stream option: {', '.join(extra)}",
                           "stream_options")
    usage = options.get("include_usage")
    if usage not in (None, True, False):
        raise FieldError("'stream_options.include_usage' must be true or false",
                           "stream_options.include_usage")
    return True, bool(usage)


def _number(body: dict[str, Any], name: str, low: float, high: float | None,
            default: float) -> float:
    value = body.get(name)
    return default if value is None else number(name, value, low, high)


def _integer(body: dict[str, Any], name: str, low: int, high: int,
             default: int | None) -> Any:
    value = body.get(name)
    return default if value is None else integer(name, value, low, high)
