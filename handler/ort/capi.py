"""ONNX Runtime through its C API: ``ctypes`` over the ``libonnxruntime.so`` the onnxruntime wheel
ships, without importing the wheel's Python binding (and so without numpy).

``OrtGetApiBase()->GetApi(API_VERSION)`` returns a table of function pointers whose order is
fixed across releases; the indices and signatures below are those of ``struct OrtApi`` in
``include/onnxruntime/core/session/onnxruntime_c_api.h`` (microsoft/onnxruntime). Every
``OrtStatus`` becomes an ``OrtError`` carrying ORT's message, and is released.
"""

from __future__ import annotations

import ctypes
import os
import sys
from ctypes import POINTER, byref, c_char_p, c_int, c_int64, c_size_t, c_uint32, c_void_p

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Version 13 (onnxruntime 1.13) has every function used here; a newer library serves it too.
API_VERSION = 13
LIBRARY_PREFIX = "libonnxruntime.so"
_S = c_void_p  # OrtStatus*: NULL means success
_P = POINTER(c_void_p)
# A pointer argument on the per-request path, declared ``void*``: ctypes then takes a plain
# address (an int) or ``byref`` without ``POINTER``'s type check, about half the call's cost.
_V = c_void_p

# name → (index in struct OrtApi, restype, argtypes)
_FUNCTIONS: dict[str, tuple[int, Any, tuple[Any, ...]]] = {
    "CreateStatus": (0, c_void_p, (c_int, c_char_p)),
    "GetErrorCode": (1, c_int, (c_void_p,)),
    "GetErrorMessage": (2, c_char_p, (c_void_p,)),
    "CreateEnv": (3, _S, (c_int, c_char_p, _P)),
    "CreateSession": (7, _S, (c_void_p, c_char_p, c_void_p, _P)),
    "CreateSessionFromArray": (8, _S, (c_void_p, c_char_p, c_size_t, c_void_p, _P)),
    "Run": (9, _S, (c_void_p, c_void_p, _V, _V, c_size_t, _V, c_size_t, _V)),
    "CreateSessionOptions": (10, _S, (_P,)),
    "SetSessionExecutionMode": (13, _S, (c_void_p, c_int)),
    "SetSessionLogSeverityLevel": (22, _S, (c_void_p, c_int)),
    "SetSessionGraphOptimizationLevel": (23, _S, (c_void_p, c_int)),
    "SetIntraOpNumThreads": (24, _S, (c_void_p, c_int)),
    "SetInterOpNumThreads": (25, _S, (c_void_p, c_int)),
    "SessionGetInputCount": (30, _S, (c_void_p, POINTER(c_size_t))),
    "SessionGetOutputCount": (31, _S, (c_void_p, POINTER(c_size_t))),
    "SessionGetInputTypeInfo": (33, _S, (c_void_p, c_size_t, _P)),
    "SessionGetOutputTypeInfo": (34, _S, (c_void_p, c_size_t, _P)),
    "SessionGetInputName": (36, _S, (c_void_p, c_size_t, c_void_p, _P)),
    "SessionGetOutputName": (37, _S, (c_void_p, c_size_t, c_void_p, _P)),
    "CreateTensorAsOrtValue": (48, _S, (c_void_p, POINTER(c_int64), c_size_t, c_int, _P)),
    "CreateTensorWithDataAsOrtValue": (49, _S, (c_void_p, c_void_p, c_size_t, _V, c_size_t,
                                                c_int, _V)),
    "GetTensorMutableData": (51, _S, (c_void_p, _V)),
    "FillStringTensor": (52, _S, (c_void_p, POINTER(c_char_p), c_size_t)),
    "GetStringTensorDataLength": (53, _S, (c_void_p, POINTER(c_size_t))),
    "GetStringTensorContent": (54, _S, (c_void_p, c_void_p, c_size_t, POINTER(c_size_t),
                                        c_size_t)),
    "CastTypeInfoToTensorInfo": (55, _S, (c_void_p, _P)),
    "GetOnnxTypeFromTypeInfo": (56, _S, (c_void_p, POINTER(c_int))),
    "GetTensorElementType": (60, _S, (c_void_p, POINTER(c_int))),
    "GetDimensionsCount": (61, _S, (c_void_p, _V)),
    "GetDimensions": (62, _S, (c_void_p, _V, c_size_t)),
    "GetSymbolicDimensions": (63, _S, (c_void_p, POINTER(c_char_p), c_size_t)),
    "GetTensorShapeElementCount": (64, _S, (c_void_p, POINTER(c_size_t))),
    "GetTensorTypeAndShape": (65, _S, (c_void_p, _V)),
    "GetValueType": (67, _S, (c_void_p, POINTER(c_int))),
    "CreateCpuMemoryInfo": (69, _S, (c_int, c_int, _P)),
    "AllocatorFree": (76, _S, (c_void_p, c_void_p)),
    "GetAllocatorWithDefaultOptions": (78, _S, (_P,)),
    "GetValue": (80, _S, (c_void_p, c_int, c_void_p, _P)),
    "GetValueCount": (81, _S, (c_void_p, POINTER(c_size_t))),
    "ReleaseEnv": (92, None, (c_void_p,)),
    "ReleaseStatus": (93, None, (c_void_p,)),
    "ReleaseMemoryInfo": (94, None, (c_void_p,)),
    "ReleaseSession": (95, None, (c_void_p,)),
    "ReleaseValue": (96, None, (c_void_p,)),
    "ReleaseTypeInfo": (98, None, (c_void_p,)),
    "ReleaseTensorTypeAndShapeInfo": (99, None, (c_void_p,)),
    "ReleaseSessionOptions": (100, None, (c_void_p,)),
    "CastTypeInfoToMapTypeInfo": (103, _S, (c_void_p, _P)),
    "CastTypeInfoToSequenceTypeInfo": (104, _S, (c_void_p, _P)),
    "GetMapKeyType": (105, _S, (c_void_p, POINTER(c_int))),
    "GetMapValueType": (106, _S, (c_void_p, _P)),
    "GetSequenceElementType": (107, _S, (c_void_p, _P)),
    "GetAvailableProviders": (125, _S, (POINTER(POINTER(c_char_p)), POINTER(c_int))),
    "ReleaseAvailableProviders": (126, _S, (POINTER(c_char_p), c_int)),
    "AddSessionConfigEntry": (130, _S, (c_void_p, c_char_p, c_char_p)),
    # the CUDA provider (handler.ort.providers): in a CPU-only build each returns an error
    "SessionOptionsAppendExecutionProvider_CUDA_V2": (204, _S, (c_void_p, c_void_p)),
    "CreateCUDAProviderOptions": (205, _S, (_P,)),
    "UpdateCUDAProviderOptions": (206, _S, (c_void_p, POINTER(c_char_p), POINTER(c_char_p),
                                            c_size_t)),
    "ReleaseCUDAProviderOptions": (208, None, (c_void_p,)),
}

# enum ONNXType
TYPE_TENSOR, TYPE_SEQUENCE, TYPE_MAP = 1, 2, 3
# enum GraphOptimizationLevel
OPTIMIZATION_LEVELS = {"disable": 0, "basic": 1, "extended": 2, "all": 99}
ORT_SEQUENTIAL = 0
ORT_LOGGING_LEVEL_ERROR = 3
_ARENA_ALLOCATOR, _MEM_TYPE_DEFAULT = 1, 0


class OrtError(RuntimeError):
    """An ``OrtStatus`` that was not OK: ORT's error code and message."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class LibraryError(RuntimeError):
    """No usable libonnxruntime (missing, or older than ``API_VERSION``)."""


def find_library(paths: list[str] | None = None) -> str:
    """``onnxruntime/capi/libonnxruntime.so.<version>`` in the first ``sys.path`` entry that has
    it; the package itself is never imported (its ``__init__`` imports numpy)."""
    for entry in sys.path if paths is None else paths:
        folder = os.path.join(entry or ".", "onnxruntime", "capi")
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        found = sorted(n for n in names if n.startswith(LIBRARY_PREFIX))
        if found:
            return os.path.join(folder, found[-1])
    raise LibraryError("libonnxruntime not found: no onnxruntime/capi/libonnxruntime.so* on "
                       "sys.path (pip install onnxruntime)")


class _ApiBase(ctypes.Structure):
    _fields_ = [("GetApi", ctypes.CFUNCTYPE(c_void_p, c_uint32)),
                ("GetVersionString", ctypes.CFUNCTYPE(c_char_p))]


class Api:
    """The bound function table of one loaded library, plus the process-wide ``OrtEnv``."""

    if TYPE_CHECKING:
        # each name in _FUNCTIONS, bound in __init__ (setattr): a ctypes function of the table
        def __getattr__(self, name: str) -> Any: ...

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self.library = ctypes.CDLL(path)
        except OSError as exc:
            raise LibraryError(f"cannot load {path}: {exc}") from None
        self.library.OrtGetApiBase.restype = POINTER(_ApiBase)
        self.library.OrtGetApiBase.argtypes = ()
        base = self.library.OrtGetApiBase().contents
        self.version: str = base.GetVersionString().decode()
        table = base.GetApi(API_VERSION)
        if not table:
            raise LibraryError(f"{path} (onnxruntime {self.version}) does not offer C API "
                               f"version {API_VERSION}: onnxruntime 1.{API_VERSION} or newer "
                               "is needed")
        slots = ctypes.cast(table, POINTER(c_void_p))
        for name, (index, restype, argtypes) in _FUNCTIONS.items():
            setattr(self, name, ctypes.CFUNCTYPE(restype, *argtypes)(slots[index]))
        allocator = c_void_p()
        self.check(self.GetAllocatorWithDefaultOptions(byref(allocator)))
        self.allocator = allocator  # ORT's own: never released
        memory = c_void_p()
        self.check(self.CreateCpuMemoryInfo(_ARENA_ALLOCATOR, _MEM_TYPE_DEFAULT, byref(memory)))
        self.cpu_memory = memory  # lives as long as the process
        env = c_void_p()
        self.check(self.CreateEnv(ORT_LOGGING_LEVEL_ERROR, b"onnx-lambda", byref(env)))
        self.env = env

    def check(self, status: int | None) -> None:
        """Raise ORT's error for a non-NULL status, after releasing it."""
        if status:
            message = (self.GetErrorMessage(status) or b"").decode("utf-8", "replace")
            code = self.GetErrorCode(status)
            self.ReleaseStatus(status)
            raise OrtError(message, code)

    def take_string(self, pointer: c_void_p) -> str:
        """A string ORT allocated with the default allocator → ``str``; the memory is freed."""
        try:
            return (ctypes.string_at(pointer) if pointer else b"").decode("utf-8", "replace")
        finally:
            if pointer:
                self.check(self.AllocatorFree(self.allocator, pointer))


_API: Api | None = None


def api() -> Api:
    """The process's one ``Api`` (the library is loaded and the env created on first use)."""
    global _API
    if _API is None:
        _API = Api(find_library())
    return _API


def version() -> str:
    """The loaded library's version (``OrtApiBase::GetVersionString``), e.g. ``1.32.0``."""
    return api().version
