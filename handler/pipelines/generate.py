"""Text generation with a decoder-only model: ``{"inputs": "prompt", "parameters": {...}}`` →
``{"generated_text", "finish_reason", "usage"}`` on ``/predict``; the OpenAI routes call
``encode`` / ``render_chat`` / ``generate`` themselves and stream the steps.

The model is a decoder in the common ONNX layout (``handler.generation.layout``); beside it in the
artifact: ``tokenizer.json``, and the Hugging Face files that say how to use it —
``tokenizer_config.json`` (``chat_template``, ``bos_token``, ``eos_token``),
``generation_config.json`` (``eos_token_id``) and ``config.json`` (``max_position_embeddings``).
Pipeline options (build-model writes them into the manifest) take precedence:
``context_length``, ``eos_token_ids``, ``tokenizer``, ``head_dim`` (where the signature leaves it
symbolic: onnxruntime-genai's exports).

``parameters``: ``max_tokens`` (default 256, capped by the context), ``temperature`` (1; 0 is
greedy), ``top_p``, ``top_k``, ``seed``, ``repetition_penalty``, ``stop``
(``handler.generation.params``), and ``details`` (true: the prompt's and the answer's token ids).
"""

from __future__ import annotations

from collections.abc import Mapping

from handler.errors import InvalidInputError, ModelLoadError
from handler.generation import hf_files
from handler.generation.decoder import Decoder
from handler.generation.layout import LayoutError, recognise
from handler.generation.params import GenerationParams, Step, from_parameters
from handler.manifest import tokenizer_file
from handler.model import Model
from handler.ort.tensor import Tensor, from_values
from handler.pipelines.base import Pipeline
from handler.pipelines.text_inputs import REQUIREMENTS_HINT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from handler.settings import Settings

# config.json's names for the longest sequence, by model family
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


class GeneratePipeline(Pipeline):
    name = "generate"

    def __init__(self, model: Model, options: Mapping[str, Any]) -> None:
        super().__init__(model, options)
        artifact = model.artifact
        try:
            self.layout = recognise(model.session.inputs, model.session.outputs,
                                    self.options.get("head_dim"))
        except LayoutError as exc:
            raise ModelLoadError(f"generate pipeline: {artifact.path}: {exc}") from None
        try:  # (the Hugging Face files and the rule where they disagree: hf_files)
            settings = hf_files.special_tokens(artifact.file)
            generation = hf_files.read_json(artifact.file("generation_config.json"))
            config = hf_files.read_json(artifact.file("config.json"))
            template = self.options.get("chat_template") or hf_files.chat_template(
                artifact.file, settings)
        except hf_files.FileError as exc:
            raise ModelLoadError(f"generate pipeline: {exc}") from exc
        self.tokenizer = _tokenizer(artifact.file(tokenizer_file(self.options)))
        self.bos_token = _token_text(settings.get("bos_token"))
        self.eos_token = _token_text(settings.get("eos_token"))
        self.context_length = _context_length(self.options, config, settings)
        eos_ids = hf_files.eos_ids(
            (self.options.get("eos_token_ids"), generation.get("eos_token_id"),
             config.get("eos_token_id")), self.tokenizer, self.eos_token, template)
        # onnxruntime-genai's export: one past/present buffer (handler.generation.cache)
        genai = hf_files.read_json(artifact.file("genai_config.json")).get("search", {})
        shared = self.options.get("past_present_share_buffer",
                                  isinstance(genai, dict)
                                  and genai.get("past_present_share_buffer") is True)
        self.decoder = Decoder(model.session, self.layout, self.context_length,
                               frozenset(eos_ids), shared=shared is True)
        self.chat: Any = None
        if isinstance(template, str) and template:
            from handler.generation.chat import ChatTemplate  # jinja2: templated models only

            self.chat = ChatTemplate(template, self.bos_token, self.eos_token)
        self.capabilities = frozenset({"predict", "generate", *(("chat",) if self.chat else ())})

    def configure(self, settings: Settings) -> None:
        self.decoder.configure(settings.prefix_cache_mb << 20, settings.prompt_lookup)

    # -- the interface the OpenAI routes use ---------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """Prompt text → ids, with the special tokens the tokenizer adds (a BOS) unless the text
        already starts with them (a chat template that writes its own ``bos_token``)."""
        special = not (self.bos_token and text.startswith(self.bos_token))
        ids: list[int] = self.tokenizer.encode(text, add_special_tokens=special).ids
        return ids

    def render_chat(self, messages: list[dict[str, Any]]) -> str:
        if self.chat is None:
            raise InvalidInputError("this model has no chat template (chat_template.jinja, or "
                                    "tokenizer_config.json's chat_template): send a plain "
                                    "prompt")
        if not isinstance(messages, list):
            raise InvalidInputError("messages must be a list of messages")
        rendered: str = self.chat.render(messages)
        return rendered

    def generate(self, prompt_ids: list[int], params: GenerationParams,
                 should_stop: Callable[[], bool]) -> Iterator[Step]:
        return self.decoder.generate(prompt_ids, params, self.tokenizer, should_stop)

    # -- /predict ------------------------------------------------------------------------------

    def answer(self, inputs: Any, parameters: Mapping[str, Any],
               should_stop: Callable[[], bool]) -> dict[str, Any]:
        """One whole generation for ``/predict``."""
        if not isinstance(inputs, str) or not inputs:
            raise InvalidInputError('"inputs" must be a non-empty prompt string')
        params = from_parameters(parameters, self.context_length, extra=("details",))
        details = parameters.get("details", False)
        if not isinstance(details, bool):
            raise InvalidInputError(f"details must be true or false, got {details!r}")
        prompt = self.encode(inputs)
        parts: list[str] = []
        tokens: list[int] = []
        reason = None
        for step in self.generate(prompt, params, should_stop):
            parts.append(step.text)
            tokens += step.token_ids
            reason = step.finish_reason
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(tokens),
                 "total_tokens": len(prompt) + len(tokens)}
        answer: dict[str, Any] = {"generated_text": "".join(parts), "finish_reason": reason,
                                  "usage": usage}
        if details:  # (text-generation-inference's name for the same)
            answer["details"] = {"prompt_token_ids": prompt, "token_ids": tokens}
        return answer

    def preprocess(self, inputs: Any, parameters: Mapping[str, Any]) -> dict[str, Tensor]:
        """A prefill's feeds (an empty cache) for ``inputs``: the warm-up's one run."""
        ids = self.encode(inputs if isinstance(inputs, str) and inputs else "Hello")
        layout, count = self.layout, len(ids)
        dtype = layout.ids_dtype
        feeds = {"input_ids": from_values(dtype, (1, count), ids)}
        if layout.attention_mask:
            feeds["attention_mask"] = from_values(dtype, (1, count), [1] * count)
        if layout.position_ids:
            feeds["position_ids"] = from_values(dtype, (1, count), list(range(count)))
        empty = Tensor(layout.kv_dtype, (1, layout.kv_heads, 0, layout.head_dim), b"")
        feeds.update(dict.fromkeys(layout.inputs()[len(feeds):], empty))
        return feeds

    def postprocess(self, outputs: dict[str, Any], parameters: Mapping[str, Any],
                    feeds: Mapping[str, Any]) -> Any:
        raise InvalidInputError("the generate pipeline answers through its decode loop")

    def example(self) -> Any:
        return "Hello"


def _tokenizer(path: str) -> Any:
    # tokenizers (a Rust extension) for text models only: see text_inputs
    from handler.pipelines import tokenizer_files

    try:
        tokenizer = tokenizer_files.load(path)
    except ImportError:
        raise ModelLoadError(f"the generate pipeline needs tokenizers: {REQUIREMENTS_HINT}"
                             ) from None
    except Exception as exc:  # tokenizers raises a bare Exception for missing/corrupt files
        raise ModelLoadError(f"generate pipeline: cannot load {path}: {exc}") from exc
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _token_text(token: Any) -> str:
    """tokenizer_config.json writes a special token as text or as {"content": text, ...}."""
    if isinstance(token, dict):
        token = token.get("content")
    return token if isinstance(token, str) else ""


def _context_length(options: Mapping[str, Any], config: Mapping[str, Any],
                    settings: Mapping[str, Any]) -> int:
    for value in (options.get("context_length"), *(config.get(k) for k in CONTEXT_KEYS),
                  settings.get("model_max_length")):
        # (tokenizer_config's "no limit" is a huge sentinel, not a context length)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 24:
            return value
    raise ModelLoadError("generate pipeline: the context length is unknown: set the "
                         "context_length pipeline option, or ship config.json "
                         "(max_position_embeddings)")


PIPELINE = GeneratePipeline
