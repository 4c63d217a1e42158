"""``NamedTuple``'s class syntax without importing ``typing``, and without compiling code.

``typing`` costs ≈ 16 M instructions at import (callgrind; ~8 % of the handler's cold init)
and nothing else on the cold path needs it (awslambdaric's bootstrap does not import it):
``handler/`` imports its type names under ``TYPE_CHECKING`` only, and its records come from
here. Type checkers see ``typing.NamedTuple`` itself (the ``TYPE_CHECKING`` branch); at run
time a record is the class ``collections.namedtuple`` would make (a ``tuple`` subclass with the
same members: ``_fields``, ``_field_defaults``, ``_make``, ``_replace``, ``_asdict``, the
``repr``, pickling by ``__getnewargs__``, a C descriptor per field) from the class body: its
annotations name the fields in order (strings under ``from __future__ import annotations``:
never evaluated), their values are the defaults, and every other member (methods, properties,
class attributes, the docstring) is kept. As ``typing``: a field without a default after one
with a default, or a member that would replace what the tuple needs (``_make``, ``__new__``,
…), is a ``TypeError`` / ``AttributeError`` at class creation.

Why not ``namedtuple`` itself: it compiles each record's ``__new__`` from source with ``eval``;
the same class syntax over ``collections.namedtuple`` measured 192.6 M instructions of cold
init against 188.6 M with this module (+2.1 %; digits, ``cold_instructions``, Python 3.11).
Here ``__new__`` is a closure, whose usual call (every field given by position) is one length
check and ``tuple.__new__``.
"""

from __future__ import annotations

from operator import itemgetter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from typing import NamedTuple as NamedTuple
else:
    try:  # namedtuple's own field descriptor, in C
        from _collections import _tuplegetter
    except ImportError:  # another interpreter: what namedtuple falls back to
        def _tuplegetter(index: int, doc: str) -> Any:
            return property(itemgetter(index), doc=doc)

    # the tuple's own machinery: a class body may not replace it
    _RESERVED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields",
                           "_field_defaults", "_make", "_replace", "_asdict", "_source"})
    _SET_HERE = frozenset({"__module__", "__qualname__", "__annotations__", "__classcell__"})
    _tuple_new = tuple.__new__
    _MISSING = object()

    def _constructor(name: str, fields: tuple[str, ...], defaults: tuple[Any, ...]) -> Any:
        count, required = len(fields), len(fields) - len(defaults)
        index = {field: i for i, field in enumerate(fields)}

        def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
            if len(args) == count and not kwargs:  # the usual call
                return _tuple_new(cls, args)
            if len(args) > count:
                raise TypeError(f"{name}() takes {count} positional arguments but "
                                f"{len(args)} were given")
            values = [*args, *[_MISSING] * (count - len(args))]
            for key, value in kwargs.items():
                at = index.get(key)
                if at is None:
                    raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
                if at < len(args):
                    raise TypeError(f"{name}() got multiple values for argument {key!r}")
                values[at] = value
            for at in range(len(args), count):
                if values[at] is _MISSING:
                    if at < required:
                        raise TypeError(f"{name}() missing required argument: "
                                        f"{fields[at]!r}")
                    values[at] = defaults[at - required]
            return _tuple_new(cls, values)

        __new__.__qualname__ = f"{name}.__new__"
        return __new__

    def _make(cls: type, iterable: Any) -> Any:
        result = _tuple_new(cls, iterable)
        if len(result) != len(cls._fields):  # type: ignore[attr-defined]
            raise TypeError(f"Expected {len(cls._fields)} arguments, "  # type: ignore[attr-defined]
                            f"got {len(result)}")
        return result

    def _replace(self: Any, /, **changes: Any) -> Any:
        result = self._make(map(changes.pop, self._fields, self))
        if changes:
            raise ValueError(f"Got unexpected field names: {list(changes)!r}")
        return result

    def __repr__(self: Any) -> str:
        return self.__class__.__name__ + self._repr_format % tuple(self)

    def _asdict(self: Any) -> dict[str, Any]:
        return dict(zip(self._fields, self, strict=True))

    def __getnewargs__(self: Any) -> tuple[Any, ...]:
        return tuple(self)

    _SHARED = {"_make": classmethod(_make), "_replace": _replace, "__repr__": __repr__,
               "_asdict": _asdict, "__getnewargs__": __getnewargs__}

    def _record(name: str, fields: tuple[str, ...], defaults: tuple[Any, ...],
                module: str) -> type:
        namespace: dict[str, Any] = {
            "__doc__": f"{name}({', '.join(fields)})", "__slots__": (), "__module__": module,
            "_fields": fields, "_field_defaults": dict(zip(fields[len(fields) - len(defaults):],
                                                           defaults, strict=True)),
            "__match_args__": fields, "__new__": _constructor(name, fields, defaults),
            "_repr_format": f"({', '.join(f'{field}=%r' for field in fields)})", **_SHARED}
        for i, field in enumerate(fields):
            namespace[field] = _tuplegetter(i, f"Alias for field number {i}")
        return type(name, (tuple,), namespace)

    class _Fields(type):
        def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
            if not bases:  # ``NamedTuple`` itself
                return super().__new__(mcs, name, bases, namespace)
            if bases != (NamedTuple,):
                raise TypeError(f"{name}: a record derives from NamedTuple alone")
            fields = tuple(namespace.get("__annotations__", {}))
            with_default = [f for f in fields if f in namespace]
            if with_default != list(fields[len(fields) - len(with_default):]):
                raise TypeError(f"{name}: a field without a default follows "
                                f"{with_default[0]!r}, which has one")
            record = _record(name, fields, tuple(namespace[f] for f in with_default),
                             str(namespace["__module__"]))
            record.__qualname__ = str(namespace["__qualname__"])
            record.__annotations__ = dict(namespace.get("__annotations__", {}))
            for key, value in namespace.items():
                if key in _RESERVED:
                    raise AttributeError(f"{name}: cannot overwrite NamedTuple attribute {key}")
                if key not in _SET_HERE and key not in fields:
                    setattr(record, key, value)
            if "__classcell__" in namespace:  # a method's ``super()`` / ``__class__``
                namespace["__classcell__"].cell_contents = record
            return record

    class NamedTuple(metaclass=_Fields):
        """Derive a record from this, as from ``typing.NamedTuple``."""
