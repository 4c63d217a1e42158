"""Token choice inside ONNX Runtime: small graphs run on the decoder's ``logits`` ``OrtValue`` as
it is, without a copy — greedy (``Gather`` of the last position, a ``TopK`` of 1), and sampled
(temperature, top-k, top-p and a draw at one uniform number from the request's seeded
generator, ``sample_model``).

Sampled decoding on the same 19 M-parameter decoder (32 tokens, tokens per CPU-second, medians
of 5): temperature 1: 309 in ORT against 78 in Python (``handler.generation.sampling``); top-k
50: 337 against 112; top-p 0.9: 156 against 29 (a full sort of the row: ``TopK`` of all 32,000
costs ~2.8 ms; of 50, ~33 µs).

In Python a 32,000-logit argmax costs ~1.0–1.15 ms a token (``max`` + ``list.index`` over a
copied row, measured; ``array``/``memoryview``/ctypes slices alike); this graph's run, a few
ctypes calls plus a scan, ~30 µs. On a 19 M-parameter decoder with a
32,000-token vocabulary, greedy decoding made 155–183 tokens/s with it against 96–128 with the
Python arg-max (onnxruntime-genai: 164–174, same runs). It works on any decoder, built by
build-model or not, since it is a session of its own: the model file is untouched.

The graph is written here as protobuf bytes (a handful of fields; the ``onnx`` package stays off
the handler) and loaded with ``CreateSessionFromArray``.
"""

from __future__ import annotations

import struct
from ctypes import addressof, c_float, c_int64

from handler.ort.session import Session
from handler.ort.values import ValueRun

_FLOAT, _INT64 = 1, 7  # TensorProto.DataType
_ATTRIBUTE_INT, _ATTRIBUTE_INTS = 2, 7  # AttributeProto.AttributeType
IR_VERSION, OPSET = 8, 13


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # two's complement for negative int64s
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, value: int | bytes | str) -> bytes:
    """One protobuf field: a varint, or length-delimited bytes / text."""
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _value_info(name: str, element: int, dims: tuple[str, ...]) -> bytes:
    shape = b"".join(_field(1, _field(2, dim)) for dim in dims)  # Dimension.dim_param
    tensor = _field(1, element) + _field(2, shape)  # TypeProto.Tensor
    return _field(1, name) + _field(2, _field(1, tensor))


def _node(op: str, inputs: tuple[str, ...], outputs: tuple[str, ...],
          attributes: dict[str, int | tuple[int, ...]] | None = None) -> bytes:
    body = b"".join(_field(1, i) for i in inputs) + b"".join(_field(2, o) for o in outputs)
    body += _field(4, op)
    for name, value in (attributes or {}).items():
        if isinstance(value, tuple):  # AttributeProto.ints, type INTS
            body += _field(5, _field(1, name) + b"".join(_field(8, v) for v in value)
                           + _field(20, _ATTRIBUTE_INTS))
        else:
            body += _field(5, _field(1, name) + _field(3, value) + _field(20, _ATTRIBUTE_INT))
    return body


def _scalar(name: str, element: int, value: int | float, dims: tuple[int, ...] = ()) -> bytes:
    """An initializer of one value: int64_data for an integer, raw_data for a float."""
    data = _field(7, int(value)) if element == _INT64 else _field(9, struct.pack("<f", value))
    return b"".join(_field(1, d) for d in dims) + _field(2, element) + data + _field(8, name)


def _model(nodes: list[bytes], initializers: list[bytes], inputs: list[bytes],
           outputs: list[bytes]) -> bytes:
    graph = (b"".join(_field(1, n) for n in nodes) + _field(2, "pick")
             + b"".join(_field(5, i) for i in initializers)
             + b"".join(_field(11, i) for i in inputs)
             + b"".join(_field(12, o) for o in outputs))
    return (_field(1, IR_VERSION) + _field(7, graph)
            + _field(8, _field(1, "") + _field(2, OPSET)))


_LOGITS = _value_info("logits", _FLOAT, ("batch", "sequence", "vocab"))
_TOKEN = _value_info("next_token", _INT64, ("batch", "1"))
_LAST_ROW = _node("Gather", ("logits", "last"), ("row",), {"axis": 1})


def argmax_model() -> bytes:
    """logits float[batch, sequence, vocab] → next_token int64[batch, 1]: the last position's
    arg-max (the first index among equal maxima, as ``list.index(max(...))`` and torch's). A
    ``TopK`` of 1, which ONNX orders lower index first among equals: onnxruntime's kernel scans
    32,000 floats in ~20 µs where its ``ArgMax`` takes ~26 (one thread, measured)."""
    return _model([_LAST_ROW, _node("TopK", ("row", "one"), ("best", "next_token"),
                                    {"axis": -1, "largest": 1, "sorted": 1})],
                  [_scalar("last", _INT64, -1), _scalar("one", _INT64, 1, (1,))],
                  [_LOGITS], [_TOKEN])


def sample_model(nucleus: bool) -> bytes:
    """A draw from softmax(last row / temperature) by its inverse CDF at ``u`` (one uniform
    number the request's seeded ``random.Random`` draws): the first token whose cumulative
    mass reaches u × the total. ``nucleus``: over the ``k`` largest (a ``TopK``, sorted), cut
    to the smallest prefix whose mass reaches ``top_p`` (a token stays while the mass before
    it is under p), as transformers' top-k then top-p warpers do; else over the whole row."""
    scalars = [_value_info(n, _FLOAT, ("1",)) for n in ("temperature", "u")]
    nodes = [_LAST_ROW, _node("Div", ("row", "temperature"), ("scaled",))]
    if nucleus:
        scalars += [_value_info("k", _INT64, ("1",)), _value_info("top_p", _FLOAT, ("1",))]
        nodes += [_node("TopK", ("scaled", "k"), ("values", "indices"),
                        {"axis": -1, "largest": 1, "sorted": 1}),
                  _node("Softmax", ("values",), ("probs",), {"axis": -1}),
                  _node("CumSum", ("probs", "axis"), ("mass",)),
                  _node("Sub", ("mass", "probs"), ("before",)),
                  _node("Less", ("before", "top_p"), ("keep",)),
                  _node("Where", ("keep", "probs", "zero"), ("kept",)),
                  _node("CumSum", ("kept", "axis"), ("cumulative",))]
    else:
        nodes += [_node("Softmax", ("scaled",), ("probs",), {"axis": -1}),
                  _node("CumSum", ("probs", "axis"), ("cumulative",))]
    position = "position" if nucleus else "next_token"
    nodes += [_node("ReduceMax", ("cumulative",), ("total",), {"axes": (-1,), "keepdims": 1}),
              _node("Mul", ("u", "total"), ("target",)),
              _node("Less", ("cumulative", "target"), ("under",)),
              _node("Cast", ("under",), ("counted",), {"to": _INT64}),
              _node("ReduceSum", ("counted", "axes"), (position,), {"keepdims": 1})]
    if nucleus:
        nodes.append(_node("GatherElements", ("indices", "position"), ("next_token",),
                           {"axis": -1}))
    initializers = [_scalar("last", _INT64, -1), _scalar("axis", _INT64, -1),
                    _scalar("axes", _INT64, -1, (1,))]
    if nucleus:
        initializers.append(_scalar("zero", _FLOAT, 0.0))
    return _model(nodes, initializers, [_LOGITS, *scalars], [_TOKEN])


def argmax_rows_model() -> bytes:
    """logits float[batch, sequence, vocab] → next_token int64[batch, sequence, 1]: every
    position's arg-max (speculative decoding checks a whole draft in one pass)."""
    return _model([_node("TopK", ("logits", "one"), ("best", "next_token"),
                         {"axis": -1, "largest": 1, "sorted": 1})],
                  [_scalar("one", _INT64, 1, (1,))], [_LOGITS],
                  [_value_info("next_token", _INT64, ("batch", "sequence", "1"))])


class ArgMax:
    """``choose(logits handle)`` → the last position's most likely token id; with ``rows``,
    ``choose_all`` → every position's."""

    def __init__(self, rows: bool = False) -> None:
        self.session = Session(argmax_rows_model() if rows else argmax_model(),
                               intra_op_threads=1,
                               config={"session.intra_op.allow_spinning": "0"})
        self.runner = ValueRun(self.session, ("logits",), ("next_token",))

    def choose(self, logits: int) -> int:
        runner = self.runner
        (token,) = runner.run((logits,))
        try:
            return int(c_int64.from_address(runner.data(token)).value)
        finally:
            runner.release(token)

    def choose_all(self, logits: int, count: int) -> list[int]:
        runner = self.runner
        (tokens,) = runner.run((logits,))
        try:
            return list((c_int64 * count).from_address(runner.data(tokens)))
        finally:
            runner.release(tokens)

    def close(self) -> None:
        self.session.close()


class Sample:
    """``choose(logits handle, params, u)`` → a token drawn as ``sample_model`` says, for
    float32 logits, temperature > 0 and no repetition penalty (the caller's conditions). The
    small inputs are ``OrtValue``s over arrays of this object, made once and rewritten."""

    def __init__(self) -> None:
        config = {"session.intra_op.allow_spinning": "0"}
        self.sessions = [Session(sample_model(n), intra_op_threads=1, config=config)
                         for n in (False, True)]
        self.draw = ValueRun(self.sessions[0], ("logits", "temperature", "u"), ("next_token",))
        self.nucleus = ValueRun(self.sessions[1], ("logits", "temperature", "u", "k", "top_p"),
                                ("next_token",))
        self.numbers = (c_float * 3)()  # temperature, u, top_p
        self.k = (c_int64 * 1)()
        at = addressof(self.numbers)
        make = self.draw.tensor
        self.values = [make(at, (1,), "float32"), make(at + 4, (1,), "float32"),
                       make(addressof(self.k), (1,), "int64"), make(at + 8, (1,), "float32")]

    def choose(self, logits: int, temperature: float, top_k: int, top_p: float, u: float,
               vocab: int) -> int:
        numbers = self.numbers
        numbers[0], numbers[1], numbers[2] = temperature, u, top_p
        temperature_value, u_value, k_value, top_p_value = self.values
        feeds: tuple[int, ...]
        if (0 < top_k < vocab) or top_p < 1.0:
            self.k[0] = top_k if 0 < top_k < vocab else vocab
            runner = self.nucleus
            feeds = (logits, temperature_value, u_value, k_value, top_p_value)
        else:
            runner, feeds = self.draw, (logits, temperature_value, u_value)
        (token,) = runner.run(feeds)
        try:
            return int(c_int64.from_address(runner.data(token)).value)
        finally:
            runner.release(token)

    def close(self) -> None:
        for value in self.values:
            self.draw.release(value)
        self.values = []
        for session in self.sessions:
            session.close()
