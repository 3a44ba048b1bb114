"""RPC server transport: listeners, one thread per connection, calls run in order.

Each connection's thread reads records, dispatches its calls one after another (their order
is the client's order, as CUDA streams need) and writes the replies. Replies of a service's
DEFERRED_REPLIES procedures wait while further calls are already received, and go out in one
write with the next other reply, or when no received call is left (on a connection whose
client asks for them itself, `ConnectionInfo.replies_may_wait`: only with the next other reply,
or once `_HELD_MAX` wait, so a pipelined call never wakes a client that waits for something
else). A connection that
misbehaves (garbage, an oversized fragment header, a REPLY sent to us, a stall past the idle
timeout) is closed alone; the others go on.

One client cannot take the server down: a connection that cannot get a thread is refused
alone (the accept thread goes on); when accepting fails for lack of descriptors or memory
(EMFILE, ENFILE, ENOBUFS, ENOMEM) the listeners rest for a while (10 ms, doubling up to
1 s, or until a connection ends) instead of spinning; such failures are logged at most once
per 10 s; large incomplete records of all connections share one budget (`max_buffered`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import logging
import os
import selectors
import socket
import ssl
import struct
import termios
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .auth import Verifier
from .client import Address
from .connection import NEED_DATA, ServerConnection
from .dispatch import ConnectionInfo, Dispatcher
from .errors import MessageDecodeError, RecordTooLarge
from .handshake import Admission, admit
from .peercred import peer_uid
from .ratelog import RateLimitedLog
from .record import DEFAULT_MAX_RECORD, MAX_FRAGMENT, Buffer, BufferBudget, nbytes
from .spin import Spinner

__all__ = ["RpcServer"]

log = logging.getLogger("cricket_xdr.rpc.server")
_SCRATCH = 1 << 16
_IOV_MAX = 1024
_HELD_MAX = 64  # replies held for one write at most
DEFAULT_MAX_BUFFERED = 1 << 30
_OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
_PAUSE_MIN, _PAUSE_MAX = 0.01, 1.0  # seconds the listeners rest after such a failure


class _Connection:
    """One accepted connection and the thread serving it."""

    def __init__(
        self, server: RpcServer, sock: socket.socket, peer: object, conn_id: int, setup: bool
    ) -> None:
        self.server = server
        self.setup = setup  # runs the connection setup (server.admission) first
        self.sock = sock
        self.info = ConnectionInfo(conn_id, peer, self.request_close)
        self.write_lock = threading.Lock()
        self.close_requested = False
        # Bytes of calls taken off the socket, and how many of them when every whole call
        # among them had run; the kernel's count of bytes received on the socket at the start
        # of serving (TCP without TLS: `drain_received`; None: it cannot tell).
        self.received = 0
        self.settled = 0
        self._kernel_base: int | None = None
        self.info.drain_received = self.drain_received
        self.thread = threading.Thread(
            target=self.serve, name=f"rpc-connection-{conn_id}", daemon=True
        )

    def request_close(self) -> None:
        """Close after the reply being sent (from a handler), or at once (other threads)."""
        if threading.current_thread() is self.thread:
            self.close_requested = True
        else:
            self.abort()

    def abort(self) -> None:
        """Wake the thread from its receive; it then closes the connection."""
        self.close_requested = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def serve(self) -> None:
        server = self.server
        conn = ServerConnection(max_record=server.max_record, max_fragment=server.max_fragment)
        conn.use_budget(server._budget)
        if self.setup:
            admitted = server.admission is None or self._admit(conn, server.admission)
            server._setup_done()
            if not admitted:
                conn.release()
                return
        if server.on_admitted is not None:
            server.on_admitted(self.info)
        sock = self.sock
        dispatch = server._dispatcher.dispatch
        info = self.info
        scratch = memoryview(bytearray(_SCRATCH))
        take_call = conn.take_call
        write_lock = self.write_lock
        sendall = sock.sendall
        next_event = conn.next_event
        reader = conn._reader
        ready, pending_bytes = reader._ready, reader._buf  # lists that stay the reader's
        deferred = server._dispatcher.deferred_replies
        held: list[Buffer] = []  # replies of DEFERRED_REPLIES procedures not written yet
        held_max = _HELD_MAX if server.max_in_flight is None else min(
            _HELD_MAX, server.max_in_flight - 1
        )
        base = _kernel_received(sock)  # less what is still to read: counted when read
        self._kernel_base = None if base is None else base - _unread(sock)
        try:
            recv_into = _receiver(sock, server.spin_us)
            while not self.close_requested:
                call: Any = None
                # read_buffer() offers a view only inside a large record being assembled
                view = None if reader._record is None else conn.read_buffer()
                if view is not None:
                    with view:
                        n = recv_into(view)
                    conn.advance(n)
                else:
                    n = recv_into(scratch)
                    if n:
                        call = take_call(scratch[:n])  # exactly one whole call: at once
                self.received += n
                if n == 0:
                    if not conn.idle:
                        log.info("%r: closed in the middle of a record", info)
                    return
                while not self.close_requested:
                    if call is None:
                        if not ready and not pending_bytes and reader._record is None:
                            self.settled = self.received  # every call received has run
                            break  # conn.idle, inlined: nothing more received (the common case)
                        call = next_event()
                        if call is NEED_DATA:
                            break
                    hold = call.proc in deferred.get((call.prog, call.vers), ())
                    pieces = dispatch(conn, call, info)
                    call = None  # lets the reader reuse a large call record's storage
                    if hold and len(pieces) == 1 and len(held) < held_max:
                        held.append(pieces[0])  # written with a later reply, in one write
                        continue
                    if held:
                        pieces = [b"".join(held), *pieces]
                        held.clear()
                    if len(pieces) == 1:
                        with write_lock:
                            sendall(pieces[0])
                    else:
                        self.send(pieces)
                if held and not info.replies_may_wait:  # no further call received yet
                    with write_lock:
                        sendall(b"".join(held))
                    held.clear()
        except (TimeoutError, BlockingIOError):  # BlockingIOError: a kernel timeout (_receiver)
            log.info("%r: idle for %s s, closing", info, server.idle_timeout)
        except (RecordTooLarge, MessageDecodeError) as exc:
            log.warning("%r: %s; closing the connection", info, exc)
        except OSError as exc:
            if not self.close_requested:
                log.info("%r: %s", info, exc)
        except Exception:
            log.exception("%r: connection failed", info)
        finally:
            conn.release()
            with contextlib.suppress(OSError):
                sock.close()
            server._forget(self)
            info.run_close_callbacks()

    def drain_received(self, timeout: float) -> bool:
        """Wait (at most `timeout` seconds) until every call that reached this connection's
        socket before now has run: e.g. a copy a client returned from before the server read
        it, ahead of an operator checkpoint. False when it cannot tell (TLS, Unix sockets)
        or the time ran out."""
        if threading.current_thread() is self.thread:
            return True  # asked by a call of this connection: the calls before it have run
        base = self._kernel_base
        if base is None:
            return False
        now = _kernel_received(self.sock)
        if now is None:
            return False
        target = now - base
        deadline = time.monotonic() + timeout
        while self.settled < target:
            if self.close_requested or time.monotonic() > deadline:
                return False
            time.sleep(0.0005)
        return True

    def _admit(self, conn: ServerConnection, admission: Admission) -> bool:
        """Connection setup (STARTTLS, token proof; see `handshake.admit`) on this thread;
        False when the connection ended during it (then closed here)."""
        try:
            sock = admit(self.sock, conn, admission, self.info, self.server._dispatcher.dispatch)
        except (OSError, RecordTooLarge, MessageDecodeError) as exc:
            if not self.close_requested:
                log.info("%r: connection setup failed: %s", self.info, exc)
            sock = None
        except Exception:
            log.exception("%r: connection setup failed", self.info)
            sock = None
        if sock is not None and not self.close_requested:
            self.sock = sock
            return True
        with contextlib.suppress(OSError):
            self.sock.close()
        self.server._forget(self)
        self.info.run_close_callbacks()
        return False

    def send(self, pieces: list[Buffer]) -> None:
        sock = self.sock
        with self.write_lock:
            if len(pieces) == 1:
                sock.sendall(pieces[0])
                return
            total = sum(nbytes(p) for p in pieces)
            sent = sock.sendmsg(pieces[:_IOV_MAX]) if len(pieces) <= _IOV_MAX else 0
            if sent == total:
                return
            views = [memoryview(p).cast("B") for p in pieces]
            while views:
                while views and sent >= len(views[0]):
                    sent -= len(views.pop(0))
                if not views:
                    return
                if sent:
                    views[0] = views[0][sent:]
                sent = sock.sendmsg(views[:_IOV_MAX])


_TCPI_BYTES_RECEIVED = 128  # offset of tcpi_bytes_received in Linux's struct tcp_info (4.1+)


def _kernel_received(sock: Any) -> int | None:
    """Bytes the kernel received on a plain TCP socket so far, read or not (TCP_INFO); None
    for TLS, Unix sockets or a kernel that does not say."""
    if (
        not isinstance(sock, socket.socket)
        or isinstance(sock, ssl.SSLSocket)
        or sock.family not in (socket.AF_INET, socket.AF_INET6)
        or not hasattr(socket, "TCP_INFO")
    ):
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    except OSError:
        return None
    if len(info) < _TCPI_BYTES_RECEIVED + 8:
        return None
    return int(struct.unpack_from("=Q", info, _TCPI_BYTES_RECEIVED)[0])


def _unread(sock: socket.socket) -> int:
    """Bytes received on `sock` and not read yet (FIONREAD)."""
    out = bytearray(4)
    fcntl.ioctl(sock.fileno(), termios.FIONREAD, out)
    return int(struct.unpack("=i", out)[0])


def _receiver(sock: Any, spin_us: float) -> Callable[[Any], int]:
    """The receive a connection's thread uses: `sock.recv_into`, after a bounded busy poll
    when `spin_us` is set and `sock` is a plain socket. Such a socket's timeout moves into
    the kernel (a timeout in Python would poll before every receive): a receive or send
    that times out then raises BlockingIOError instead of TimeoutError."""
    if spin_us <= 0 or not isinstance(sock, socket.socket) or isinstance(sock, ssl.SSLSocket):
        return sock.recv_into
    timeout = sock.gettimeout()
    if timeout is not None:
        sock.settimeout(None)
        timeval = struct.pack("@ll", *divmod(max(1, round(timeout * 1e6)), 1_000_000))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)
    spin = Spinner(spin_us).recv_into
    block = sock.recv_into

    def spin_then_block(view: Any) -> int:
        n = spin(sock, view)
        return block(view) if n is None else n

    return spin_then_block


class RpcServer:
    """Serves `services` (generated `V_Server` subclasses) over TCP and Unix sockets.

    `max_record`: largest call accepted (a bigger fragment header closes that connection).
    `auth_verifiers`: flavor -> verifier (default: AUTH_NONE and AUTH_SYS); see `auth`.
    `idle_timeout`: seconds a connection may stay silent (or stall inside a record).
    `max_in_flight`: calls of one connection answered but held back (DEFERRED_REPLIES) plus
    the one running, at most. A connection is read only when none of its received calls
    waits, so a client pipelining more than one receive holds is held back by TCP.
    `admission`: what a connection must do before its calls are served (RPC-over-TLS, a
    token proof; see `handshake.Admission`); done on the connection's thread, so a server
    that hands connections off never runs it.
    `hand_off`: when given, each accepted connection is passed to `hand_off(sock, peer)`
    instead of being served here (e.g. to another process, which serves it with `adopt`);
    the callee owns the socket.
    `max_pending` (also an attribute): connections in their setup (`admission`) at once; a
    new one beyond them is closed at once (logged at most once per 10 s). `on_admitted`
    (attribute): called with a connection's `ConnectionInfo` on its thread once its setup
    is done (at once without `admission`), before its first call is served.
    `spin_us` (also an attribute, read as each connection starts serving): before each
    blocking receive a connection's thread polls its socket without blocking for up to this
    many microseconds (see `spin.Spinner`); 0 turns it off. Plain sockets only (not after
    STARTTLS); their idle timeout is then kept by the kernel (SO_RCVTIMEO, SO_SNDTIMEO).
    Worth it where a process serves few connections on spare cores.
    `max_buffered`: bytes the incomplete large records (64 KiB or more) of all connections
    may hold together; a record that would go beyond closes its connection (None: no bound).
    """

    def __init__(
        self,
        services: Iterable[Any],
        *,
        max_record: int = DEFAULT_MAX_RECORD,
        auth_verifiers: Mapping[int, Verifier] | None = None,
        idle_timeout: float | None = None,
        max_fragment: int = MAX_FRAGMENT,
        max_in_flight: int | None = None,
        hand_off: Callable[[socket.socket, object], None] | None = None,
        admission: Admission | None = None,
        spin_us: float = 0.0,
        max_buffered: int | None = DEFAULT_MAX_BUFFERED,
        max_pending: int | None = None,
    ) -> None:
        Spinner(spin_us)  # checks the value
        self.spin_us = spin_us
        self._hand_off = hand_off
        self.admission = admission if admission is not None and admission.required else None
        self._dispatcher = Dispatcher(services, auth_verifiers)
        self.max_record = max_record
        self.max_fragment = max_fragment
        self.idle_timeout = idle_timeout
        self.max_in_flight = max_in_flight
        self._budget = (
            BufferBudget(
                max_buffered, "the server's bound on buffered incomplete records (--max-buffered)"
            )
            if max_buffered is not None
            else None
        )
        self.max_pending = max_pending
        self.on_admitted: Callable[[ConnectionInfo], None] | None = None
        self._in_setup = 0  # connections running their setup now
        self._trouble = RateLimitedLog(log)  # failures of accepting, at most one line per 10 s
        self._pause = 0.0  # seconds the listeners rest after the last failed accept
        self._resume_at = 0.0  # time.monotonic() when they listen again
        self._lock = threading.Lock()
        self._listeners: list[socket.socket] = []
        self._unix_paths: list[str] = []
        self._connections: dict[int, _Connection] = {}
        self._ids = itertools.count(1)
        self._wake_r, self._wake_w = socket.socketpair()
        self._stopping = False
        self._serving = threading.Event()
        self._served = threading.Event()  # serve_forever() has returned
        self._accept_thread: threading.Thread | None = None
        self._tcp_port: int | None = None
        self._registered: list[tuple[int, int]] = []
        self._portmap: Address | None = None
        self._portmap_host = "127.0.0.1"

    # -- listening -------------------------------------------------------------------------

    def listen_tcp(self, host: str = "127.0.0.1", port: int = 0) -> tuple[str, int]:
        """Listen on TCP; port 0 picks a free port. Returns the bound (host, port)."""
        sock = socket.create_server((host, port), reuse_port=False)
        bound = sock.getsockname()
        self._add_listener(sock)
        if self._tcp_port is None:
            self._tcp_port = bound[1]
        return bound[0], bound[1]

    def listen_unix(self, path: str) -> str:
        """Listen on a Unix socket at `path` (a stale socket file there is replaced)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(path)
            sock.listen()
        except BaseException:
            sock.close()
            raise
        self._unix_paths.append(path)
        self._add_listener(sock)
        return path

    def _add_listener(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        with self._lock:
            self._listeners.append(sock)
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    # -- serving ---------------------------------------------------------------------------

    def start(self) -> None:
        """Accept connections on a background thread."""
        if self._accept_thread is not None:
            raise RuntimeError("RpcServer.start: already started")
        self._accept_thread = threading.Thread(
            target=self.serve_forever, name="rpc-accept", daemon=True
        )
        self._accept_thread.start()
        self._serving.wait()

    def serve_forever(self) -> None:
        """Accept connections until shutdown()."""
        selector = selectors.DefaultSelector()
        selector.register(self._wake_r, selectors.EVENT_READ)
        watched: set[socket.socket] = set()
        self._served.clear()
        self._serving.set()
        try:
            while not self._stopping:
                with self._lock:
                    listeners = list(self._listeners)
                rest = self._resume_at - time.monotonic()
                for sock in listeners:
                    if rest <= 0 and sock not in watched:
                        selector.register(sock, selectors.EVENT_READ)
                        watched.add(sock)
                    elif rest > 0 and sock in watched:
                        selector.unregister(sock)
                        watched.discard(sock)
                for key, _ in selector.select(rest if rest > 0 else None):
                    if key.fileobj is self._wake_r:
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(64)
                        continue
                    try:
                        self._accept(key.fileobj)  # type: ignore[arg-type]
                    except Exception as exc:  # never the end of accepting
                        self._rest()
                        self._trouble.log(logging.ERROR, "accepting a connection failed: %r", exc)
        finally:
            selector.close()
            self._served.set()

    def _accept(self, listener: socket.socket) -> None:
        try:
            sock, peer = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            if exc.errno in _OUT_OF_RESOURCES:
                self._rest()
                self._trouble.log(
                    logging.WARNING,
                    "accept on %s failed: %s; not accepting for %g s (or until a connection "
                    "ends)",
                    listener.getsockname(),
                    exc,
                    self._pause,
                )
            else:
                self._trouble.log(logging.WARNING, "accept on %s failed: %s",
                                  listener.getsockname(), exc)  # fmt: skip
            return
        self._pause = 0.0
        peer = peer or listener.getsockname()
        if self._hand_off is None:
            self.adopt(sock, peer)
            return
        try:
            self._hand_off(sock, peer)
        except Exception as exc:
            self._trouble.log(logging.ERROR, "handing off the connection from %r failed: %r",
                              peer, exc)  # fmt: skip
            with contextlib.suppress(OSError):
                sock.close()

    def _rest(self) -> None:
        """Stop listening for a while: 10 ms, doubling with each failure in a row up to 1 s;
        a connection that ends (descriptors free again) or a successful accept ends it."""
        self._pause = min(_PAUSE_MAX, max(_PAUSE_MIN, 2 * self._pause))
        self._resume_at = time.monotonic() + self._pause

    def adopt(
        self, sock: socket.socket, peer: object = None, *, admitted: bool = False
    ) -> ConnectionInfo | None:
        """Serve an already-accepted connection `sock` like one this server accepted.

        `peer`: its address for logs and `ctx.connection.peer` (default: `getpeername()`).
        `admitted`: the connection has done its setup elsewhere (`admission` is skipped).
        Returns the connection's `ConnectionInfo` (its close callbacks run when it ends), or
        None when the server is shutting down or no thread could be started to serve it (the
        socket is then closed; the latter is logged, at most once per 10 s)."""
        if peer is None:
            try:
                peer = sock.getpeername() or sock.getsockname()
            except OSError:
                peer = ""
        sock.setblocking(True)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.idle_timeout is not None:
            sock.settimeout(self.idle_timeout)
        setup = not admitted and self.admission is not None
        conn = _Connection(self, sock, peer, next(self._ids), setup)
        conn.info.peer_uid = peer_uid(sock)
        with self._lock:
            if self._stopping:
                sock.close()
                return None
            if setup and self.max_pending is not None and self._in_setup >= self.max_pending:
                full = True
            else:
                full = False
                self._in_setup += setup
                self._connections[conn.info.id] = conn
        if full:
            sock.close()
            self._trouble.log(logging.WARNING, "refused the connection from %r: %d connections "
                              "are in their setup already (--max-pending)", peer,
                              self.max_pending)  # fmt: skip
            return None
        try:
            conn.thread.start()
        except RuntimeError as exc:  # "can't start new thread": out of threads or memory
            with self._lock:
                self._connections.pop(conn.info.id, None)
                self._in_setup -= setup
            sock.close()
            self._trouble.log(logging.ERROR, "refused the connection from %r: no thread to "
                              "serve it (%s)", peer, exc)  # fmt: skip
            return None
        return conn.info

    def _setup_done(self) -> None:
        with self._lock:
            self._in_setup -= 1

    def _forget(self, conn: _Connection) -> None:
        with self._lock:
            self._connections.pop(conn.info.id, None)
        if self._resume_at:  # accepting rests for lack of descriptors: one is free now
            self._resume_at = 0.0
            self._wake()

    @property
    def connection_count(self) -> int:
        with self._lock:
            return len(self._connections)

    def shutdown(self) -> None:
        """Close listeners and connections, wait for their threads, run close callbacks."""
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            listeners, self._listeners = self._listeners, []
            connections = list(self._connections.values())
        self._wake()
        if (
            self._accept_thread is not None
            and self._accept_thread is not threading.current_thread()
        ):
            self._accept_thread.join()
        for sock in listeners:
            sock.close()
        for path in self._unix_paths:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        for conn in connections:
            conn.abort()
        for conn in connections:
            if conn.thread is not threading.current_thread():
                conn.thread.join()
        self._wake_r.close()
        self._wake_w.close()
        if self._registered:
            try:
                self.unregister()
            except Exception as exc:
                log.warning("could not unregister from the port mapper: %s", exc)

    # -- port mapper -----------------------------------------------------------------------

    def register(self, host: str = "127.0.0.1", *, portmap: Address | None = None) -> None:
        """Register every served program and version on TCP with the port mapper.

        `portmap`: the port mapper's address; by default this host's (see
        `PortmapClient.local`, `host` being used when it has no Unix socket).
        """
        from cricket_xdr.portmap import PortmapClient

        if self._tcp_port is None:
            raise RuntimeError("RpcServer.register: listen_tcp() first, nothing to register")
        pm = PortmapClient(portmap) if portmap is not None else PortmapClient.local(host)
        with pm:
            for prog, vers in self._dispatcher.programs:
                pm.unset(prog, vers)
                if not pm.set(prog, vers, self._tcp_port):
                    raise RuntimeError(
                        f"port mapper refused program {prog:#x} version {vers} on tcp port "
                        f"{self._tcp_port}"
                    )
                self._registered.append((prog, vers))
        self._portmap = portmap
        self._portmap_host = host

    def unregister(self) -> None:
        """Remove what register() registered."""
        from cricket_xdr.portmap import PortmapClient

        if not self._registered:
            return
        portmap = self._portmap
        pm = (
            PortmapClient(portmap)
            if portmap is not None
            else PortmapClient.local(self._portmap_host)
        )
        with pm:
            while self._registered:
                prog, vers = self._registered.pop()
                pm.unset(prog, vers)

    def __enter__(self) -> RpcServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
