"""CUDA_MEMCPY3D_BATCH_OP as the native library declares it (families.STRUCTS) has cuda.h's
layout on LP64: by hand (a 4-byte operand type, its union of 32 bytes at 8; two operands, the
extent, the access order and flags) and, where cuda-bindings is installed, each field where
its own struct objects keep it."""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

cffi = pytest.importorskip("cffi")

from cricket_client.native.signatures import C_TYPES  # noqa: E402

SIZE = 112
OFFSETS = {"src": 0, "dst": 40, "extent": 80, "srcAccessOrder": 104, "flags": 108}


@pytest.fixture(scope="module")
def ffi() -> Any:
    made = cffi.FFI()
    made.cdef(C_TYPES)
    return made


def test_by_hand(ffi: Any) -> None:
    assert ffi.sizeof("CUmemcpy3DOperand") == 40
    assert ffi.offsetof("CUmemcpy3DOperand", "op") == 8
    assert ffi.sizeof("CUDA_MEMCPY3D_BATCH_OP") == SIZE
    assert {f: ffi.offsetof("CUDA_MEMCPY3D_BATCH_OP", f) for f in OFFSETS} == OFFSETS


@pytest.mark.parametrize(
    ("path", "offset"),
    [
        ("dst.op.ptr.layerHeight", 40 + 8 + 16),
        ("src.op.array.offset.z", 8 + 8 + 16),
        ("src.op.ptr.locHint.id", 8 + 24 + 4),
        ("extent.depth", 80 + 16),
        ("flags", 108),
    ],
)
def test_where_cuda_bindings_keeps_each_field(path: str, offset: int) -> None:
    driver = pytest.importorskip("cuda.bindings.driver")
    theirs = driver.CUDA_MEMCPY3D_BATCH_OP()
    *outer, last = path.split(".")
    target = theirs
    for name in outer:
        target = getattr(target, name)
    setattr(target, last, 1)
    raw = ctypes.string_at(theirs.getPtr(), SIZE)
    assert raw.index(b"\x01") == offset
