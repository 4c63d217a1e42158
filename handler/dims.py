"""Which symbolic dimension names tie axes together.

ONNX lets an axis carry a ``dim_param``: axes with the same name must have the same size. But
exporters also write names that mean only "unknown": ``?`` and ``None`` (many converters), an
empty string, ``unk__12`` (tf2onnx), ``p2o.DynamicDimension.3`` (paddle2onnx). Two axes both named
``?`` are not tied; treating them as one symbol rejects valid inputs. So only a *shared* name ties
axes: one that is not empty and not one of those placeholders. The name itself is still shown to
users (``/health``, metadata, errors) so they can see which axes are tied.
"""

from __future__ import annotations

import re

# Placeholders for "unknown size": never a constraint between axes.
ANONYMOUS = frozenset({"", "?", "None", "none", "null", "-1", "unk", "unknown", "dynamic"})
# Generated per-axis names: a prefix and a counter, unique to one axis by construction.
_GENERATED = re.compile(r"(unk__|p2o\.DynamicDimension\.|DynamicDimension\.?)\d+")


def is_shared(dim: object) -> bool:
    """True for a ``dim_param`` that ties every axis carrying it (see the module docstring)."""
    return (isinstance(dim, str) and dim.strip() not in ANONYMOUS
            and _GENERATED.fullmatch(dim.strip()) is None)
