"""The native door's launch packer (cricket_client.native.launch_pack): the C copy of
`void **kernelParams` into one buffer gives, for several parameter layouts, the bytes
cricket_client.kernel_args packs, and the launch_args the Python client sends (compiled here
with cffi and gcc, no server)."""

from __future__ import annotations

import ctypes
import importlib.util
import shutil
from typing import Any

import pytest

cffi = pytest.importorskip("cffi")
if shutil.which("gcc") is None:
    pytest.skip("needs gcc", allow_module_level=True)

from cricket_client.driver import _launch_body  # noqa: E402
from cricket_client.kernel_args import LaunchArgumentError, pack_kernel_params  # noqa: E402
from cricket_client.native.launch_pack import PACK_C, PACK_CDEF, ParamPacker  # noqa: E402


@pytest.fixture(scope="module")
def packlib(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("pack")
    ffi = cffi.FFI()
    ffi.cdef(PACK_CDEF)
    ffi.set_source("_cricket_pack_test", "#include <stdint.h>\n#include <string.h>\n" + PACK_C)
    built = ffi.compile(tmpdir=str(tmp))
    spec = importlib.util.spec_from_file_location("_cricket_pack_test", built)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pointer_array(values: list[bytes]) -> tuple[int, list[Any]]:
    """A `void *[]` pointing at a copy of each value; (its address, what keeps it alive)."""
    cells = [ctypes.create_string_buffer(v, len(v)) for v in values]
    array = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.addressof(c) for c in cells])
    return ctypes.addressof(array), [array, *cells]


LAYOUTS = {
    "pointer, int, double with a gap": ((0, 8), (8, 4), (16, 8)),
    "bytes, short, struct": ((0, 1), (2, 2), (4, 4), (8, 24)),
    "one char (padded to 4 on the wire)": ((0, 1),),
    "a zero-size parameter": ((0, 8), (8, 0), (8, 4)),
    "large struct": ((0, 4), (8, 256)),
}


@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=list(LAYOUTS))
def test_packed_bytes_equal_kernel_args(packlib: Any, layout: tuple[tuple[int, int], ...]) -> None:
    values = [bytes((7 * i + j + 1) & 0xFF for j in range(size)) for i, (_, size) in enumerate(layout)]
    address, keep = _pointer_array(values)
    packer = ParamPacker(packlib.ffi, packlib.lib, layout)
    expected = pack_kernel_params("k", layout, address)
    assert packer.pack(address) == expected
    func, grid, block = 0x5000000000000012, (3, 2, 1), (128, 1, 1)
    body = packer.body(func, *grid, *block, 64, 2, address)
    assert body == _launch_body(func, grid, block, 64, 2, expected)  # stream 2: per-thread
    del keep


def test_no_parameters(packlib: Any) -> None:
    packer = ParamPacker(packlib.ffi, packlib.lib, ())
    assert packer.pack(0) == b"" == pack_kernel_params("k", (), 0)
    assert packer.body(1, 1, 1, 1, 1, 1, 1, 0, 0, 0) == _launch_body(1, (1, 1, 1), (1, 1, 1), 0, 0, b"")


def test_null_pointers_go_to_the_general_path(packlib: Any) -> None:
    """No array, or a NULL pointer in it: not packed here (the general path names it)."""
    layout = ((0, 8), (8, 4))
    packer = ParamPacker(packlib.ffi, packlib.lib, layout)
    assert packer.pack(0) is None
    first = ctypes.c_uint64(5)
    array = (ctypes.c_void_p * 2)(ctypes.addressof(first), None)
    assert packer.pack(ctypes.addressof(array)) is None
    with pytest.raises(LaunchArgumentError, match="parameter 1: NULL pointer"):
        pack_kernel_params("k", layout, ctypes.addressof(array))
