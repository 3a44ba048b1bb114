"""Migration between two sim servers in two network namespaces (pyroute2).

Namespace A runs cricket-server, namespace B runs cricket-restart; the client runs in the
root namespace and reaches each through a veth pair whose private 10.x addresses exist only
between the root namespace and that namespace. The client builds state on A (allocations of
several sizes, a linked list of device pointers in device memory, a module with a global, a
stream, an event), checkpoints into a directory both servers read, A is killed with its
workers, B restores, and the client, redirected to B, goes on: same pointers, same handles,
contents bit-exact, the list kernel still walks the list.

Needs root (CAP_NET_ADMIN): skipped with the reason outside CI, a failure in CI (CI=true).
Every namespace, link and process the test makes is removed by finalizers.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import secrets
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from server_harness import Server, start_server

import cricket_client
from cricket_client import driver as cuda

ROOT = Path(__file__).resolve().parents[2]
CUBIN = ROOT / "tests" / "kernels" / "test_kernels.sm_90.cubin"
SIZES = [1, 100, 4096, 65536 + 3, 1 << 20, (3 << 20) + 17]


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
            pytest.fail(f"migration test cannot run in CI: {why}")
        pytest.skip(why)


class Namespace:
    """A network namespace joined to the root namespace by one veth pair, 10.<net>.<n>.0/30:
    .1 on the root side, .2 inside."""

    def __init__(self, name: str, net: int, n: int) -> None:
        from pyroute2 import IPRoute, NetNS, netns  # type: ignore[import-untyped]

        self.name = name
        self.outside = f"10.{net}.{n}.1"
        self.inside = f"10.{net}.{n}.2"
        self.link = f"ck{secrets.token_hex(3)}"
        netns.create(name)
        with IPRoute() as ip:
            ip.link("add", ifname=self.link, kind="veth", peer=f"{self.link}p")
            peer = ip.link_lookup(ifname=f"{self.link}p")[0]
            ip.link("set", index=peer, net_ns_fd=name)
            index = ip.link_lookup(ifname=self.link)[0]
            ip.addr("add", index=index, address=self.outside, prefixlen=30)
            ip.link("set", index=index, state="up")
        with NetNS(name) as ns:
            for ifname in ("lo", f"{self.link}p"):
                index = ns.link_lookup(ifname=ifname)[0]
                if ifname != "lo":
                    ns.addr("add", index=index, address=self.inside, prefixlen=30)
                ns.link("set", index=index, state="up")

    def remove(self) -> None:
        from pyroute2 import IPRoute, netns  # type: ignore[import-untyped]

        with contextlib.suppress(Exception), IPRoute() as ip:
            found = ip.link_lookup(ifname=self.link)
            if found:
                ip.link("del", index=found[0])
        with contextlib.suppress(Exception):
            netns.remove(self.name)

    def enter(self) -> Callable[[], None]:
        """Called in a child before exec: moves it into this namespace."""
        name = self.name

        def preexec() -> None:
            from pyroute2 import netns  # type: ignore[import-untyped]

            netns.setns(name)

        return preexec


@pytest.fixture
def namespaces() -> Iterator[list[Namespace]]:
    _need_root()
    made: list[Namespace] = []
    net = random.Random().randrange(64, 190)  # 10.200.x.x: the link-loss test's namespaces
    try:
        for n, role in enumerate(("a", "b"), start=1):
            made.append(Namespace(f"cricket-{role}-{secrets.token_hex(3)}", net, n))
    except Exception as e:
        for ns in made:
            ns.remove()
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"cannot make network namespaces here: {e}")
    yield made
    for ns in made:
        ns.remove()


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.kill()


def check(result: tuple[Any, ...]) -> Any:
    err, *values = result
    assert err == cuda.CUresult.CUDA_SUCCESS, f"{err!r}: {cricket_client.last_error_message()}"
    return values[0] if len(values) == 1 else tuple(values) or None


def read(ptr: Any, size: int) -> bytes:
    out = bytearray(size)
    check(cuda.cuMemcpyDtoH(out, ptr, size))
    return bytes(out)


def list_sum(kernels: Any, head: int) -> int:
    func = check(cuda.cuModuleGetFunction(kernels, b"list_sum"))
    out = check(cuda.cuMemAlloc(4))
    check(cuda.cuLaunchKernel(func, 1, 1, 1, 1, 1, 1, 0, 0, ((head, out), (None, None)), 0))
    total = struct.unpack("<i", read(out, 4))[0]
    check(cuda.cuMemFree(out))
    return total


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_session_migrates_between_servers_in_two_network_namespaces(
    tmp_path: Path,
    namespaces: list[Namespace],
    servers: list[Server],
    monkeypatch: pytest.MonkeyPatch,
    isolation: str,
) -> None:
    a, b = namespaces
    monkeypatch.delenv(cricket_client.ADDRESS_ENV, raising=False)
    first = start_server(
        tmp_path, "--checkpoint-root", str(tmp_path), backend="sim", isolation=isolation,
        listen=f"{a.inside}:0", name="a", enter=a.enter(),
    )  # fmt: skip
    servers.append(first)
    assert first.address.startswith(a.inside)
    conn = cricket_client.connect(first.address, make_default=True)
    try:
        check(cuda.cuInit(0))
        check(cuda.cuCtxSetCurrent(check(cuda.cuDevicePrimaryCtxRetain(0))))
        rng = random.Random(5)
        data = {}
        for size in SIZES:
            ptr = check(cuda.cuMemAlloc(size))
            data[int(ptr)] = (ptr, rng.randbytes(size))
            check(cuda.cuMemcpyHtoD(ptr, data[int(ptr)][1], size))
        big = next(p for p, d in data.values() if len(d) == 1 << 20)
        nodes = [int(big) + 4096 * (i + 1) for i in range(5)]
        for i, node in enumerate(nodes):
            nxt = nodes[i + 1] if i + 1 < len(nodes) else 0
            check(cuda.cuMemcpyHtoD(node, struct.pack("<Qi4x", nxt, 10 * (i + 1)), 16))
        kernels = check(cuda.cuModuleLoadData(CUBIN.read_bytes()))
        add = check(cuda.cuModuleGetFunction(kernels, b"add_to_counter"))
        check(cuda.cuLaunchKernel(add, 1, 1, 1, 8, 1, 1, 0, 0, ((3,), (ctypes.c_int,)), 0))
        stream = check(cuda.cuStreamCreate(1))
        event = check(cuda.cuEventCreate(0))
        check(cuda.cuEventRecord(event, stream))
        contents = {p: read(ptr, len(d)) for p, (ptr, d) in data.items()}
        cricket_client.checkpoint(tmp_path / "moving")
        first.kill()  # SIGKILL, with its workers: a node lost

        second = start_server(
            tmp_path, "--checkpoint-root", str(tmp_path), backend="sim", isolation=isolation,
            listen=f"{b.inside}:0", name="b", program=("cricket_server", "restart", str(tmp_path / "moving")), enter=b.enter(),
        )  # fmt: skip
        servers.append(second)
        assert second.address.startswith(b.inside)
        cricket_client.redirect(second.address)

        assert {p: read(ptr, len(d)) for p, (ptr, d) in data.items()} == contents
        assert conn.address == second.address
        assert list_sum(kernels, nodes[0]) == sum(10 * (i + 1) for i in range(5))
        check(cuda.cuStreamSynchronize(stream))
        check(cuda.cuEventRecord(event, stream))
        check(cuda.cuEventSynchronize(event))
        check(cuda.cuLaunchKernel(add, 1, 1, 1, 8, 1, 1, 0, 0, ((1,), (ctypes.c_int,)), 0))
        counter, _ = check(cuda.cuModuleGetGlobal(kernels, b"counter"))
        assert struct.unpack("<i", read(counter, 4))[0] == 8 * 3 + 8 * 1
    finally:
        conn.close()
