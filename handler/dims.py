"""Which symbolic dimension names tie axes together.

ONNX lets an axis carry a ``dim_param``: axes with the same name must have the same size. But
exporters also write names that mean only "unknown": ``?`` and ``None`` (many converters), an
empty string, ``unk__12`` (tf2onnx), ``p2o.DynamicDimension.3`` (paddle2onnx). Two axes both named
``?`` are not tied; treating them as one symbol rejects valid inputs. So only a *shared* name ties
axes: one that is not empty and not one of those placeholders. The name itself is still shown to
users (``/health``, metadata, errors) so they can see which axes are tied.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeGuard

# Placeholders for "unknown size": never a constraint between axes.
ANONYMOUS = frozenset({"", "?", "None", "none", "null", "-1", "unk", "unknown", "dynamic"})
# Generated per-axis names: one of these prefixes and a counter, unique to one axis by
# construction (string tests, not a regular expression: no compile on the cold path)
_GENERATED = ("unk__", "p2o.DynamicDimension.", "DynamicDimension.", "DynamicDimension")


def is_shared(dim: object) -> TypeGuard[str]:
    """True for a ``dim_param`` that ties every axis carrying it (see the module docstring)."""
    if not isinstance(dim, str):
        return False
    name = dim.strip()
    return name not in ANONYMOUS and not any(
        name.startswith(prefix) and name[len(prefix):].isdecimal() for prefix in _GENERATED)
