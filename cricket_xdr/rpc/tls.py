"""RPC-over-TLS (RFC 9289): TLS contexts and `TlsSocket`, TLS over a connected socket.

`TlsSocket` runs an `ssl.SSLObject` over memory BIOs and offers the socket calls the RPC
transports use (`recv_into`, `send`, `sendmsg`, `sendall`, `fileno`, `shutdown`, `close`,
timeouts). Unlike `ssl.SSLSocket` it lets one thread read while another writes (the
`SSLObject` is used under a lock, the socket I/O outside it), and it keeps the client's
non-blocking send contract (`MSG_DONTWAIT`): a TLS record only partly written is finished
by the next send, which must start with the same plaintext (the client always retries
with what was left), and is counted as sent only then.

The STARTTLS exchange itself (a NULL call with an AUTH_TLS credential answered by the
verifier "STARTTLS", then the handshake on the same connection) is `handshake.start_tls`
(client) and `handshake.admit` (server).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, cast

from .errors import LocalRpcError
from .message import AUTH_NONE, OpaqueAuth
from .record import Buffer

__all__ = [
    "ALPN",
    "STARTTLS_VERIFIER",
    "TlsError",
    "TlsSocket",
    "channel_binding",
    "client_context",
    "server_context",
]

ALPN = "sunrpc"  # RFC 9289 section 5.2
STARTTLS_VERIFIER = OpaqueAuth(AUTH_NONE, b"STARTTLS")
_RECORD = 16384  # plaintext bytes per TLS record written
_READ = 1 << 16


class TlsError(LocalRpcError):
    """TLS could not be set up: the server offers none, or a certificate was refused."""


def server_context(cert: str, key: str, client_ca: str | None = None) -> ssl.SSLContext:
    """TLS 1.3 server context; with `client_ca`, clients must show a certificate it signed."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(cert, key)
    if client_ca is not None:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(cafile=client_ca)
    ctx.set_alpn_protocols([ALPN])
    return ctx


def client_context(
    ca: str | None = None, cert: str | None = None, key: str | None = None
) -> ssl.SSLContext:
    """TLS 1.3 client context trusting `ca` (a file of CA certificates; None: the system's
    trust store), showing the client certificate `cert` (and `key`) when given."""
    ctx = ssl.create_default_context(cafile=ca)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    if cert is not None:
        ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols([ALPN])
    return ctx


def channel_binding(sock: object) -> bytes:
    """The TLS channel binding of `sock` (a TlsSocket), else empty."""
    return sock.channel_binding() if isinstance(sock, TlsSocket) else b""


class TlsSocket:
    """TLS on a connected stream socket; see the module docstring."""

    def __init__(
        self,
        sock: socket.socket,
        context: ssl.SSLContext,
        *,
        server_side: bool,
        server_hostname: str | None = None,
    ) -> None:
        self.raw = sock
        self.family = sock.family
        self.context = context  # for further connections of the same peer (data channels)
        self.server_side = server_side
        self.server_hostname = server_hostname
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._tls = context.wrap_bio(
            self._in, self._out, server_side=server_side, server_hostname=server_hostname
        )
        self._lock = threading.Lock()  # guards the SSLObject and its BIOs
        self._send_lock = threading.Lock()  # one writer at a time: records stay in order
        self._unsent = memoryview(b"")  # ciphertext of a record only partly written
        self._unsent_plain = 0  # plaintext bytes that record holds

    # -- handshake -------------------------------------------------------------------------

    def handshake(self, timeout: float | None = None, *, deadline: float | None = None) -> None:
        """Run the TLS handshake (blocking, within `timeout` seconds a step, and all of it
        before `deadline`, a `time.monotonic()` value, when given: TimeoutError)."""
        previous = self.raw.gettimeout()
        self.raw.settimeout(timeout)
        try:
            while True:
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError("the TLS handshake took too long")
                    self.raw.settimeout(left if timeout is None else min(timeout, left))
                try:
                    self._tls.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    self._flush_handshake()
                except ssl.SSLError:
                    with contextlib.suppress(OSError):
                        self._flush_handshake()  # the alert that tells the peer why
                    raise
                data = self.raw.recv(_READ)
                if not data:
                    raise ConnectionError("the peer closed the connection during the TLS handshake")
                self._in.write(data)
            self._flush_handshake()
        finally:
            self.raw.settimeout(previous)

    def _flush_handshake(self) -> None:
        data = self._out.read()
        if data:
            self.raw.sendall(data)

    def channel_binding(self) -> bytes:
        """"tls-unique" of this connection (both ends compute the same bytes)."""
        return self._tls.get_channel_binding("tls-unique") or b""

    def getpeercert(self) -> dict[str, Any] | None:
        return self._tls.getpeercert()  # type: ignore[return-value]

    def version(self) -> str | None:
        return self._tls.version()

    # -- receiving -------------------------------------------------------------------------

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        """Decrypted bytes into `buffer` (blocking until at least one); 0 at end of stream."""
        view = memoryview(buffer).cast("B")
        want = nbytes or len(view)
        while True:
            got = self._read_decrypted(view, want)
            if got:
                return got
            data = self.raw.recv(_READ)
            if not data:
                return 0
            with self._lock:
                self._in.write(data)

    def _read_decrypted(self, view: memoryview, want: int) -> int:
        got = 0
        with self._lock:
            while got < want:
                try:
                    n = cast(int, self._tls.read(want - got, view[got:want]))  # into view
                except ssl.SSLWantReadError:
                    break
                except ssl.SSLZeroReturnError:
                    break
                if not n:
                    break
                got += n
        return got

    def pending(self) -> int:
        """Bytes received and not yet handed out (a poll on the socket does not see them)."""
        with self._lock:
            return self._tls.pending() + self._in.pending

    # -- sending ---------------------------------------------------------------------------

    def send(self, data: Buffer, flags: int = 0) -> int:
        return self._write([data], bool(flags & socket.MSG_DONTWAIT))

    def sendmsg(
        self, buffers: Sequence[Buffer], ancdata: Sequence[Any] = (), flags: int = 0, *_: Any
    ) -> int:
        return self._write(buffers, bool(flags & socket.MSG_DONTWAIT))

    def sendall(self, data: Buffer) -> None:
        self._write([data], False)

    def _write(self, pieces: Sequence[Buffer], nonblocking: bool) -> int:
        """Encrypt and send; returns the plaintext bytes sent (all of them when blocking)."""
        with self._send_lock:
            sent = 0
            if self._unsent:
                if not self._push(nonblocking):
                    return 0
                sent, self._unsent_plain = self._unsent_plain, 0
            for chunk in _chunks(pieces, sent):
                with self._lock:
                    self._tls.write(chunk)
                    self._unsent = memoryview(self._out.read())
                self._unsent_plain = len(chunk)
                if not self._push(nonblocking):
                    return sent
                sent += len(chunk)
                self._unsent_plain = 0
            return sent

    def _push(self, nonblocking: bool) -> bool:
        """Send the ciphertext waiting; False when the socket took only part of it."""
        data = self._unsent
        if not nonblocking:
            self.raw.sendall(data)
            self._unsent = memoryview(b"")
            return True
        while data:
            try:
                n = self.raw.send(data, socket.MSG_DONTWAIT)
            except BlockingIOError:
                n = 0
            if not n:
                self._unsent = data
                return False
            data = data[n:]
        self._unsent = data
        return True

    # -- the socket calls passed through ---------------------------------------------------

    def fileno(self) -> int:
        return self.raw.fileno()

    def shutdown(self, how: int) -> None:
        self.raw.shutdown(how)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.raw.close()

    def settimeout(self, value: float | None) -> None:
        self.raw.settimeout(value)

    def gettimeout(self) -> float | None:
        return self.raw.gettimeout()

    def setblocking(self, flag: bool) -> None:
        self.raw.setblocking(flag)

    def setsockopt(self, *args: Any) -> None:
        self.raw.setsockopt(*args)

    def getpeername(self) -> Any:
        return self.raw.getpeername()

    def getsockname(self) -> Any:
        return self.raw.getsockname()

    def __repr__(self) -> str:
        return f"<TlsSocket {self.version()} fd {self.raw.fileno()}>"


def _chunks(pieces: Sequence[Buffer], skip: int) -> Iterator[bytes]:
    """The plaintext after the first `skip` bytes, in pieces of at most one TLS record."""
    current: list[memoryview] = []
    size = 0
    for piece in pieces:
        view = memoryview(piece).cast("B")
        if skip >= len(view):
            skip -= len(view)
            continue
        if skip:
            view, skip = view[skip:], 0
        while view:
            take = min(len(view), _RECORD - size)
            current.append(view[:take])
            size += take
            view = view[take:]
            if size == _RECORD:
                yield b"".join(current)
                current, size = [], 0
    if current:
        yield b"".join(current)
