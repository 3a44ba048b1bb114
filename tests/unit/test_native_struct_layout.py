"""The C structs the native libcuda.so.1 reads and writes (families.STRUCTS, CUlaunchConfig)
have the layout of CUDA 12/13's cuda.h on LP64: sizes and offsets derived by hand from the
header's declarations (8-byte pointers and size_t, 4-byte enums, natural alignment), and, where
cuda-bindings is installed, each field found at the offset its own struct objects keep it."""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

cffi = pytest.importorskip("cffi")

from cricket_client.native.signatures import C_TYPES  # noqa: E402

# struct -> (sizeof, {field: offset})
LAYOUT: dict[str, tuple[int, dict[str, int]]] = {
    "CUmemLocation": (8, {"type": 0, "id": 4}),
    "CUmemAllocationProp": (
        32, {"type": 0, "requestedHandleTypes": 4, "location": 8, "win32HandleMetaData": 16, "allocFlags": 24},
    ),
    "CUmemAccessDesc": (12, {"location": 0, "flags": 8}),
    "CUmemPoolProps": (
        88,
        {"allocType": 0, "handleTypes": 4, "location": 8, "win32SecurityAttributes": 16,
         "maxSize": 24, "usage": 32, "reserved": 34},
    ),
    "CUDA_KERNEL_NODE_PARAMS": (
        72,
        {"func": 0, "gridDimX": 8, "gridDimY": 12, "gridDimZ": 16, "blockDimX": 20,
         "blockDimY": 24, "blockDimZ": 28, "sharedMemBytes": 32, "kernelParams": 40,
         "extra": 48, "kern": 56, "ctx": 64},
    ),
    "CUDA_MEMSET_NODE_PARAMS": (
        40, {"dst": 0, "pitch": 8, "value": 16, "elementSize": 20, "width": 24, "height": 32},
    ),
    "CUDA_MEMCPY2D": (
        128,
        {"srcXInBytes": 0, "srcY": 8, "srcMemoryType": 16, "srcHost": 24, "srcDevice": 32,
         "srcArray": 40, "srcPitch": 48, "dstXInBytes": 56, "dstY": 64, "dstMemoryType": 72,
         "dstHost": 80, "dstDevice": 88, "dstArray": 96, "dstPitch": 104, "WidthInBytes": 112,
         "Height": 120},
    ),
    "CUDA_MEMCPY3D": (
        200,
        {"srcXInBytes": 0, "srcY": 8, "srcZ": 16, "srcLOD": 24, "srcMemoryType": 32,
         "srcHost": 40, "srcDevice": 48, "srcArray": 56, "reserved0": 64, "srcPitch": 72,
         "srcHeight": 80, "dstXInBytes": 88, "dstY": 96, "dstZ": 104, "dstLOD": 112,
         "dstMemoryType": 120, "dstHost": 128, "dstDevice": 136, "dstArray": 144,
         "reserved1": 152, "dstPitch": 160, "dstHeight": 168, "WidthInBytes": 176,
         "Height": 184, "Depth": 192},
    ),
    "CUDA_ARRAY_DESCRIPTOR": (24, {"Width": 0, "Height": 8, "Format": 16, "NumChannels": 20}),
    "CUDA_ARRAY3D_DESCRIPTOR": (
        40, {"Width": 0, "Height": 8, "Depth": 16, "Format": 24, "NumChannels": 28, "Flags": 32},
    ),
    "CUgraphEdgeData": (8, {"from_port": 0, "to_port": 1, "type": 2, "reserved": 3}),
    "CUDA_RESOURCE_DESC": (144, {"resType": 0, "res": 8, "flags": 136}),
    "CUDA_TEXTURE_DESC": (
        104,
        {"addressMode": 0, "filterMode": 12, "flags": 16, "maxAnisotropy": 20,
         "mipmapFilterMode": 24, "mipmapLevelBias": 28, "minMipmapLevelClamp": 32,
         "maxMipmapLevelClamp": 36, "borderColor": 40, "reserved": 56},
    ),
    "CUDA_RESOURCE_VIEW_DESC": (
        112,
        {"format": 0, "width": 8, "height": 16, "depth": 24, "firstMipmapLevel": 32,
         "lastMipmapLevel": 36, "firstLayer": 40, "lastLayer": 44, "reserved": 48},
    ),
    "CUgraphExecUpdateResultInfo": (24, {"result": 0, "errorNode": 8, "errorFromNode": 16}),
    "CUlaunchConfig": (
        56,
        {"gridDimX": 0, "gridDimY": 4, "gridDimZ": 8, "blockDimX": 12, "blockDimY": 16,
         "blockDimZ": 20, "sharedMemBytes": 24, "hStream": 32, "attrs": 40, "numAttrs": 48},
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def ffi() -> Any:
    made = cffi.FFI()
    made.cdef(C_TYPES)
    return made


@pytest.mark.parametrize("name", sorted(LAYOUT))
def test_struct_size_and_offsets(ffi: Any, name: str) -> None:
    size, offsets = LAYOUT[name]
    assert ffi.sizeof(name) == size
    assert {field: ffi.offsetof(name, field) for field in offsets} == offsets
    assert sorted(offsets) == sorted(f for f, _ in ffi.typeof(name).fields)


def test_the_resource_union(ffi: Any) -> None:
    """CUDA_RESOURCE_DESC.res: 128 bytes (its reserved int[32]), each member from offset 0."""
    res = dict(ffi.typeof("CUDA_RESOURCE_DESC").fields)["res"].type
    assert ffi.sizeof(res) == 128
    members = {name: f.type for name, f in res.fields}
    assert {name: ffi.sizeof(t) for name, t in members.items()} == {
        "array": 8, "mipmap": 8, "linear": 24, "pitch2D": 40, "reserved": 128,
    }
    assert [f.offset for _, f in members["pitch2D"].fields] == [0, 8, 12, 16, 24, 32]

    driver = pytest.importorskip("cuda.bindings.driver")
    theirs = driver.CUDA_RESOURCE_DESC()
    theirs.res.pitch2D.pitchInBytes = 1
    raw = ctypes.string_at(theirs.getPtr(), 144)
    assert raw.index(b"\x01") == 8 + 32


def test_allocation_flags_inside_the_allocation_property(ffi: Any) -> None:
    flags = ffi.typeof("CUmemAllocationProp").fields[-1][1].type
    assert ffi.sizeof(flags) == 8
    assert [f.offset for _, f in flags.fields] == [0, 1, 2, 4]


FLOAT_ONE_ULP = 1.0000001192092896  # 0x3f800001: its first byte is not zero


def _set_nonzero(struct: Any, field: str) -> bool:
    """Set `field` of a cuda-bindings struct to a non-zero value of its type whose first
    (lowest) byte is not zero."""
    try:
        is_float = isinstance(getattr(struct, field), float)
    except (AttributeError, ValueError):  # an enum field holding 0, no member of its enum
        is_float = False
    if is_float:
        setattr(struct, field, FLOAT_ONE_ULP)
        return True
    try:
        setattr(struct, field, 1)
        return True
    except (TypeError, ValueError, AttributeError):
        pass
    try:
        current = getattr(struct, field)
        setattr(struct, field, type(current)(1))
        return True
    except (TypeError, ValueError, AttributeError):
        return False


@pytest.mark.parametrize("name", sorted(set(LAYOUT) - {"CUlaunchConfig"}))
def test_offsets_agree_with_cuda_bindings(name: str) -> None:
    """Each field, set alone in a zeroed cuda-bindings struct, shows up at our offset."""
    driver = pytest.importorskip("cuda.bindings.driver")
    size, offsets = LAYOUT[name]
    checked = 0
    for field, offset in offsets.items():
        if field.startswith("reserved") or field in ("allocFlags", "location", "res", "win32HandleMetaData", "win32SecurityAttributes"):
            continue
        struct = getattr(driver, name)()
        if not _set_nonzero(struct, field):
            continue
        raw = ctypes.string_at(struct.getPtr(), size)
        first = next(i for i, b in enumerate(raw) if b)
        assert first == offset, f"{name}.{field}: cuda-bindings has it at {first}"
        checked += 1
    assert checked >= len(offsets) // 2, f"{name}: too few fields could be set"
    if "location" in offsets:
        struct = getattr(driver, name)()
        struct.location.id = 1
        raw = ctypes.string_at(struct.getPtr(), size)
        assert raw.index(b"\x01") == offsets["location"] + 4
