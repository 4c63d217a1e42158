"""Shapes declared by a request (V2 ``shape``, an ``.npy`` header), checked before anything is
sized from them."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


MAX_RANK = 64  # numpy's
MAX_DIM = 2**63 - 1  # numpy's intp: a bigger dim cannot exist, and 64 of them made math.prod,
# and the int → str of its result in a message, take most of a second (or fail outright)


def is_shape(shape: Any) -> bool:
    """A list or tuple of at most MAX_RANK integers (not booleans) in 0..MAX_DIM."""
    return (isinstance(shape, (list, tuple)) and len(shape) <= MAX_RANK
            and all(type(d) is int and 0 <= d <= MAX_DIM for d in shape))
