"""RPC client transport over TCP or Unix sockets, thread-safe, many calls in flight.

Replies are read by a leader/follower scheme instead of a reader thread: a thread waiting for
its reply when nobody is reading becomes the reader, reads until its own reply arrives and
hands other threads' replies to them on the way; then it passes the role to a waiting thread.
A synchronous call thus costs one send and one receive in the calling thread. A thread whose
send would block, while nobody reads, reads replies meanwhile, so pipelined calls whose
replies nobody has asked for yet cannot deadlock against the server.
"""

from __future__ import annotations

import contextlib
import errno
import select
import socket
import ssl
import threading
import time
from collections.abc import Sequence
from typing import Any

from .auth import ClientAuth
from .connection import NEED_DATA, Args, ClientConnection, Reply
from .counts import CallCounts
from .errors import ConnectionLost, ConnectTimeout, MessageDecodeError, RecordTooLarge, RpcTimeout
from .record import MAX_FRAGMENT, Buffer, nbytes
from .spin import Spinner

__all__ = [
    "RpcClient",
    "PendingCall",
    "Address",
    "connect_socket",
    "DEFAULT_MAX_REPLY",
    "KEEPALIVE",
]

Address = tuple[str, int] | str
_IOV_MAX = 1024
_SCRATCH = 1 << 16
_DONTWAIT = socket.MSG_DONTWAIT
_POLL_SLICE = 0.05  # seconds a blocked sender waits before checking whether it must read
_DEFER_MAX_CALL = 4096  # larger calls are never deferred
_DEFER_CALLS = 64  # deferred calls are sent once this many wait...
_DEFER_BYTES = 1 << 16  # ...or this many bytes
_GONE = getattr(select, "POLLRDHUP", 0x2000) | select.POLLERR | select.POLLHUP  # the peer closed

DEFAULT_MAX_REPLY = 64 << 20
"""Largest reply record a client accepts, except a bulk result received into a buffer the
caller gave (`into=`): that one may be as large as the buffer."""

KEEPALIVE = (10, 5, 3)
"""TCP keepalive of client connections: first probe after 10 s idle, then every 5 s, the
connection fails after 3 unanswered probes: a peer host that died or became unreachable is
noticed within about 25 s, even while a call waits for minutes. A server process that is alive
but stuck is not detected this way (see RpcClient's `timeout`)."""


def connect_socket(address: Address, timeout: float | None) -> socket.socket:
    """A connected stream socket: `(host, port)` over TCP (no Nagle, keepalive: KEEPALIVE)
    or `"unix:/path"`. Raises ConnectTimeout when `timeout` seconds pass first."""
    try:
        if isinstance(address, str):
            if not address.startswith("unix:"):
                raise ValueError(f"address {address!r}: expected (host, port) or 'unix:/path'")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.settimeout(timeout)
                sock.connect(address[5:])
            except BaseException:
                sock.close()
                raise
        else:
            sock = socket.create_connection(tuple(address), timeout=timeout)  # type: ignore[arg-type]
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _keepalive(sock)
    except TimeoutError:
        raise ConnectTimeout(_where(address), "TCP connect", timeout) from None
    sock.settimeout(None)
    return sock


def _keepalive(sock: socket.socket) -> None:
    idle, interval, count = KEEPALIVE
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", idle), ("TCP_KEEPINTVL", interval), ("TCP_KEEPCNT", count)):
        option = getattr(socket, name, None)
        if option is not None:  # Linux; other systems keep their defaults
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, option, value)


def _where(address: Address) -> str:
    return address if isinstance(address, str) else f"{address[0]}:{address[1]}"


class PendingCall:
    """A call sent and not yet answered; `result()` waits for its reply."""

    __slots__ = ("_client", "xid", "prog", "vers", "proc", "_reply", "_error", "_done", "_waiter")

    def __init__(self, client: RpcClient, xid: int, prog: int, vers: int, proc: int) -> None:
        self._client = client
        self.xid = xid
        self.prog = prog
        self.vers = vers
        self.proc = proc
        self._reply: Reply | None = None
        self._error: BaseException | None = None
        self._done = False
        self._waiter: threading.Condition | None = None

    def done(self) -> bool:
        return self._done

    @property
    def placed(self) -> bool:
        """The result's bulk was received into the `into` view (see RpcClient.call_async)."""
        return self._reply is not None and self._reply.placed

    def result(self, timeout: float | None = None) -> Buffer:
        """The result body (bytes, or a memoryview for large results).

        Raises a RemoteRpcError for an error reply, RpcTimeout when no reply comes within
        `timeout` seconds (None: the client's default), ConnectionLost when the connection fails.
        """
        if not self._done:
            client = self._client
            if client._counts is None:
                client._wait(self, timeout)
            else:
                client._wait_counted(self, timeout)
        if self._error is not None:
            raise self._error
        assert self._reply is not None
        return self._reply.result()

    def __repr__(self) -> str:
        state = "done" if self._done else "pending"
        return f"<PendingCall xid={self.xid:#x} program {self.prog:#x} version {self.vers} procedure {self.proc} {state}>"


class RpcClient:
    """An ONC RPC client on one connection.

    `address`: `(host, port)` or `"unix:/path"`. `timeout`: default per-call timeout in seconds
    (None waits forever: a call may legitimately run for minutes; a dead peer host is still
    noticed through TCP keepalive, see KEEPALIVE). `auth`: credentials for every call
    (AUTH_NONE by default). `max_record`: largest reply accepted (default DEFAULT_MAX_REPLY; a
    larger one fails the connection with RecordTooLarge before any of it is buffered), except a
    result received into an `into=` buffer. `max_fragment`: calls are split into fragments of
    at most this many bytes.

    `connect_timeout`: seconds for the whole setup (TCP connect, STARTTLS, token proof);
    `setup_deadline` (a `time.monotonic()` value) is when it ends, for a first call that
    belongs to the setup. Raises ConnectTimeout naming the step that was still waiting.

    Connection setup (`handshake`), before any call: `tls` (an `ssl.SSLContext`): RPC over
    TLS after RFC 9289 (the AUTH_TLS probe, then the handshake; `server_hostname` is checked
    against the server's certificate, default the address's host); `token`: prove it with
    AUTH_CRICKET_TOKEN. `program`: the (program, version) their NULL calls name. Failures:
    `tls.TlsError`, `AuthError`. `resume_hint`: with `tls`, sent first (AUTH_CRICKET_RESUME,
    `handshake.send_resume_hint`), so that a server with a process per session can route the
    connection to the one holding it; a server that refuses it is set up all the same.

    `spin_us`: a thread that starts reading replies first polls the socket without blocking
    for up to this many microseconds (see `spin.Spinner`), which saves the wake-up of a
    blocked thread when the reply comes soon; 0 turns it off. Ignored with TLS.
    """

    def __init__(
        self,
        address: Address,
        *,
        timeout: float | None = None,
        auth: ClientAuth | None = None,
        max_record: int = DEFAULT_MAX_REPLY,
        max_fragment: int = MAX_FRAGMENT,
        connect_timeout: float | None = 30.0,
        tls: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        token: bytes | None = None,
        program: tuple[int, int] = (0, 0),
        spin_us: float = 0.0,
        resume_hint: bytes | None = None,
    ) -> None:
        self.address = address
        self.timeout = timeout
        self.setup_deadline = (
            None if connect_timeout is None else time.monotonic() + connect_timeout
        )
        self._sock: Any = _set_up(
            connect_socket(address, connect_timeout),
            address,
            tls,
            server_hostname,
            token,
            program,
            self.setup_deadline,
            connect_timeout,
            resume_hint,
        )
        self._buffered = getattr(self._sock, "pending", None)  # TLS: bytes a poll cannot see
        # plain TCP (no TLS, no Unix socket): the server can tell which calls reached it
        # (`RpcServer` connections' `drain_received`)
        self.plain_tcp = (
            self._buffered is None
            and isinstance(self._sock, socket.socket)
            and not isinstance(self._sock, ssl.SSLSocket)
            and self._sock.family in (socket.AF_INET, socket.AF_INET6)
        )
        self._fd = self._sock.fileno()
        self._spinner = Spinner(spin_us) if spin_us > 0 and self._buffered is None else None
        self._counts: CallCounts | None = None  # see `counts`
        self._conn = ClientConnection(auth=auth, max_record=max_record, max_fragment=max_fragment)
        self._lock = threading.Lock()  # guards everything below and the connection's state
        self._send_busy = False  # a record is being sent in several steps, outside the lock
        self._send_free = threading.Condition(self._lock)
        self._pending: dict[int, PendingCall] = {}
        self._followers: dict[PendingCall, None] = {}  # waiting threads, oldest first
        self._reading = False
        self._failed: BaseException | None = None
        self._closed = False
        self._scratch = memoryview(bytearray(_SCRATCH))
        self._queued: list[Buffer] = []  # deferred calls, not sent yet
        self._queued_bytes = 0
        # `replies_may_wait`: (program, version, procedures) whose replies the server may
        # hold until a later call's reply; calls of them sent since the last other call
        self._held: tuple[int, int, frozenset[int]] | None = None
        self._unreleased = 0

    def replies_may_wait(self, prog: int, vers: int, procs: frozenset[int]) -> None:
        """The server may hold the replies of `procs` of (prog, vers) until it sends a later
        call's reply (a server that says so: cricket.x's protocol version 2): before this
        client waits for one of them with no other call sent after it, it sends a NULL call
        of that program, whose reply brings them. Until then a held reply never wakes a
        thread that waits for another."""
        self._held = (prog, vers, procs)

    # -- calling ---------------------------------------------------------------------------

    @property
    def counts(self) -> CallCounts | None:
        """Per-procedure counts of the calls sent and the replies waited for (None, the
        default: not counted; `call` then runs without a wrapper)."""
        return self._counts

    @counts.setter
    def counts(self, value: CallCounts | None) -> None:
        self._counts = value
        if value is None:
            self.__dict__.pop("call", None)
        else:
            self.call = self._counted_call  # type: ignore[method-assign]

    def _counted_call(
        self, prog: int, vers: int, proc: int, args: Args = b"", *, timeout: float | None = None
    ) -> Buffer:
        """`call`, its wait counted and timed."""
        counts = self._counts
        start = time.perf_counter_ns()
        try:
            return RpcClient.call(self, prog, vers, proc, args, timeout=timeout)
        finally:
            if counts is not None:
                counts.waited_for(proc, time.perf_counter_ns() - start)

    def call(
        self, prog: int, vers: int, proc: int, args: Args = b"", *, timeout: float | None = None
    ) -> Buffer:
        """Call and wait for the result body; see PendingCall.result for errors.

        The synchronous path: when nothing else is in flight, queued or being read (and no
        timeout applies), the call is sent and its reply read on this thread without the
        bookkeeping of `call_async` (no PendingCall; other threads that call meanwhile wait
        as followers, as they would for any reader)."""
        lock = self._lock
        lock.acquire()
        if (
            self._reading
            or self._send_busy
            or self._pending
            or self._queued
            or self._failed is not None
            or timeout is not None
            or self.timeout is not None
            or self._buffered is not None
            or (self._held is not None and proc in self._held[2])  # its reply may be held
        ):
            lock.release()
            return self._call_waiting(prog, vers, proc, args, timeout)
        try:
            xid, pieces = self._conn.send_call(prog, vers, proc, args, None)
            if self._counts is not None:
                self._counts.sent[proc] += 1
            sent = -1
            if len(pieces) == 1:
                data = pieces[0]
                try:
                    sent = self._sock.send(data, _DONTWAIT)
                except (BlockingIOError, InterruptedError):
                    sent = 0
                except OSError:
                    sent = -1
                if sent == (len(data) if type(data) is bytes else nbytes(data)):
                    self._reading = True  # this thread reads its own reply
            elif len(pieces) <= _IOV_MAX:  # a bulk argument by reference: one gathered write
                try:
                    sent = self._sock.sendmsg(pieces, (), _DONTWAIT)
                except (BlockingIOError, InterruptedError):
                    sent = 0
                except OSError:
                    sent = -1
                if sent == sum(nbytes(p) for p in pieces):
                    self._reading = True
        except BaseException:
            lock.release()
            raise
        if not self._reading:  # not sent whole at once: the general path sends the rest
            pending = PendingCall(self, xid, prog, vers, proc)
            self._pending[xid] = pending
            left: list[Buffer] = list(_skip(pieces, sent)) if sent > 0 else pieces
            rest = self._send_locked(left)
            lock.release()
            if rest:
                self._send_rest(rest)
            return self._result_of(pending, timeout)
        lock.release()
        # Read until this call's reply arrives, handing replies to other threads' calls
        # found on the way to them.
        conn = self._conn
        next_event = conn.next_event
        reply: Reply | None = None
        taken: Buffer | None = None  # the result body, when the first receive was the reply
        failure: BaseException | None = None
        received = True
        try:
            # First receive: most often exactly this call's reply, taken whole (take_reply).
            try:
                n = None
                if self._spinner is not None:
                    n = self._spinner.recv_into(self._sock, self._scratch)
                if n is None:
                    n = self._sock.recv_into(self._scratch)
            except OSError as exc:
                self._receive_failed(exc)
                received = False
            else:
                if n:
                    taken = conn.take_reply(self._scratch[:n], xid)
                    received = taken is None
                else:
                    self._fail(ConnectionLost(f"{self._where()}: server closed the connection"))
                    received = False
            while reply is None and received:
                lock.acquire()
                try:
                    while (event := next_event()) is not NEED_DATA:
                        if event.xid == xid:
                            reply = event
                            break
                        call = self._pending.pop(event.xid, None)
                        if call is not None:
                            call._reply = event
                            call._done = True
                            if call._waiter is not None:
                                call._waiter.notify()
                except (RecordTooLarge, MessageDecodeError) as exc:
                    failure = exc
                    self._fail_locked(exc)
                    if not self._send_busy:
                        self._sock.close()
                finally:
                    lock.release()
                if reply is not None or failure is not None:
                    break
                received = self._receive(None, spin=True)
        finally:
            lock.acquire()
            self._reading = False
            if reply is None and taken is None:
                self._conn.forget(xid)
            if self._pending:  # replies of other threads' calls already received
                self._deliver_locked()
            if self._closed or self._followers:
                self._reader_gone_locked()
            lock.release()
        if taken is not None:
            return taken
        if reply is None:  # the connection failed: the failure is this call's error
            raise failure or self._failed or self._lost(prog, vers, proc)
        if reply.message is None and reply.error is None:
            return reply.body  # the common case: a plain SUCCESS
        return reply.result()

    def _call_waiting(
        self, prog: int, vers: int, proc: int, args: Args, timeout: float | None
    ) -> Buffer:
        """`call` among other calls in flight, or with a timeout."""
        return self._result_of(self.call_async(prog, vers, proc, args), timeout)

    def _result_of(self, pending: PendingCall, timeout: float | None) -> Buffer:
        """`call`'s reply (the wait counted by `call`)."""
        if not pending._done:
            self._wait(pending, timeout)
        if pending._error is not None:
            raise pending._error
        assert pending._reply is not None
        return pending._reply.result()

    def call_async(
        self,
        prog: int,
        vers: int,
        proc: int,
        args: Args = b"",
        *,
        into: tuple[bytes, memoryview] | None = None,
        defer: bool = False,
        hold: bool = False,
    ) -> PendingCall:
        """Send a call and return at once; its reply is awaited with `.result()`.

        `into = (head, view)`: a result body of `head`, `len(view)` bytes and XDR padding is
        received with those bytes straight into `view` (no copy); `.placed` then is True and
        `.result()` gives the body without them. Other results (errors) come back as usual.
        Bytes may still arrive in `view` after a timeout of this call.

        `defer`: a small call may wait in the client to go out in one write with others: it
        is sent with the next call that is not deferred, when any thread waits for a reply,
        on `flush()`, or once 64 calls or 64 KiB are waiting. Order is kept either way.
        `hold`: the call waits whatever its size until the next call that is not deferred or
        `flush()` (the caller sees that one of them follows); it then leaves in the same
        write (one sendmsg of several buffers, no copy).
        """
        lock = self._lock
        lock.acquire()
        try:
            while self._send_busy:  # another thread is sending a record in several steps
                self._send_free.wait()
            if self._failed is not None:
                raise self._lost(prog, vers, proc)
            xid, pieces = self._conn.send_call(prog, vers, proc, args, into)
            if self._counts is not None:
                self._counts.sent[proc] += 1
            held = self._held
            if held is not None:  # a call of another procedure takes the held replies along
                self._unreleased = (
                    self._unreleased + 1
                    if proc in held[2] and prog == held[0] and vers == held[1]
                    else 0
                )
            pending = PendingCall(self, xid, prog, vers, proc)
            self._pending[xid] = pending
            queued = self._queued
            if hold:
                queued.extend(pieces)
                self._queued_bytes += sum(nbytes(p) for p in pieces)
                return pending
            if defer and len(pieces) == 1 and len(pieces[0]) <= _DEFER_MAX_CALL:
                queued.append(pieces[0])
                self._queued_bytes += len(pieces[0])
                if len(queued) < _DEFER_CALLS and self._queued_bytes < _DEFER_BYTES:
                    return pending
                pieces = _joined(queued)
                queued.clear()
                self._queued_bytes = 0
            elif queued:
                pieces = [*_joined(queued), *pieces]
                queued.clear()
                self._queued_bytes = 0
            rest = self._send_locked(pieces)
        finally:
            lock.release()
        if rest:
            self._send_rest(rest)
        return pending

    def flush(self) -> None:
        """Send the deferred calls now."""
        lock = self._lock
        lock.acquire()
        try:
            while self._send_busy:
                self._send_free.wait()
            if not self._queued or self._failed is not None:
                return
            pieces = _joined(self._queued)
            self._queued.clear()
            self._queued_bytes = 0
            rest = self._send_locked(pieces)
        finally:
            lock.release()
        if rest:
            self._send_rest(rest)

    def close(self) -> None:
        """Close the connection; calls still in flight fail with ConnectionLost."""
        self._fail(ConnectionLost(f"{self._where()}: client closed"))
        with self._lock:
            self._closed = True
            if not self._reading:
                self._sock.close()

    def __enter__(self) -> RpcClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def looks_alive(self, *, strict: bool = False) -> bool:
        """Whether the connection shows no sign of loss: something is in flight, or nothing
        is there to read (with nothing in flight, anything readable is the peer closing).
        `strict`: while calls are in flight too, the peer did not close its side (a poll for
        POLLRDHUP: one system call more)."""
        if self._failed is not None or self._closed:
            return False
        if self._buffered is not None:
            return True
        busy = self._pending or self._reading  # replies may be readable: only a close counts
        if busy and not strict:
            return True
        poller = select.poll()
        poller.register(self._fd, _GONE if busy else _GONE | select.POLLIN)
        return not poller.poll(0)

    @property
    def queued_bytes(self) -> int:
        """Bytes of deferred and held calls waiting to leave (`call_async`)."""
        return self._queued_bytes

    @property
    def in_flight(self) -> int:
        """Calls sent and not yet answered, failed or timed out."""
        return len(self._pending)

    # -- sending ---------------------------------------------------------------------------

    def _send_locked(self, pieces: list[Buffer]) -> list[memoryview]:
        """Send what goes without blocking (lock held); what is left is then this thread's to
        send with `_send_rest`, other senders waiting meanwhile."""
        try:
            rest = self._send_now(pieces)
        except OSError as exc:
            self._fail_locked(ConnectionLost(f"{self._where()}: send failed: {exc}"))
            return []
        if rest:
            self._send_busy = True
        return rest

    def _send_rest(self, rest: list[memoryview]) -> None:
        try:
            self._send_slowly(rest)
        except OSError as exc:
            self._fail(ConnectionLost(f"{self._where()}: send failed: {exc}"))
        finally:
            with self._lock:
                self._send_busy = False
                self._send_free.notify_all()

    def _send_now(self, pieces: list[Buffer]) -> list[memoryview]:
        """Send what the socket takes without blocking; returns what is left."""
        sock = self._sock
        if len(pieces) == 1:
            data = pieces[0]
            try:
                sent = sock.send(data, _DONTWAIT)
            except BlockingIOError:
                sent = 0
            if sent == (len(data) if type(data) is bytes else nbytes(data)):
                return []
        else:
            sent = 0
            if len(pieces) <= _IOV_MAX:
                try:
                    sent = sock.sendmsg(pieces, (), _DONTWAIT)
                except BlockingIOError:
                    pass
            if sent == sum(nbytes(p) for p in pieces):
                return []
        return _skip(pieces, sent)

    def _send_slowly(self, pieces: list[memoryview]) -> None:
        """Send what is left, reading replies meanwhile when nobody else does."""
        sock = self._sock
        while pieces:
            with self._lock:
                if self._failed is not None:
                    raise ConnectionLost(f"{self._where()}: connection failed while sending")
                reader = not self._reading
                if reader:
                    self._reading = True
            try:
                mask = select.POLLOUT | (select.POLLIN if reader else 0)
                poller = select.poll()
                poller.register(self._fd, mask)
                events = 0
                for _, ev in poller.poll(_POLL_SLICE * 1000):
                    events |= ev
                if (
                    reader
                    and events & (select.POLLIN | select.POLLHUP | select.POLLERR)
                    and self._receive(None)
                ):
                    with self._lock:
                        self._deliver_locked()
                if events & select.POLLOUT:
                    try:
                        sent = sock.sendmsg(pieces[:_IOV_MAX], (), socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        sent = 0
                    pieces = _skip(pieces, sent)
            finally:
                if reader:
                    self._release_reader()

    # -- receiving -------------------------------------------------------------------------

    def _wait_counted(self, call: PendingCall, timeout: float | None) -> None:
        """`_wait` for a `result()` while counts are kept: counted and timed."""
        counts = self._counts
        start = time.perf_counter_ns()
        try:
            self._wait(call, timeout)
        finally:
            if counts is not None:
                counts.waited_for(call.proc, time.perf_counter_ns() - start)

    def _wait(self, call: PendingCall, timeout: float | None) -> None:
        held = self._held
        if self._unreleased and held is not None:  # the server may hold our reply
            prog, vers, _procs = held
            with contextlib.suppress(ConnectionLost):  # then the wait below reports it
                self.call_async(prog, vers, 0)  # NULL: its reply brings the held ones
        if self._queued:  # whatever we wait for may be among them, or behind them
            self.flush()
        if timeout is None:
            timeout = self.timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        lock = self._lock
        lock.acquire()
        try:
            while not call._done:
                if not self._reading:
                    # Lead: read until our reply is delivered or the deadline passes.
                    self._reading = True
                    try:
                        while not call._done:
                            lock.release()
                            try:
                                received = self._receive(deadline, spin=True)
                            finally:
                                lock.acquire()
                            if not received:
                                break
                            self._deliver_locked()
                    finally:
                        self._reading = False
                    if call._done:
                        break
                if self._failed is not None:  # a call that slipped past the failure
                    call._error = self._lost(call.prog, call.vers, call.proc)
                    call._done = True
                    break
                if deadline is None:
                    remaining = None
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        self._time_out(call, timeout)
                        break
                if self._reading:
                    if call._waiter is None:
                        call._waiter = threading.Condition(lock)
                    self._followers[call] = None
                    try:
                        call._waiter.wait(remaining)
                    finally:
                        del self._followers[call]
        finally:
            if not self._reading:
                self._reader_gone_locked()
            lock.release()

    def _time_out(self, call: PendingCall, timeout: float | None) -> None:
        """Give up on `call` (lock held)."""
        self._pending.pop(call.xid, None)
        self._conn.forget(call.xid)
        call._error = RpcTimeout(
            f"program {call.prog:#x} version {call.vers} procedure {call.proc} (xid {call.xid:#x}): "
            f"no reply within {timeout} s"
        )
        call._done = True

    def _receive(self, deadline: float | None, *, spin: bool = False) -> bool:
        """One receive into the connection (we are the reader, lock not held); with `spin`,
        a bounded busy poll first (plain sockets with `spin_us`).

        False when the deadline passed first or the connection failed.
        """
        if self._failed is not None:
            return False
        conn = self._conn
        sock = self._sock
        try:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            view = conn.read_buffer()
            target = self._scratch if view is None else view
            try:
                n = None
                if spin and self._spinner is not None:
                    n = self._spinner.recv_into(sock, target, remaining)
                    if n is None and deadline is not None:
                        remaining = deadline - time.monotonic()
                if n is None:
                    if remaining is not None and not (self._buffered and self._buffered()):
                        poller = select.poll()
                        poller.register(self._fd, select.POLLIN)
                        if remaining <= 0 or not poller.poll(remaining * 1000):
                            return False
                    n = sock.recv_into(target)
            finally:
                if view is not None:
                    view.release()
            if view is not None:
                conn.advance(n)
            elif n:
                conn.receive_data(self._scratch[:n])
        except OSError as exc:
            self._receive_failed(exc)
            return False
        if n == 0:
            self._fail(ConnectionLost(f"{self._where()}: server closed the connection"))
            return False
        return True

    def _receive_failed(self, exc: OSError) -> None:
        why = f"receive failed: {exc}"
        if exc.errno == errno.ETIMEDOUT:  # what keepalive reports (see KEEPALIVE)
            why = "the server host stopped answering (TCP keepalive timed out)"
        self._fail(ConnectionLost(f"{self._where()}: {why}"))

    def _deliver_locked(self) -> None:
        """Hand every complete reply to its caller (lock held)."""
        next_event = self._conn.next_event
        pending = self._pending
        try:
            while (event := next_event()) is not NEED_DATA:
                call = pending.pop(event.xid, None)
                if call is None:
                    continue
                call._reply = event
                call._done = True
                if call._waiter is not None:
                    call._waiter.notify()
        except (RecordTooLarge, MessageDecodeError) as exc:
            self._fail_locked(exc)
            if not self._send_busy:
                # Nobody else uses the socket now (the caller is the reader, no sender is
                # outside the lock): close it, so the peer's further bytes are refused.
                self._sock.close()

    def _release_reader(self) -> None:
        with self._lock:
            self._reading = False
            self._reader_gone_locked()

    def _reader_gone_locked(self) -> None:
        """Nobody reads now: close a closed client's socket, or wake a waiter to read."""
        if self._closed:
            self._sock.close()
            return
        for follower in self._followers:
            if not follower._done:
                assert follower._waiter is not None
                follower._waiter.notify()
                return

    def _fail(self, exc: BaseException) -> None:
        """Fail the connection: every call in flight gets `exc`."""
        with self._lock:
            self._fail_locked(exc)

    def _fail_locked(self, exc: BaseException) -> None:
        if self._failed is not None:
            return
        self._failed = exc
        self._queued.clear()
        self._queued_bytes = 0
        self._conn.forget_all()
        calls = list(self._pending.values())
        self._pending.clear()
        for call in calls:
            call._error = exc
            call._done = True
            if call._waiter is not None:
                call._waiter.notify()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def _lost(self, prog: int, vers: int, proc: int) -> ConnectionLost:
        exc = ConnectionLost(
            f"program {prog:#x} version {vers} procedure {proc}: connection to {self._where()} is gone"
        )
        exc.__cause__ = self._failed
        return exc

    def _where(self) -> str:
        return _where(self.address)

    def __repr__(self) -> str:
        return f"<RpcClient {self._where()} in flight {len(self._pending)}>"


def _set_up(
    sock: socket.socket,
    address: Address,
    tls: ssl.SSLContext | None,
    server_hostname: str | None,
    token: bytes | None,
    program: tuple[int, int],
    deadline: float | None,
    timeout: float | None,
    resume_hint: bytes | None = None,
) -> Any:
    """The resume hint (with TLS only), STARTTLS and the token proof on a new connection
    (see `handshake`), all done before `deadline` (ConnectTimeout otherwise)."""
    if tls is None and token is None:
        return sock
    from .handshake import authenticate, send_resume_hint, start_tls
    from .tls import TlsError

    where = _where(address)
    if server_hostname is None and not isinstance(address, str):
        server_hostname = address[0]

    def left() -> float | None:
        return None if deadline is None else max(deadline - time.monotonic(), 0.001)

    stage = "the resume hint"
    try:
        conn: Any = sock
        if tls is not None and resume_hint:
            sock.settimeout(left())
            send_resume_hint(sock, resume_hint, program=program)
        stage = "STARTTLS"
        if tls is not None:
            sock.settimeout(left())
            conn = start_tls(
                sock, tls, server_hostname=server_hostname, program=program, where=where,
                timeout=left(),
            )
        stage = "the token handshake"
        if token is not None:
            sock.settimeout(left())
            authenticate(conn, token, program=program)
        sock.settimeout(None)
        return conn
    except TimeoutError:
        sock.close()
        raise ConnectTimeout(where, stage, timeout) from None
    except TlsError as exc:
        sock.close()
        if isinstance(exc.__context__, TimeoutError):
            raise ConnectTimeout(where, stage, timeout) from None
        raise
    except BaseException:
        sock.close()
        raise


def _joined(queued: list[Buffer]) -> list[Buffer]:
    """Deferred calls as the buffers of one write: small ones joined, a large held one (a
    launch batch, a copy's data) passed as it is to sendmsg."""
    if all(type(p) is bytes and len(p) <= _DEFER_MAX_CALL for p in queued):
        return [b"".join(queued)]
    return list(queued)


def _skip(pieces: Sequence[Any], sent: int) -> list[memoryview]:
    """The pieces left after the first `sent` bytes went out."""
    out: list[memoryview] = []
    for piece in pieces:
        view = memoryview(piece).cast("B")
        if sent >= len(view):
            sent -= len(view)
            continue
        out.append(view[sent:])
        sent = 0
    return out
