"""``handler.codecs.npy``: our own strict ``.npy`` reader and writer against numpy's."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from handler.codecs.npy import header, load_npz, parse
from handler.errors import BadRequestError
from handler.ort.tensor import Tensor


def _saved(array: np.ndarray, version: tuple[int, int] = (1, 0)) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=version, allow_pickle=False)
    return buffer.getvalue()


@pytest.mark.parametrize("array", [
    np.arange(24, dtype=">f4").reshape(2, 3, 4),
    np.asfortranarray(np.arange(24, dtype="<i8").reshape(2, 3, 4)),
    np.asfortranarray(np.arange(6, dtype=">u2").reshape(3, 2)),
    np.array(3.5, np.float16), np.zeros((0, 3), bool), np.arange(5, dtype=np.float64),
    np.array(["héllo", "", "ab"]), np.array([b"x", b"yz"]), np.array(["ü"], dtype=">U3"),
], ids=lambda a: f"{a.dtype.str}{list(a.shape)}{'F' if a.flags.f_contiguous else ''}")
@pytest.mark.parametrize("version", [(1, 0), (2, 0)])
def test_reads_what_numpy_writes(array: np.ndarray, version: tuple[int, int]) -> None:
    tensor = parse(_saved(array, version))
    want = [v.decode() if isinstance(v, bytes) else v for v in array.ravel().tolist()]
    assert tensor.shape == array.shape and tensor.flat() == want


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "uint64", "bool"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 0), (1, 2, 3)])
def test_writes_what_numpy_writes(dtype: str, shape: tuple[int, ...]) -> None:
    array = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape).astype(dtype)
    ours = header(Tensor(dtype, shape, array.tobytes())) + array.tobytes()
    assert ours == _saved(array)


def _raw(text: str, data: bytes) -> bytes:
    text += " " * (-(len(text) + 11) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode() + data


@pytest.mark.parametrize(("body", "message"), [
    (_raw("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", b"\0" * 8),
     "object arrays are refused"),
    (_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", b"\0" * 4),
     "exactly"),
    (_raw("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", b"\0" * 4), "exactly"),
    (b"\x93NUMPY\x03\x00", "format version"),
    (b"PK\x03\x04", ".npz archive"),
    (b"\x93NUMPY\x01\x00\xff\x00{}", "truncated header"),
    (_saved(np.zeros(2, np.complex64)), "not supported"),
    (_saved(np.zeros(3, np.float32))[:-1], "bytes of data follow"),
])
def test_refusals(body: bytes, message: str) -> None:
    with pytest.raises(BadRequestError, match=message):
        parse(body)


def test_npz_members(tmp_path: Path) -> None:
    np.savez(tmp_path / "e.npz", x=np.arange(3, dtype=np.float32), s=np.array(["a"]))
    assert {k: v.tolist() for k, v in load_npz(tmp_path / "e.npz").items()} == {
        "x": [0.0, 1.0, 2.0], "s": ["a"]}
