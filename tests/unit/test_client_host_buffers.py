"""Host memory in copies: buffers and integer addresses, read and written in place."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from cricket_client.host_buffers import (
    HostBufferError,
    check_writable,
    read_host,
    writable_view,
    write_host,
)


def test_read_from_buffers_and_addresses() -> None:
    arr = np.arange(8, dtype=np.uint16)
    assert bytes(read_host(arr, 16, "t")) == arr.tobytes()
    assert bytes(read_host(arr.ctypes.data, 4, "t")) == arr.tobytes()[:4]
    assert bytes(read_host(b"abcdef", 3, "t")) == b"abc"
    assert read_host(None, 0, "t") == b""


def test_write_in_place() -> None:
    arr = np.zeros(4, dtype=np.uint32)
    write_host(arr, b"\x01\x00\x00\x00\x02\x00\x00\x00", "t", offset=4)
    assert list(arr) == [0, 1, 2, 0]
    cell = ctypes.create_string_buffer(4)
    write_host(ctypes.addressof(cell), b"wxyz", "t")
    assert cell.raw == b"wxyz"
    immutable = bytes(bytearray(4))  # a fresh bytes object: cuda-python writes into those too
    write_host(immutable, b"done", "t")
    assert immutable == b"done"


def test_too_small_read_only_and_strided_buffers_are_refused() -> None:
    with pytest.raises(HostBufferError, match="holds 2 bytes, 4 asked for"):
        read_host(b"ab", 4, "cuMemcpyHtoD: srcHost")
    with pytest.raises(HostBufferError, match="read-only"):
        write_host(memoryview(b"abcd"), b"x", "t")
    with pytest.raises(HostBufferError, match="4 bytes, 8 needed"):
        write_host(bytearray(4), b"12345678", "t")
    with pytest.raises(HostBufferError, match="not contiguous"):
        read_host(np.zeros(8, np.uint8)[::2], 4, "t")
    with pytest.raises(HostBufferError, match="NULL host pointer"):
        write_host(0, b"x", "t")
    with pytest.raises(HostBufferError, match="buffer protocol"):
        read_host("text", 4, "t")


def test_destination_checked_before_data_moves() -> None:
    check_writable(bytearray(8), 8, "t")
    check_writable(12345, 8, "t")
    with pytest.raises(HostBufferError, match="holds 4 bytes, 8 needed"):
        check_writable(np.zeros(1, np.uint32), 8, "cuMemcpyDtoH: dstHost")
    with pytest.raises(HostBufferError, match="read-only"):
        check_writable(memoryview(b"12345678"), 8, "t")


def test_a_writable_view_refuses_as_check_writable_and_writes_in_place() -> None:
    for dst, match in [
        (np.zeros(1, np.uint32), "holds 4 bytes, 8 needed"),
        (memoryview(b"12345678"), "read-only"),
        (b"1234", "holds 4 bytes, 8 needed"),
        (0, "NULL host pointer"),
        ("text", "buffer protocol"),
        (np.zeros(16, np.uint8)[::2], "not contiguous"),
    ]:
        with pytest.raises(HostBufferError, match=match):
            writable_view(dst, 8, "cuMemcpyDtoH: dstHost")
    out = np.zeros(4, np.uint32)
    writable_view(out, 8, "t")[:] = bytes(range(8))
    assert out.tobytes() == bytes(range(8)) + bytes(8)
    immutable = bytes(8)
    writable_view(immutable, 2, "t")[:] = b"ok"  # cuda-python writes into bytes in place too
    assert immutable[:2] == b"ok"
    assert len(writable_view(bytearray(), 0, "t")) == 0
