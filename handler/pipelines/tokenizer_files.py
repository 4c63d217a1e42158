"""A text model's tokenizer from its artifact files, at the least init cost that gives the same
tokens (callgrind on MiniLM: the tokenizer was a third of ours' cold init).

- ``tokenizers``: its Rust extension (``tokenizers.tokenizers``, the module the package's
  ``__init__`` re-exports) is loaded on its own, as ``import`` itself would load it, and kept in
  ``sys.modules`` under that name, so a later ``import tokenizers`` builds the package around
  the same module. The ``__init__`` imports ``typing`` and a dozen pure-Python shims (the
  ``implementations`` classes, the ``.pyi``-typed aliases) the pipeline never uses: in a bare
  interpreter ~75 M instructions against ~10 M for the extension alone, ~23 M of MiniLM's init
  (which imports ``enum`` and the like anyway). Any other layout, or a package already
  imported, takes the plain ``import tokenizers``.
- ``vocabulary``: a WordPiece tokenizer that ``onnx-lambda build-model`` split in two
  (``onnx_lambda.build_model.tokenizer_split``): a tokenizer.json whose model keeps only the
  added tokens' entries, and its vocabulary as a ``vocab.txt`` read by ``WordPiece.from_file``
  (one line per id). ``Tokenizer.from_file`` on the whole file parses the model's section
  into a generic JSON tree first and then builds the 30,522-entry vocabulary from the tree.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EXTENSION = "tokenizers.tokenizers"


def tokenizers_module() -> Any:
    """The module that defines ``Tokenizer`` and ``models``: the extension, or the package."""
    for name in ("tokenizers", EXTENSION):
        if name in sys.modules:
            return sys.modules[name]
    module = _extension()
    if module is None:
        import tokenizers  # another layout (or a finder of its own): the package's own import

        module = tokenizers
    return module


def _extension() -> Any:
    """``tokenizers.tokenizers`` loaded by its own loader, or None where it is not a plain
    extension file inside the ``tokenizers`` package folder."""
    from importlib.machinery import ExtensionFileLoader, PathFinder
    from importlib.util import module_from_spec

    package = PathFinder.find_spec("tokenizers")
    if package is None or not package.submodule_search_locations:
        return None
    spec = PathFinder.find_spec(EXTENSION, package.submodule_search_locations)
    if spec is None or not isinstance(spec.loader, ExtensionFileLoader):
        return None
    module = module_from_spec(spec)  # runs the extension's init (PyO3: once per process)
    spec.loader.exec_module(module)
    if not (hasattr(module, "Tokenizer") and hasattr(module, "models")):
        raise ImportError(f"{spec.origin}: no Tokenizer in the tokenizers extension")
    sys.modules[EXTENSION] = module
    return module


def load(path: str, vocabulary: str | None = None) -> Any:
    """The ``Tokenizer`` of ``path``; with ``vocabulary``, its WordPiece model's vocabulary
    read from that file (one token a line, the line number its id)."""
    module = tokenizers_module()
    tokenizer = module.Tokenizer.from_file(path)
    if vocabulary is not None:
        model = tokenizer.model
        if not isinstance(model, module.models.WordPiece):
            raise ValueError(f"a vocabulary file is for a WordPiece model, not "
                             f"{type(model).__name__}")
        tokenizer.model = module.models.WordPiece.from_file(
            vocabulary, unk_token=model.unk_token,
            continuing_subword_prefix=model.continuing_subword_prefix,
            max_input_chars_per_word=model.max_input_chars_per_word)
    return tokenizer
