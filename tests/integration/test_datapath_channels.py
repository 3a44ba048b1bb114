"""Data channels: authentication by the offer's secret, parts split and joined exactly."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from cricket_client.datapath.channels import ClientChannels
from cricket_server.datapath.channels import ChannelListener
from rpc_spec.data_channel import HELLO_FORMAT, ChannelError, part_bounds


@pytest.mark.parametrize(("n", "k"), [(0, 4), (1, 4), (3, 2), (4097, 4), (10, 3)])
def test_parts_cover_the_transfer_once(n: int, k: int) -> None:
    parts = part_bounds(n, k)
    assert len(parts) == k
    assert sum(m for _, m in parts) == n
    assert all(off + m == nxt for (off, m), (nxt, _) in zip(parts, parts[1:], strict=False))


def _connect_and_send(port: int, secret: bytes, index: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(HELLO_FORMAT.pack(secret, index))
    return sock


def test_a_channel_without_the_secret_is_refused() -> None:
    listener = ChannelListener("127.0.0.1", 1)
    try:
        intruder = _connect_and_send(listener.port, b"\0" * 32, 0)
        assert intruder.recv(1) == b""  # closed by the server
        intruder.close()
        deadline = time.monotonic() + 60
        while listener.refused == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert listener.refused == 1
        client = ClientChannels("127.0.0.1", listener.port, listener.secret, 1)
        channels = listener.wait(timeout=60)
        assert len(channels) == 1
        client.close()
        channels.close()
    finally:
        listener.close()


def test_a_listener_whose_channels_never_come_says_so() -> None:
    listener = ChannelListener("127.0.0.1", 2)
    try:
        with pytest.raises(ChannelError, match="2 of 2 data channels never connected"):
            listener.wait(timeout=0.2)
    finally:
        listener.close()


@pytest.mark.parametrize("n", [1, 3, 4097, 5 << 20])
def test_bytes_cross_both_ways_exactly(n: int) -> None:
    listener = ChannelListener("127.0.0.1", 4)
    client = ClientChannels("127.0.0.1", listener.port, listener.secret, 4)
    server = listener.wait(timeout=60)
    try:
        data = bytes((i * 7 + 3) % 251 for i in range(n))
        received = bytearray(n)
        sends = client.start_send(memoryview(data))
        server.receive_into(memoryview(received))
        assert all(f.exception() is None for f in sends)
        assert received == data
        back = bytearray(n)
        receives = client.start_receive(memoryview(back))
        thread = threading.Thread(target=server.send, args=(memoryview(received), n))
        thread.start()
        thread.join()
        assert all(f.exception() is None for f in receives)
        assert back == data
    finally:
        client.close()
        server.close()
        listener.close()


def test_a_failed_copy_sends_empty_parts() -> None:
    listener = ChannelListener("127.0.0.1", 2)
    client = ClientChannels("127.0.0.1", listener.port, listener.secret, 2)
    server = listener.wait(timeout=60)
    try:
        back = bytearray(b"untouched")
        receives = client.start_receive(memoryview(back))
        server.send(None, len(back))
        assert all(f.exception() is None for f in receives)
        assert back == b"untouched"
    finally:
        client.close()
        server.close()
        listener.close()


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1\0", "example.invalid"])
def test_the_listener_takes_only_an_ip_address(host: str) -> None:
    with pytest.raises(ValueError, match="is not an IP address"):
        ChannelListener(host, 1)
