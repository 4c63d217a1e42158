"""The execution provider, chosen once at init: CUDA or CPU.

``ONNX_LAMBDA_EXECUTION_PROVIDER`` = ``auto`` (default) picks CUDA when all of these hold, in
this order, cheapest check first so that a CPU function pays one ``stat`` and no C call:

1. a GPU device is visible: ``/dev/nvidia0`` exists (the NVIDIA driver's first device node, what
   a container with a GPU attached sees) and ``CUDA_VISIBLE_DEVICES`` does not hide every device
   (``""`` or ``-1``). ``NVIDIA_VISIBLE_DEVICES`` is not used: CUDA base images set it to ``all``
   whether or not a GPU is attached;
2. the manifest does not rule it out (``gpu.suitable`` false, written by build-model);
3. the library offers it: ``CUDAExecutionProvider`` is in ``GetAvailableProviders`` (the
   ``onnxruntime-gpu`` wheel; the CPU wheel offers only CPU and Azure).

Anything else is CPU, with the reason. ``cpu`` never checks; ``cuda`` makes a failed check an
init error naming it. Nodes CUDA has no kernel for still run on ORT's CPU provider (ORT places
them itself), so ``cuda`` never loses an op, only speed on the copies.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from ctypes import POINTER, byref, c_char_p, c_int, c_void_p

from handler.ort import capi
from handler.records import NamedTuple

SETTINGS = ("auto", "cpu", "cuda")
CUDA_PROVIDER = "CUDAExecutionProvider"
DEVICE_NODE = "/dev/nvidia0"
# Exhaustive cuDNN search (ORT's default) benchmarks every convolution algorithm on the first
# run: seconds of cold start for a few percent of warm latency. The heuristic picks at once.
CUDA_OPTIONS = {"device_id": "0", "cudnn_conv_algo_search": "HEURISTIC"}


class ProviderError(RuntimeError):
    """``cuda`` was asked for and cannot be had."""


class Choice(NamedTuple):
    provider: str  # "cuda" or "cpu"
    reason: str


def device_visible(env: Mapping[str, str], node: str = DEVICE_NODE) -> bool:
    if env.get("CUDA_VISIBLE_DEVICES", "0").strip() in ("", "-1"):
        return False
    return os.path.exists(node)


def available(api: capi.Api) -> tuple[str, ...]:
    """The providers this library was built with (``OrtApi::GetAvailableProviders``)."""
    names, count = POINTER(c_char_p)(), c_int()
    api.check(api.GetAvailableProviders(byref(names), byref(count)))
    try:
        return tuple(names[i].decode() for i in range(count.value))
    finally:
        api.check(api.ReleaseAvailableProviders(names, count))


def choose(setting: str, *, env: Mapping[str, str], manifest_allows: bool,
           api: capi.Api | None = None, node: str = DEVICE_NODE) -> Choice:
    """The provider for ``setting``; ``api`` (default: the process's) is asked last."""
    if setting == "cpu":
        return Choice("cpu", "ONNX_LAMBDA_EXECUTION_PROVIDER=cpu")
    if not device_visible(env, node):
        why = f"no GPU device visible ({node} absent or CUDA_VISIBLE_DEVICES empty)"
    elif not manifest_allows:
        why = "the manifest marks the model not GPU-suitable (gpu.suitable false)"
    elif CUDA_PROVIDER not in (offered := available(api or capi.api())):
        why = (f"this onnxruntime offers {', '.join(offered)}, not {CUDA_PROVIDER} "
               "(the onnxruntime-gpu wheel has it)")
    else:
        return Choice("cuda", f"{CUDA_PROVIDER} offered and a GPU device visible")
    if setting == "cuda":
        raise ProviderError(f"ONNX_LAMBDA_EXECUTION_PROVIDER=cuda, but {why}")
    return Choice("cpu", why)


def append_cuda(api: capi.Api, options: c_void_p) -> None:
    """Put the CUDA provider first on a session's options (CPU stays as the fallback)."""
    cuda = c_void_p()
    api.check(api.CreateCUDAProviderOptions(byref(cuda)))
    try:
        keys = (c_char_p * len(CUDA_OPTIONS))(*(k.encode() for k in CUDA_OPTIONS))
        values = (c_char_p * len(CUDA_OPTIONS))(*(v.encode() for v in CUDA_OPTIONS.values()))
        api.check(api.UpdateCUDAProviderOptions(cuda, keys, values, len(CUDA_OPTIONS)))
        api.check(api.SessionOptionsAppendExecutionProvider_CUDA_V2(options, cuda))
    finally:
        api.ReleaseCUDAProviderOptions(cuda)
