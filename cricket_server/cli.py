"""The `cricket-server` command: serve CRICKET_V1 on TCP and/or a Unix socket.

    cricket-server --listen 127.0.0.1:28463 --backend auto
    cricket-server --listen 127.0.0.1:0 --backend sim --ready-file /tmp/ready

`--ready-file` is written atomically once the server listens: "host:port" of the first TCP
address (or "unix:PATH" when there is none) and a newline. SIGTERM and SIGINT shut down
cleanly: connections closed, every session freed, exit status 0.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import tempfile
import threading
from importlib import metadata
from types import FrameType

import click

from cricket_server.backends import BACKEND_NAMES, make_backend
from cricket_server.memory import AddressArena
from cricket_server.service import CricketService
from cricket_server.session import SessionManager
from cricket_xdr.rpc.server import RpcServer

log = logging.getLogger("cricket_server")

DEFAULT_LISTEN = "127.0.0.1:28463"
_SUFFIXES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_address(text: str) -> tuple[str, int]:
    """HOST:PORT or [IPV6]:PORT -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise click.BadParameter(f"{text!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def parse_size(text: str) -> int:
    """Bytes, with an optional K/M/G/T suffix (powers of 1024): 512M, 8G, 1073741824."""
    value = text.strip().lower().removesuffix("ib").removesuffix("b")
    scale = _SUFFIXES.get(value[-1:], 1)
    if scale != 1:
        value = value[:-1]
    if not value.isdigit() or int(value) == 0:
        raise click.BadParameter(f"{text!r} is not a size in bytes (e.g. 8G, 512M, 1048576)")
    return int(value) * scale


def server_version() -> str:
    try:
        return metadata.version("cricket-python")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def write_ready_file(path: str, text: str) -> None:
    """Write `text` to `path` atomically (temporary file in the same folder, then rename)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ready-", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--listen",
    "listen",
    multiple=True,
    metavar="HOST:PORT",
    help=f"TCP address to serve on; repeatable; port 0 picks a free one (default {DEFAULT_LISTEN} "
    "unless --unix is given).",
)
@click.option(
    "--unix", "unix_path", metavar="PATH", help="Also (or only) serve on this Unix socket."
)
@click.option(
    "--backend",
    type=click.Choice(BACKEND_NAMES),
    default="auto",
    show_default=True,
    help="cuda: this machine's GPUs; sim: the software device; auto: cuda when a GPU answers.",
)
@click.option("--register", is_flag=True, help="Register the program with the local rpcbind.")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default="info",
    show_default=True,
)
@click.option(
    "--ready-file",
    metavar="PATH",
    help='Once listening, write "host:port" (or "unix:PATH") here, atomically.',
)
@click.option(
    "--sim-memory",
    metavar="BYTES",
    help="Size of the sim backend's device memory (e.g. 8G).",
)
def main(
    listen: tuple[str, ...],
    unix_path: str | None,
    backend: str,
    register: bool,
    log_level: str,
    ready_file: str | None,
    sim_memory: str | None,
) -> None:
    """Serve remote CUDA driver calls (ONC RPC program CRICKET_PROG, version 1)."""
    logging.basicConfig(
        level=log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    addresses = [parse_address(a) for a in listen]
    if not addresses and unix_path is None:
        addresses = [parse_address(DEFAULT_LISTEN)]
    if register and not addresses:
        raise click.UsageError("--register needs a TCP address (--listen)")
    sim_bytes = parse_size(sim_memory) if sim_memory is not None else None

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("%s: shutting down", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    the_backend = make_backend(backend, sim_memory=sim_bytes)
    try:
        arena = AddressArena(*the_backend.address_space())
        manager = SessionManager(the_backend, arena, server_version=server_version())
        server = RpcServer([CricketService(manager)])
        try:
            _serve(server, addresses, unix_path, register, ready_file, stop, the_backend.name)
        finally:
            server.shutdown()
            manager.close_all("server shutdown")
    finally:
        the_backend.close()
    log.info("cricket-server stopped")


def _serve(
    server: RpcServer,
    addresses: list[tuple[str, int]],
    unix_path: str | None,
    register: bool,
    ready_file: str | None,
    stop: threading.Event,
    backend_name: str,
) -> None:
    bound = [server.listen_tcp(host, port) for host, port in addresses]
    if unix_path is not None:
        server.listen_unix(unix_path)
    if register:
        server.register()
    server.start()
    where = [_format_address(h, p) for h, p in bound]
    if unix_path is not None:
        where.append(f"unix:{unix_path}")
    log.info(
        "cricket-server %s listening on %s (backend %s)",
        server_version(),
        ", ".join(where),
        backend_name,
    )
    if ready_file is not None:
        write_ready_file(ready_file, where[0] + "\n")
    try:
        while not stop.wait(1.0):
            pass
    finally:
        if ready_file is not None:
            with contextlib.suppress(OSError):
                os.unlink(ready_file)
