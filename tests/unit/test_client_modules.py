"""Module images given as host addresses: their length is read from what lies there."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from cricket_client.modules import ImageError, image_bytes, image_length_at

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
