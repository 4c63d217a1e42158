"""``NamedTuple``'s class syntax without importing ``typing``.

``typing`` costs ≈ 16 M instructions at import (callgrind; ~7 % of the handler's cold init)
and nothing else on the cold path needs it (awslambdaric's bootstrap does not import it):
``handler/`` imports its type names under ``TYPE_CHECKING`` only, and its records come from
here. Type checkers see ``typing.NamedTuple`` itself (the ``TYPE_CHECKING`` branch); at run
time a class is ``collections.namedtuple`` (what ``typing.NamedTuple`` builds too) made from
the class body: its annotations name the fields in order (strings under ``from __future__
import annotations``: never evaluated), their values are the defaults, and every other member
(methods, properties, class attributes, the docstring) is kept. As ``typing``: a field without
a default after one with a default, or a member that would replace what the tuple needs
(``_make``, ``__new__``, …), is a ``TypeError`` / ``AttributeError`` at class creation.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from typing import NamedTuple as NamedTuple
else:
    # namedtuple's own machinery: a class body may not replace it
    _RESERVED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields",
                           "_field_defaults", "_make", "_replace", "_asdict", "_source"})
    _SET_BY_NAMEDTUPLE = frozenset({"__module__", "__qualname__", "__annotations__",
                                    "__classcell__"})

    class _Fields(type):
        def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
            if not bases:  # ``NamedTuple`` itself
                return super().__new__(mcs, name, bases, namespace)
            if bases != (NamedTuple,):
                raise TypeError(f"{name}: a record derives from NamedTuple alone")
            fields = list(namespace.get("__annotations__", {}))
            with_default = [f for f in fields if f in namespace]
            if with_default != fields[len(fields) - len(with_default):]:
                raise TypeError(f"{name}: a field without a default follows "
                                f"{with_default[0]!r}, which has one")
            record = namedtuple(name, fields, defaults=[namespace[f] for f in with_default],
                                module=str(namespace["__module__"]))
            record.__qualname__ = str(namespace["__qualname__"])
            record.__annotations__ = dict(namespace.get("__annotations__", {}))
            for key, value in namespace.items():
                if key in _RESERVED:
                    raise AttributeError(f"{name}: cannot overwrite NamedTuple attribute {key}")
                if key not in _SET_BY_NAMEDTUPLE and key not in fields:
                    setattr(record, key, value)
            if "__classcell__" in namespace:  # a method's ``super()`` / ``__class__``
                namespace["__classcell__"].cell_contents = record
            return record

    class NamedTuple(metaclass=_Fields):
        """Derive a record from this, as from ``typing.NamedTuple``."""
