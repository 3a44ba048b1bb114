"""Module images given as host addresses: their length is read from what lies there, and a
fat binary wrapper (as the CUDA runtime registers kernels) gives the fatbin it holds."""

from __future__ import annotations

import ctypes
import struct
from pathlib import Path

import pytest

from cricket_client.errors import NotSupportedRemotely
from cricket_client.modules import (
    FATBINC_MAGIC,
    ImageError,
    image_bytes,
    image_length_at,
    wrapped_fatbin,
)

KERNELS = Path(__file__).resolve().parents[1] / "kernels"


@pytest.mark.parametrize("name", ["test_kernels.sm_90.cubin", "test_kernels.fatbin", "test_kernels.compressed.fatbin"])
def test_binary_image_length_from_its_header(name: str) -> None:
    data = (KERNELS / name).read_bytes()
    buf = ctypes.create_string_buffer(data + b"trailing garbage", len(data) + 16)
    assert image_length_at(ctypes.addressof(buf)) == len(data)
    assert image_bytes(ctypes.addressof(buf)) == data


def test_ptx_at_an_address_is_read_to_its_nul() -> None:
    text = (KERNELS / "test_kernels.ptx").read_bytes()
    buf = ctypes.create_string_buffer(text)
    assert image_bytes(ctypes.addressof(buf)) == text + b"\0"


def test_ptx_buffer_gets_its_nul() -> None:
    assert bytes(image_bytes(b".version 8.0")) == b".version 8.0\0"
    assert bytes(image_bytes(b".version 8.0\0")) == b".version 8.0\0"


def test_binary_buffers_travel_unchanged() -> None:
    data = (KERNELS / "test_kernels.sm_90.cubin").read_bytes()
    assert bytes(image_bytes(data)) == data


def test_null_and_empty_images_are_refused() -> None:
    with pytest.raises(ImageError, match="NULL"):
        image_bytes(0)
    with pytest.raises(ImageError, match="empty"):
        image_bytes(b"")


def _wrapper(magic: int, version: int, data: int) -> ctypes.Array[ctypes.c_char]:
    """A __fatBinC_Wrapper_t (magic, version, the fatbin's address, no names) in host memory."""
    return ctypes.create_string_buffer(struct.pack("<IIQQ", magic, version, data, 0), 24)


def test_a_fatbin_wrapper_at_an_address_sends_the_fatbin_it_holds() -> None:
    # what the CUDA runtime passes to cuLibraryLoadData for a program's kernels
    data = (KERNELS / "test_kernels.fatbin").read_bytes()
    fatbin = ctypes.create_string_buffer(data, len(data))
    wrapper = _wrapper(FATBINC_MAGIC, 1, ctypes.addressof(fatbin))
    assert wrapped_fatbin(ctypes.addressof(wrapper)) == ctypes.addressof(fatbin)
    assert image_bytes(ctypes.addressof(wrapper)) == data


def test_fatbin_wrappers_the_client_cannot_send_are_refused_by_name() -> None:
    rdc = _wrapper(FATBINC_MAGIC, 2, 0x1000)  # relocatable device code: prelinked fatbins
    with pytest.raises(NotSupportedRemotely, match="version 2"):
        image_bytes(ctypes.addressof(rdc))
    empty = _wrapper(FATBINC_MAGIC, 1, 0)
    with pytest.raises(ImageError, match="without a fat binary"):
        image_bytes(ctypes.addressof(empty))
    other = _wrapper(0x12345678, 1, 0x1000)
    with pytest.raises(ImageError, match="not a fat binary wrapper"):
        wrapped_fatbin(ctypes.addressof(other))
