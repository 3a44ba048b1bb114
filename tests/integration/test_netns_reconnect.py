"""Client and server in two network namespaces (pyroute2): the link goes down during a session
and comes back, and the client reconnects to its session and goes on.

The namespaces are joined by one veth pair (10.200.<n>.1 on the client's side, .2 on the
server's); the addresses exist only inside them. The server (sim, thread isolation) runs with
--idle-timeout 1 and --resume-grace 60: while the link is down it drops the silent
connection and keeps the session; the client's next call, sent while the link is still down,
finds the connection gone once the link is up, HELLOs with its session token and runs again.

Needs root (CAP_NET_ADMIN): skipped with the reason outside CI, a failure in CI (CI=true).
Every namespace, link and process the test makes is removed by finalizers.

Run as a script (`python test_netns_reconnect.py ADDRESS`), this file is the client.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from server_harness import LIMIT, ROOT, die_with_parent, running_server, wait_for


def _need_root() -> None:
    why = None
    if os.geteuid() != 0:
        why = "network namespaces need root (CAP_NET_ADMIN)"
    else:
        try:
            import pyroute2  # type: ignore[import-untyped]  # noqa: F401
        except ImportError:
            why = "pyroute2 is not installed"
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"network namespace test cannot run in CI: {why}")
        pytest.skip(why)


class Pair:
    """Two namespaces, `client` and `server`, joined by one veth pair."""

    def __init__(self, n: int) -> None:
        from pyroute2 import NetNS, netns

        tag = secrets.token_hex(3)
        self.client, self.server = f"crk-c-{tag}", f"crk-s-{tag}"
        self.client_if, self.server_if = f"rc{tag}", f"rs{tag}"
        self.client_ip, self.server_ip = f"10.200.{n}.1", f"10.200.{n}.2"
        netns.create(self.client)
        netns.create(self.server)
        with NetNS(self.client) as ns:
            ns.link("add", ifname=self.client_if, kind="veth", peer=self.server_if)
            peer = ns.link_lookup(ifname=self.server_if)[0]
            ns.link("set", index=peer, net_ns_fd=self.server)
        for name, ifname, ip in ((self.client, self.client_if, self.client_ip),
                                 (self.server, self.server_if, self.server_ip)):  # fmt: skip
            with NetNS(name) as ns:
                for link in ("lo", ifname):
                    index = ns.link_lookup(ifname=link)[0]
                    if link != "lo":
                        ns.addr("add", index=index, address=ip, prefixlen=30)
                    ns.link("set", index=index, state="up")

    def set_link(self, up: bool) -> None:
        """The server side of the pair up or down."""
        from pyroute2 import NetNS

        with NetNS(self.server) as ns:
            index = ns.link_lookup(ifname=self.server_if)[0]
            ns.link("set", index=index, state="up" if up else "down")

    def remove(self) -> None:
        from pyroute2 import netns

        for name in (self.client, self.server):  # the veth pair goes with its namespaces
            with contextlib.suppress(Exception):
                netns.remove(name)


@pytest.fixture
def pair() -> Iterator[Pair]:
    _need_root()
    made = Pair(secrets.randbelow(250) + 1)
    try:
        yield made
    finally:
        made.remove()


def test_the_client_reconnects_after_the_link_went_down_and_goes_on(
    pair: Pair, tmp_path: Path
) -> None:
    import subprocess

    options = ("--idle-timeout", "1", "--resume-grace", "60")
    prefix = ("ip", "netns", "exec", pair.server)
    with running_server(
        tmp_path, *options, backend="sim", listen=f"{pair.server_ip}:0", prefix=prefix
    ) as srv:
        client = subprocess.Popen(
            ["ip", "netns", "exec", pair.client, sys.executable, __file__, srv.address],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            preexec_fn=die_with_parent, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT), *sys.path])},
        )  # fmt: skip
        assert client.stdin is not None and client.stdout is not None
        try:
            line = client.stdout.readline().decode().split()
            assert line[:1] == ["working"], client.stderr.read().decode() if client.stderr else ""
            sid = line[1]
            pair.set_link(False)
            wait_for(lambda: f"session {sid}: connection lost; kept 60 s" in srv.log(), "a drop")
            client.stdin.write(b"go\n")  # its next call leaves while the link is down
            client.stdin.flush()
            time.sleep(1.0)
            pair.set_link(True)
            out, err = client.communicate(timeout=LIMIT)
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
        assert client.returncode == 0, err.decode()
        assert out.decode().split() == ["done", sid]
        log = srv.log()
        assert f"session {sid} resumed by {pair.client_ip}:" in log
        ends = [line for line in log.splitlines() if f"session {sid} end" in line]
        assert len(ends) == 1 and "end (goodbye)" in ends[0]  # one session, to the end


def client_main(address: str) -> None:
    """Build state, wait for the test's go (the link is down by then), check it, go on."""
    import cricket_client
    from cricket_client import driver as cuda
    from cricket_client.reconnect import enable_reconnect

    ok = cuda.CUresult.CUDA_SUCCESS
    conn = cricket_client.connect(address, timeout=LIMIT)
    enable_reconnect(conn, LIMIT)
    data = np.arange(1 << 16, dtype=np.uint32)
    assert cuda.cuInit(0) == (ok,)
    _, ctx = cuda.cuDevicePrimaryCtxRetain(0)
    assert cuda.cuCtxSetCurrent(ctx) == (ok,)
    _, ptr = cuda.cuMemAlloc(data.nbytes)
    assert cuda.cuMemcpyHtoD(ptr, data, data.nbytes) == (ok,)
    print("working", f"{conn.info.session_id:#x}", flush=True)
    assert sys.stdin.readline() == "go\n"
    out = np.empty_like(data)
    assert cuda.cuMemcpyDtoH(out, ptr, out.nbytes) == (ok,)
    assert (out == data).all(), "the session's data changed"
    assert cuda.cuMemsetD32(ptr, 7, data.size) == (ok,)
    assert cuda.cuMemcpyDtoH(out, ptr, out.nbytes) == (ok,)
    assert (out == 7).all()
    print("done", f"{conn.info.session_id:#x}", flush=True)
    conn.close()


if __name__ == "__main__":
    client_main(sys.argv[1])
