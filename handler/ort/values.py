"""Runs that keep their outputs inside ONNX Runtime: ``OrtValue`` handles in, handles out.

``Session.run`` copies every output into Python and releases it, the right thing for one pass.
A decoder's key/value cache is the opposite case: each step's ``present.*`` outputs are the next
step's ``past_key_values.*`` inputs, megabytes that never need to leave ORT. ``ValueRun`` binds
fixed input and output names once; ``run`` takes handles (made by ``tensor`` over memory the
caller keeps alive, or outputs of an earlier run) and returns new owned handles, which the
caller releases (``release``) when it replaces or drops them.
"""

from __future__ import annotations

from ctypes import addressof, byref, c_char_p, c_int, c_int64, c_size_t, c_void_p

from handler.ort.session import Session
from handler.ort.tensor import BY_ELEMENT_TYPE, DTYPES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


class ValueRun:
    """``run`` over a fixed list of input names and output names of one session."""

    def __init__(self, session: Session, inputs: Sequence[str], outputs: Sequence[str]) -> None:
        self.session = session
        self.api = session.api
        self._inputs = (c_char_p * len(inputs))(*(n.encode() for n in inputs))
        self._outputs = (c_char_p * len(outputs))(*(n.encode() for n in outputs))
        self._values = (c_void_p * len(inputs))()
        self._results = (c_void_p * len(outputs))()
        self._counts = (c_size_t(len(inputs)), c_size_t(len(outputs)))
        self._addresses = (addressof(self._inputs), addressof(self._values),
                           addressof(self._outputs), addressof(self._results))
        self._out = c_void_p()
        self._out_at = addressof(self._out)
        self._info = c_void_p()
        self._rank = c_size_t()
        self._dims = (c_int64 * 8)()
        self._shape = (c_int64 * 8)()  # tensor()'s dims: ranks above 8 are not a decoder's
        self._shape_at = addressof(self._shape)

    def tensor(self, address: int | None, shape: Sequence[int], dtype: str) -> int:
        """A tensor ``OrtValue`` over ``address`` (not copied: the memory must outlive the
        handle; None for an empty tensor)."""
        element, _, itemsize = DTYPES[dtype]
        dims, nbytes = self._shape, itemsize
        for i, dim in enumerate(shape):  # (ORT copies the shape: one scratch array serves)
            dims[i] = dim
            nbytes *= dim
        api = self.api
        status = api.CreateTensorWithDataAsOrtValue(
            api.cpu_memory, address if nbytes else None, nbytes, self._shape_at, len(shape),
            element, self._out_at)
        if status:
            api.check(status)
        return int(self._out.value or 0)

    def run(self, values: Sequence[int], outputs: Sequence[int] = ()) -> list[int]:
        """The outputs, in the bound order, as owned handles; ``values`` stay the caller's.
        ``outputs``: preallocated values for the first outputs (0: ORT allocates one); ORT
        writes into those, and they come back as they went in, still the caller's."""
        api, slots, results = self.api, self._values, self._results
        for i, value in enumerate(values):
            slots[i] = value
        for i, value in enumerate(outputs):
            results[i] = value or None
        names_in, values_at, names_out, results_at = self._addresses
        status = api.Run(self.session.pointer, None, names_in, values_at, self._counts[0],
                         names_out, self._counts[1], results_at)
        if status:
            api.check(status)
        handles = [int(results[i] or 0) for i in range(len(results))]
        for i in range(len(results)):
            results[i] = None  # Run writes into an output slot that is NULL only
        return handles

    def data(self, value: int) -> int:
        """The address of a tensor's data (ORT's memory: valid while the handle lives)."""
        status = self.api.GetTensorMutableData(value, self._out_at)
        if status:
            self.api.check(status)
        return int(self._out.value or 0)

    def shape(self, value: int) -> tuple[int, ...]:
        api = self.api
        api.check(api.GetTensorTypeAndShape(value, byref(self._info)))
        try:
            api.check(api.GetDimensionsCount(self._info, byref(self._rank)))
            rank = self._rank.value
            dims = self._dims if rank <= len(self._dims) else (c_int64 * rank)()
            api.check(api.GetDimensions(self._info, dims, c_size_t(rank)))
            return tuple(dims[:rank])
        finally:
            api.ReleaseTensorTypeAndShapeInfo(self._info)

    def element(self, value: int) -> str:
        """A tensor's element type name (``float32``, ``float16``)."""
        api, element = self.api, c_int()
        api.check(api.GetTensorTypeAndShape(value, byref(self._info)))
        try:
            api.check(api.GetTensorElementType(self._info, byref(element)))
        finally:
            api.ReleaseTensorTypeAndShapeInfo(self._info)
        return BY_ELEMENT_TYPE.get(element.value, str(element.value))

    def release(self, value: int | None) -> None:
        if value:
            self.api.ReleaseValue(value)
