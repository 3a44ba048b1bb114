"""A server host that vanishes during a long call: the client's TCP keepalive notices it.

Client and server sit in two network namespaces joined by one veth pair (as in
tests/unit/test_netns_reconnect.py). The server is a silent peer that reads the call and never
answers, as a long cuCtxSynchronize would; then the link goes down, so nothing of the server
answers any more, not even its kernel. The client waits without a call timeout; keepalive
(shortened here to 1 s idle, 1 s interval, 2 probes) must end the wait with ConnectionLost.

Needs root (CAP_NET_ADMIN) and pyroute2: skipped with the reason otherwise.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import die_with_parent
from test_netns_reconnect import Pair, _need_root

BOUND = 30.0

SILENT_PEER = """
import socket, sys
listener = socket.create_server((sys.argv[1], 0))
print(listener.getsockname()[1], flush=True)
sock, _ = listener.accept()
while sock.recv(65536):
    pass
"""

CLIENT = """
import sys, time
from cricket_xdr.rpc import client as rpc_client
from cricket_xdr.rpc.errors import ConnectionLost
rpc_client.KEEPALIVE = (1, 1, 2)
c = rpc_client.RpcClient((sys.argv[1], int(sys.argv[2])))
pending = c.call_async(0x20000001, 1, 5)
print("sent", flush=True)
started = time.monotonic()
try:
    pending.result()
except ConnectionLost as exc:
    print("lost", round(time.monotonic() - started, 1), exc, flush=True)
"""


@pytest.fixture
def pair() -> Iterator[Pair]:
    _need_root()
    made = Pair(250 - int(time.time()) % 50)
    try:
        yield made
    finally:
        made.remove()


def test_a_vanished_server_host_ends_a_waiting_call_with_connection_lost(pair: Pair) -> None:
    procs: list[subprocess.Popen[bytes]] = []

    def start(ns: str, code: str, *args: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-c", code, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=die_with_parent,
            cwd=Path(__file__).resolve().parents[2],
        )  # fmt: skip
        procs.append(proc)
        return proc

    try:
        peer = start(pair.server, SILENT_PEER, pair.server_ip)
        assert peer.stdout is not None
        port = peer.stdout.readline().decode().strip()
        assert port.isdigit(), peer.stderr.read().decode() if peer.stderr else ""
        client = start(pair.client, CLIENT, pair.server_ip, port)
        assert client.stdout is not None
        assert client.stdout.readline() == b"sent\n"
        time.sleep(0.5)  # the call has arrived; the peer keeps silent
        pair.set_link(False)
        try:
            out, err = client.communicate(timeout=BOUND)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the client still waits {BOUND} s after the server host vanished")
        words = out.decode().split()
        assert words[:1] == ["lost"], err.decode()
        assert "keepalive" in out.decode()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
