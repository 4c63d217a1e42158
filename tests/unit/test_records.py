"""``handler.records.NamedTuple`` behaves as ``typing.NamedTuple`` for every record the handler
declares: the same fields, defaults, tuple behaviour, kept members and errors."""

from __future__ import annotations

import pickle
import typing

import pytest

from handler import records


def declare(base: type) -> type:
    class Point(base):  # type: ignore[valid-type, misc]
        """A point."""

        x: int
        y: int = 2
        label: str = "p"
        unit = "mm"  # a class attribute, not a field (no annotation)

        @property
        def norm(self) -> int:
            return abs(self.x) + abs(self.y)

        @classmethod
        def origin(cls) -> Point:
            return cls(0, 0)

        def moved(self, dx: int) -> Point:
            return self._replace(x=self.x + dx)

    return Point


OURS, THEIRS = declare(records.NamedTuple), declare(typing.NamedTuple)


def test_fields_defaults_and_tuple_behaviour_match_typing() -> None:
    for attribute in ("_fields", "_field_defaults", "__doc__", "__qualname__", "__module__",
                      "unit"):
        assert getattr(OURS, attribute) == getattr(THEIRS, attribute), attribute
    assert list(OURS.__annotations__) == list(THEIRS.__annotations__) == ["x", "y", "label"]
    ours, theirs = OURS(1), THEIRS(1)
    assert tuple(ours) == tuple(theirs) == (1, 2, "p")
    assert ours == theirs and hash(ours) == hash(theirs)
    assert repr(ours) == repr(theirs) == "Point(x=1, y=2, label='p')"
    assert ours.norm == 3 and OURS.origin() == (0, 0, "p")
    assert ours.moved(4) == (5, 2, "p") and type(ours.moved(4)) is OURS
    assert ours._asdict() == theirs._asdict()
    assert OURS._make([7, 8, "q"]).y == 8
    assert issubclass(OURS, tuple) and OURS.__mro__ == (OURS, tuple, object)
    with pytest.raises(AttributeError):
        ours.x = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        OURS()  # x has no default


def test_a_method_may_use_super() -> None:
    """(typing 3.11 raises here; the ``__class__`` cell is set to the record)"""

    class Wrapped(records.NamedTuple):
        x: int

        def size(self) -> int:
            return super().__len__()  # tuple's, through the record's cell

    assert Wrapped(1).size() == 1


def test_records_pickle_by_their_module_name() -> None:
    from handler.ort.tensor import Tensor

    tensor = Tensor("float32", (1,), b"\0\0\0\0")
    assert pickle.loads(pickle.dumps(tensor)) == tensor


@pytest.mark.parametrize("body", [
    "x: int = 1\n    y: int",  # a field without a default after one with
    "x: int\n    def _replace(self): ...",  # replaces what the tuple needs
    "x: int\n    __slots__ = ('a',)",
])
def test_the_same_declarations_fail_as_with_typing(body: str) -> None:
    for base in (records.NamedTuple, typing.NamedTuple):
        with pytest.raises((TypeError, AttributeError)):
            exec(f"class R(base):\n    {body}\n", {"base": base})


def test_a_record_derives_from_namedtuple_alone() -> None:
    with pytest.raises(TypeError, match="alone"):
        class Mixed(records.NamedTuple, int):  # type: ignore[misc]
            x: int
