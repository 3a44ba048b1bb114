"""Fixtures of the interop tests: the C peers, the generated module, our echo server, rpcbind.

Every process started here runs in its own process group and is stopped with it.
A missing peer (rpcgen, gcc, libtirpc-dev, rpcbind, rpcinfo) skips the tests that need it,
except in CI (CI=true), where it fails them: .ci/run must install it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from types import ModuleType
from typing import NoReturn

import pytest
from alltypes_cases import Case, build_cases
from alltypes_echo import PyServer, echo_services
from cbuild import SPEC, CPeers, build, missing_tools

from cricket_xdr.rpc.client import Address
from cricket_xdr.rpc.server import RpcServer

RPCBIND_PORT = 111
STARTUP_DEADLINE_S = 60.0


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing_peer(what: str) -> NoReturn:
    """Skips outside CI; fails in CI, where .ci/run should have installed it."""
    if in_ci():
        pytest.fail(f"missing in CI (.ci/run must install it): {what}", pytrace=False)
    pytest.skip(f"not installed: {what}")


def find_tool(name: str) -> str | None:
    """A tool on PATH or in /usr/sbin (where Debian puts rpcbind and rpcinfo)."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def stop_group(proc: subprocess.Popen[str]) -> str:
    """Stops proc and everything in its process group; returns what it had left to read."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        out, err = proc.communicate()
    except ValueError:  # already stopped and read
        return ""
    return (out or "") + (err or "")


def listening(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def c_peers(tmp_path_factory: pytest.TempPathFactory) -> CPeers:
    """rpcgen -N -M output of alltypes.x built against libtirpc: server, client, codec."""
    missing = missing_tools()
    if missing:
        missing_peer(", ".join(missing))
    return build(tmp_path_factory.mktemp("alltypes_c"))


@pytest.fixture(scope="session")
def alltypes(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The module our compiler generates from alltypes.x (`python -m cricket_xdr`)."""
    out = tmp_path_factory.mktemp("alltypes_py") / "alltypes_rpc.py"
    proc = subprocess.run(
        [sys.executable, "-m", "cricket_xdr", str(SPEC), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.fail(f"cricket_xdr failed on {SPEC.name} ({proc.returncode}):\n{proc.stderr}")
    spec = importlib.util.spec_from_file_location("alltypes_rpc", out)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["alltypes_rpc"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def cases(alltypes: ModuleType) -> dict[str, Case]:
    return build_cases(alltypes)


def start_c_server(c_peers: CPeers, where: str) -> tuple[subprocess.Popen[str], int]:
    """Starts the rpcgen C server (c/server.c) on `where`; returns it and its TCP port."""
    proc = subprocess.Popen(
        [str(c_peers.server), where],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.strip().isdigit():
        pytest.fail(f"C server on {where} did not start: {line!r} {stop_group(proc)}")
    return proc, int(line)


@pytest.fixture(scope="session", params=["tcp", "unix"])
def c_server(
    request: pytest.FixtureRequest, c_peers: CPeers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Address]:
    """The rpcgen C server on 127.0.0.1 or on a Unix socket; yields its RpcClient address."""
    if request.param == "tcp":
        proc, port = start_c_server(c_peers, "0")
        address: Address = ("127.0.0.1", port)
    else:
        path = tmp_path_factory.mktemp("c_server") / "alltypes.sock"
        proc, _ = start_c_server(c_peers, f"unix:{path}")
        address = f"unix:{path}"
    try:
        yield address
    finally:
        stop_group(proc)


@pytest.fixture(scope="session")
def py_server(alltypes: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PyServer]:
    """Our RpcServer with the echo services, on 127.0.0.1 and on a Unix socket."""

    v1, v2 = echo_services(alltypes)
    server = RpcServer([v1, v2])
    _, port = server.listen_tcp("127.0.0.1", 0)
    unix_path = server.listen_unix(str(tmp_path_factory.mktemp("py_server") / "alltypes.sock"))
    server.start()
    try:
        yield PyServer(port, unix_path, v1, v2)
    finally:
        server.shutdown()


@pytest.fixture(scope="session")
def rpcbind() -> Iterator[None]:
    """rpcbind on port 111: the one running, else `rpcbind -f -w` started here and stopped after."""
    if listening(RPCBIND_PORT):
        yield
        return
    binary = find_tool("rpcbind")
    if binary is None:
        missing_peer("rpcbind (Debian package rpcbind)")
    proc = subprocess.Popen(
        [binary, "-f", "-w"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + STARTUP_DEADLINE_S
        while not listening(RPCBIND_PORT):
            if proc.poll() is not None or time.monotonic() > deadline:
                out = stop_group(proc)
                pytest.fail(f"{binary} -f -w did not listen on port {RPCBIND_PORT}: {out}")
            time.sleep(0.05)
        yield
    finally:
        stop_group(proc)


@pytest.fixture(scope="session")
def rpcinfo() -> str:
    """Path of libtirpc's rpcinfo (Debian package rpcbind)."""
    binary = find_tool("rpcinfo")
    if binary is None:
        missing_peer("rpcinfo (Debian package rpcbind)")
    return binary
