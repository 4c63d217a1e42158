"""An inference session over the C API: options, the model's signature, ``run``.

Inputs are ``Tensor``s handed to ORT without a copy; every output is copied once out of ORT's
memory (tensors into ``bytes``, sequences and maps into lists and dicts) and its ``OrtValue``
released before ``run`` returns, so nothing ORT owns outlives the request.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from ctypes import (
    POINTER,
    addressof,
    byref,
    c_char_p,
    c_int,
    c_int64,
    c_size_t,
    c_void_p,
    string_at,
)

from handler.ort import capi, providers
from handler.ort.tensor import BY_ELEMENT_TYPE, DTYPES, Tensor, as_tensor
from handler.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class ValueInfo(NamedTuple):
    name: str
    type: str  # onnxruntime's spelling: "tensor(float)", "seq(map(int64,tensor(float)))"
    dtype: str  # a tensor's element type name ("float32", "string"); "" for non-tensors
    shape: tuple[int | str | None, ...]  # None (or a symbolic name) for a dynamic dimension


# ONNX element type → onnxruntime's name inside "tensor(...)"
_ONNX_NAMES = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
               7: "int64", 8: "string", 9: "bool", 10: "float16", 11: "double", 12: "uint32",
               13: "uint64", 16: "bfloat16"}


class Session:
    _session: c_void_p | None = None  # set once CreateSession succeeded

    def __init__(self, path: str | bytes, *, intra_op_threads: int, inter_op_threads: int = 1,
                 optimization: str = "basic", log_severity: int = 3,
                 config: Mapping[str, str] | None = None, cuda: bool = False) -> None:
        self.api = api = capi.api()
        options = c_void_p()
        api.check(api.CreateSessionOptions(byref(options)))
        session = c_void_p()
        try:
            api.check(api.SetIntraOpNumThreads(options, intra_op_threads))
            api.check(api.SetInterOpNumThreads(options, inter_op_threads))
            api.check(api.SetSessionExecutionMode(options, capi.ORT_SEQUENTIAL))
            api.check(api.SetSessionGraphOptimizationLevel(
                options, capi.OPTIMIZATION_LEVELS[optimization]))
            api.check(api.SetSessionLogSeverityLevel(options, log_severity))
            for key, value in (config or {}).items():
                api.check(api.AddSessionConfigEntry(options, key.encode(), value.encode()))
            if cuda:
                providers.append_cuda(api, options)
            if isinstance(path, bytes):  # a model made in memory (handler.generation.pick)
                api.check(api.CreateSessionFromArray(api.env, path, len(path), options,
                                                     byref(session)))
            else:  # a path: ORT resolves external data beside the model file
                api.check(api.CreateSession(api.env, path.encode(), options, byref(session)))
        finally:
            api.ReleaseSessionOptions(options)
        self._session = session
        self.inputs = self._signature(api.SessionGetInputCount, api.SessionGetInputName,
                                      api.SessionGetInputTypeInfo)
        self.outputs = self._signature(api.SessionGetOutputCount, api.SessionGetOutputName,
                                       api.SessionGetOutputTypeInfo)
        self._output_names = (c_char_p * len(self.outputs))(
            *(o.name.encode() for o in self.outputs))
        # (name, element type) per output; "" for sequences and maps (typed at run time)
        self._output_kinds = tuple((o.name, o.dtype) for o in self.outputs)
        self._output_count = c_size_t(len(self.outputs))
        # ctypes' cheapest arguments, made once: a pointer as a plain int (the address of an
        # array this session keeps), an integer as an instance of its exact C type. An array
        # object or a Python int for a size_t costs an isinstance test that fails through the
        # metaclass (together a third of a run's marshalling).
        self._output_names_at = addressof(self._output_names)
        self._feed_names: dict[tuple[str, ...], tuple[Any, int, c_size_t]] = {}
        self._layouts: dict[tuple[tuple[int, ...], str], _Layout] = {}
        self._scratch: list[_Scratch] = []

    @property
    def pointer(self) -> c_void_p | None:
        """The ``OrtSession*`` (``handler.ort.values`` runs on it); None once closed."""
        return self._session

    def close(self) -> None:
        if self._session:
            self.api.ReleaseSession(self._session)
            self._session = None

    def __del__(self) -> None:
        self.close()

    # -- signature -------------------------------------------------------------------------

    def _signature(self, count_fn: Any, name_fn: Any, info_fn: Any) -> tuple[ValueInfo, ...]:
        api, count = self.api, c_size_t()
        api.check(count_fn(self._session, byref(count)))
        specs = []
        for index in range(count.value):
            name = c_void_p()
            api.check(name_fn(self._session, index, api.allocator, byref(name)))
            text = api.take_string(name)
            info = c_void_p()
            api.check(info_fn(self._session, index, byref(info)))
            try:
                specs.append(ValueInfo(text, *self._describe(info)))
            finally:
                api.ReleaseTypeInfo(info)
        return tuple(specs)

    def _describe(self, info: c_void_p) -> tuple[str, str, tuple[int | str | None, ...]]:
        """An ``OrtTypeInfo`` → (type string, dtype name, shape)."""
        api, kind = self.api, c_int()
        api.check(api.GetOnnxTypeFromTypeInfo(info, byref(kind)))
        if kind.value == capi.TYPE_TENSOR:
            tensor_info = c_void_p()  # owned by ``info``
            api.check(api.CastTypeInfoToTensorInfo(info, byref(tensor_info)))
            element, shape = self._tensor_info(tensor_info)
            return (f"tensor({_ONNX_NAMES.get(element, element)})",
                    BY_ELEMENT_TYPE.get(element, ""), shape)
        if kind.value == capi.TYPE_SEQUENCE:
            sequence, inner = c_void_p(), c_void_p()
            api.check(api.CastTypeInfoToSequenceTypeInfo(info, byref(sequence)))
            api.check(api.GetSequenceElementType(sequence, byref(inner)))
            try:
                return f"seq({self._describe(inner)[0]})", "", ()
            finally:
                api.ReleaseTypeInfo(inner)
        if kind.value == capi.TYPE_MAP:
            mapping, key, inner = c_void_p(), c_int(), c_void_p()
            api.check(api.CastTypeInfoToMapTypeInfo(info, byref(mapping)))
            api.check(api.GetMapKeyType(mapping, byref(key)))
            api.check(api.GetMapValueType(mapping, byref(inner)))
            try:
                value = self._describe(inner)[0]
                return f"map({_ONNX_NAMES.get(key.value, key.value)},{value})", "", ()
            finally:
                api.ReleaseTypeInfo(inner)
        return f"onnx_type({kind.value})", "", ()

    def _tensor_info(self, info: c_void_p) -> tuple[int, tuple[int | str | None, ...]]:
        """A signature's element type and shape, symbolic dims by name."""
        api, element, rank = self.api, c_int(), c_size_t()
        api.check(api.GetTensorElementType(info, byref(element)))
        api.check(api.GetDimensionsCount(info, byref(rank)))
        dims = (c_int64 * rank.value)()
        api.check(api.GetDimensions(info, dims, rank.value))
        names = (c_char_p * rank.value)()
        api.check(api.GetSymbolicDimensions(info, names, rank.value))
        shape = tuple(d if d >= 0 else ((n or b"").decode() or None)
                      for d, n in zip(dims, names, strict=True))
        return element.value, shape

    # -- run -------------------------------------------------------------------------------

    def run(self, feeds: Mapping[str, Any]) -> dict[str, Any]:
        """Named inputs (``Tensor`` or numpy arrays) → every output, in signature order.

        The hot path of every request: ctypes calls cost about a microsecond each, so the
        name arrays are built once per feed order, shapes once per shape, the out-parameters
        come from a reused ``_Scratch`` (passed as addresses), and tensor outputs skip the
        type queries their signature already answers."""
        api = self.api
        count = len(feeds)
        key = tuple(feeds)
        found = self._feed_names.get(key)
        if found is None:
            names = (c_char_p * count)(*(n.encode() for n in feeds))
            found = (names, addressof(names), c_size_t(count))  # (the array kept alive here)
            if len(self._feed_names) < 8:  # a client's own key orders: bounded
                self._feed_names[key] = found
        _, names_at, feed_count = found
        scratch = self._scratch.pop() if self._scratch else _Scratch(self._output_kinds)
        values = scratch.values if count <= len(scratch.values) else (c_void_p * count)()
        values_at = scratch.values_at if values is scratch.values else addressof(values)
        outputs = scratch.outputs
        pins: list[Any] = []
        try:
            for i, value in enumerate(feeds.values()):
                values[i] = self._ort_value(value if value.__class__ is Tensor
                                            else as_tensor(value), pins, scratch)
            status = api.Run(self._session, None, names_at, values_at, feed_count,
                             self._output_names_at, self._output_count, scratch.outputs_at)
            if status:
                api.check(status)
            return {name: self._tensor(outputs[i], dtype, scratch) if dtype
                    else self._to_python(outputs[i])
                    for i, (name, dtype) in enumerate(self._output_kinds)}
        finally:
            # by index: iterating a ctypes array goes through the sequence protocol's Python
            # slot, several times the cost of a subscript
            for array, used in ((values, count), (outputs, len(outputs))):
                for i in range(used):
                    value = array[i]
                    if value:
                        api.ReleaseValue(value)
                        array[i] = None  # Run writes into an output slot that is not NULL
            for pin in pins:
                pin.release()
            self._scratch.append(scratch)

    def _ort_value(self, tensor: Tensor, pins: list[Any], scratch: _Scratch) -> int | None:
        api = self.api
        key = (tensor.shape, tensor.dtype)
        layout = self._layouts.get(key) or self._layout(key)
        if tensor.dtype == "string":
            out = c_void_p()
            api.check(api.CreateTensorAsOrtValue(api.allocator, layout.shape, layout.rank,
                                                 layout.element, byref(out)))
            strings = (c_char_p * len(tensor.data))(*(s.encode() for s in tensor.data))
            try:
                api.check(api.FillStringTensor(out, strings, len(tensor.data)))
            except capi.OrtError:
                api.ReleaseValue(out)
                raise
            return out.value
        data = tensor.data
        address: bytes | int | None
        if data.__class__ is bytes:  # ctypes passes a bytes object's own storage
            address, length = data or None, len(data)
        else:
            pin = _Pinned(data)
            pins.append(pin)
            address, length = pin.address, pin.length
        if length != layout.nbytes:
            raise capi.OrtError(f"{tensor.dtype}{list(tensor.shape)} needs {layout.nbytes} "
                                f"bytes, the buffer has {length}", 2)
        status = api.CreateTensorWithDataAsOrtValue(api.cpu_memory, address, layout.length,
                                                    layout.shape_at, layout.rank,
                                                    layout.element, scratch.pointer_at)
        if status:
            api.check(status)
        return scratch.pointer.value

    def _layout(self, key: tuple[tuple[int, ...], str]) -> _Layout:
        """An input's C arguments for its (shape, dtype), made once (ORT copies the shape)."""
        shape, dtype = key
        element, _, itemsize = DTYPES[dtype]
        nbytes = itemsize
        for dim in shape:
            nbytes *= dim
        dims = (c_int64 * len(shape))(*shape)
        layout = _Layout(dims, addressof(dims), c_size_t(len(shape)), c_int(element),
                         c_size_t(nbytes), nbytes)
        if len(self._layouts) < 64:  # a client's own shapes: bounded
            self._layouts[key] = layout
        return layout

    def _to_python(self, value: int | None) -> Any:
        """An output ``OrtValue`` → ``Tensor`` (tensors) or lists/dicts (sequences, maps)."""
        api, kind = self.api, c_int()
        api.check(api.GetValueType(value, byref(kind)))
        if kind.value == capi.TYPE_TENSOR:
            return self._tensor(value)
        if kind.value not in (capi.TYPE_SEQUENCE, capi.TYPE_MAP):
            raise capi.OrtError(f"output of ONNX type {kind.value} is not supported", 9)
        count = c_size_t()
        api.check(api.GetValueCount(value, byref(count)))
        items = []
        for index in range(count.value):
            item = c_void_p()
            api.check(api.GetValue(value, index, api.allocator, byref(item)))
            try:
                items.append(self._to_python(item.value))
            finally:
                api.ReleaseValue(item)
        if kind.value == capi.TYPE_MAP:  # [keys tensor, values tensor]
            keys, values = items
            return dict(zip(keys.flat(), values.flat(), strict=True))
        return items

    def _tensor(self, value: int | None, dtype: str | None = None,
                scratch: _Scratch | None = None) -> Tensor:
        """A tensor ``OrtValue`` → ``Tensor`` (one copy); ``dtype`` when the signature knows it."""
        api, scratch = self.api, scratch or _Scratch(())
        # (a status is checked only when there is one: api.check is a Python call per request)
        if status := api.GetTensorTypeAndShape(value, scratch.pointer_at):
            api.check(status)
        info = scratch.pointer.value
        try:
            if dtype is None:
                element = c_int()
                api.check(api.GetTensorElementType(info, byref(element)))
                dtype = BY_ELEMENT_TYPE.get(element.value)
                if dtype is None:
                    raise capi.OrtError(f"output element type "
                                        f"{_ONNX_NAMES.get(element.value, element.value)} is "
                                        "not supported", 9)
            if status := api.GetDimensionsCount(info, scratch.size_at):
                api.check(status)
            rank = scratch.size.value
            dims = scratch.dims if rank <= _Scratch.RANK else (c_int64 * rank)()
            # (the c_size_t itself, which ctypes takes without a test)
            if status := api.GetDimensions(info, dims, scratch.size):
                api.check(status)
        finally:
            api.ReleaseTensorTypeAndShapeInfo(info)
        shape = tuple(dims[:rank])
        size = 1
        for dim in shape:
            size *= dim
        if dtype == "string":
            return Tensor(dtype, shape, self._strings(value, size))
        if status := api.GetTensorMutableData(value, scratch.pointer_at):
            api.check(status)
        nbytes = size * DTYPES[dtype][2]
        return Tensor(dtype, shape, string_at(scratch.pointer.value, nbytes)  # type: ignore[arg-type]
                      if nbytes else b"")  # (a non-empty tensor's data is never NULL)

    def _strings(self, value: int | None, count: int) -> tuple[str, ...]:
        api, length = self.api, c_size_t()
        if not count:
            return ()
        api.check(api.GetStringTensorDataLength(value, byref(length)))
        buffer = ctypes.create_string_buffer(length.value or 1)
        offsets = (c_size_t * count)()
        api.check(api.GetStringTensorContent(value, buffer, length.value, offsets, count))
        raw = buffer.raw[:length.value]
        ends = [*offsets[1:], length.value]
        return tuple(raw[start:end].decode("utf-8", "replace")
                     for start, end in zip(offsets, ends, strict=True))


class _Layout(NamedTuple):
    shape: Any  # c_int64 array
    shape_at: int  # its address
    rank: c_size_t
    element: c_int  # ONNXTensorElementDataType
    length: c_size_t  # the data's bytes
    nbytes: int


class _Scratch:
    """One run's input and output slots and out-parameters, reused by the next run (a
    session keeps a free list: concurrent runs each take their own). Out-parameters go to C
    as addresses (ints), the cheapest argument ctypes converts."""

    RANK = 8  # dims buffer; a deeper output gets its own array

    __slots__ = ("dims", "outputs", "outputs_at", "pointer", "pointer_at", "size", "size_at",
                 "values", "values_at")

    def __init__(self, output_kinds: tuple[tuple[str, str], ...]) -> None:
        self.values = (c_void_p * 4)()
        self.outputs = (c_void_p * len(output_kinds))()
        self.values_at, self.outputs_at = addressof(self.values), addressof(self.outputs)
        self.pointer, self.size = c_void_p(), c_size_t()
        self.pointer_at, self.size_at = addressof(self.pointer), addressof(self.size)
        self.dims = (c_int64 * self.RANK)()


class _Pinned:
    """The address of a bytes-like object's memory, held (``PyObject_GetBuffer``) until
    ``release``: read-only buffers (``bytes``, slices of a request body) go in without a copy."""

    __slots__ = ("_view", "address", "length")
    _view: bytes | _PyBuffer | None

    def __init__(self, data: Any) -> None:
        if type(data) is bytes:  # the common case: the bytes object's own storage
            self._view = data
            self.address = ctypes.cast(c_char_p(data), c_void_p).value if data else None
            self.length = len(data)
            return
        view = _PyBuffer()
        if _get_buffer(data, byref(view), _PyBUF_C_CONTIGUOUS) != 0:
            raise TypeError("tensor data must be a C-contiguous bytes-like object")
        self._view = view
        self.address, self.length = view.buf, view.len

    def release(self) -> None:
        if isinstance(self._view, _PyBuffer):
            _release_buffer(byref(self._view))
            self._view = None


class _PyBuffer(ctypes.Structure):  # CPython's Py_buffer (Include/pybuffer.h)
    _fields_ = [("buf", c_void_p), ("obj", c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", c_int), ("ndim", c_int),
                ("format", c_char_p), ("shape", c_void_p), ("strides", c_void_p),
                ("suboffsets", c_void_p), ("internal", c_void_p)]


_PyBUF_C_CONTIGUOUS = 0x38  # PyBUF_C_CONTIGUOUS (0x20 | PyBUF_STRIDES, which includes PyBUF_ND)
_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = (ctypes.py_object, POINTER(_PyBuffer), c_int)
_get_buffer.restype = c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = (POINTER(_PyBuffer),)
_release_buffer.restype = None

