"""Server-side call dispatch, without I/O: a call in, the reply's pieces out.

Services follow the generated `V_Server` shape: `PROGRAM`, `VERSION`, `PROCEDURES` mapping a
procedure number to `Procedure(number, name, arg_codecs, result_codec, facts, plan)`; the
handler is the service's method named `procedure.name`, called as `handler(ctx, *args)`. A
procedure's plan (cricket_xdr.stubs.Plan), where it has one, decodes fixed-size arguments and
encodes a fixed-size result with one struct each; the codecs do the rest.

Order of checks (as RFC 5531 and libtirpc): RPC version, credentials, program, version,
procedure, arguments, handler.

A service may name, in `VIEW_ARGS` (a set of procedure numbers), the procedures whose large
opaque arguments it takes as read-only memoryviews of the call record instead of copies, in
`ARG_DECODERS` (procedure number -> `decode(body) -> [args]`) its own faster reader of a
procedure's arguments (it must accept what the generated codecs accept and raise XdrError
for anything else: that is answered with GARBAGE_ARGS), and in `DEFERRED_REPLIES` those
whose replies nobody waits for at once (pipelined calls): the transport may write them
together with later replies.

Tagged arguments: a service may name, in `TAGGED_ARGS` (procedure number -> ((argument index,
mask), ...)), integer arguments whose top bits (`value >> TAG_SHIFT`) are a tag, and the
tags allowed there (bit t of the mask: tag t). The dispatcher checks them before the handler,
inline (a shift and a mask per argument); when a nonzero tag is not allowed it calls
`service.tagged_arg_refused(ctx, procedure, args)` instead of the handler, and that result is
the reply.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from cricket_xdr.xdr import Decoder, Encoder, XdrError, xdr_int

from .auth import Credential, Verifier, default_verifiers, verify_none
from .connection import ServerConnection
from .errors import AuthError
from .message import (
    AUTH_NONE,
    AUTH_REJECTEDCRED,
    GARBAGE_ARGS,
    NULL_AUTH,
    PROC_UNAVAIL,
    PROG_MISMATCH,
    PROG_UNAVAIL,
    RPC_VERSION,
    SYSTEM_ERR,
    CallMessage,
)
from .record import Buffer

__all__ = ["ConnectionInfo", "CallContext", "Dispatcher"]

log = logging.getLogger("cricket_xdr.rpc.server")


def _cannot_tell(_timeout: float) -> bool:
    return False


class ConnectionInfo:
    """The connection a call came on (`ctx.connection`).

    `state` is free for services (per-client sessions); close callbacks run exactly once when
    the connection ends, whatever the reason.
    """

    def __init__(
        self, conn_id: int, peer: object, closer: Callable[[], None] = lambda: None
    ) -> None:
        self.id = conn_id
        self.peer = peer
        self.peer_uid: int | None = None  # a local Unix socket's peer (SO_PEERCRED)
        self.state: dict[str, Any] = {}
        # `drain_received(timeout) -> bool`: wait until every call received on the socket so
        # far has run (the server's connection sets it; False when it cannot tell)
        self.drain_received: Callable[[float], bool] = _cannot_tell
        # The client asks for held replies (a later call) before it waits for one alone: the
        # replies of DEFERRED_REPLIES procedures may then wait past the last received call
        # (a service sets it for a client that says so, e.g. by its protocol version).
        self.replies_may_wait = False
        self._closer = closer
        self._callbacks: list[Callable[[], object]] = []
        self._lock = threading.Lock()
        self._ended = False

    def add_close_callback(self, fn: Callable[[], object]) -> None:
        """Run `fn()` when the connection ends (at once if it already has)."""
        with self._lock:
            if not self._ended:
                self._callbacks.append(fn)
                return
        _run_callback(fn, self)

    def close(self) -> None:
        """Ask the server to close this connection (after the current call's reply)."""
        self._closer()

    def run_close_callbacks(self) -> None:
        """Run the close callbacks; only the first call does anything."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            _run_callback(fn, self)

    def __repr__(self) -> str:
        return f"<connection {self.id} from {self.peer!r}>"


def _run_callback(fn: Callable[[], object], info: ConnectionInfo) -> None:
    try:
        fn()
    except Exception:
        log.exception("close callback %r of %r failed", fn, info)


class CallContext(NamedTuple):
    """What a handler gets as its first argument (a tuple: the dispatcher makes one per call
    without running Python code)."""

    xid: int
    prog: int
    vers: int
    proc: int
    cred: Credential
    connection: ConnectionInfo


_new_context = tuple.__new__  # _new_context(CallContext, fields): CallContext(*fields)


class Dispatcher:
    """Maps calls to services and turns their outcome into reply pieces."""

    def __init__(
        self, services: Iterable[Any], verifiers: Mapping[int, Verifier] | None = None
    ) -> None:
        self._services: dict[tuple[int, int], Any] = {}
        versions: dict[int, list[int]] = {}
        for service in services:
            key = (int(service.PROGRAM), int(service.VERSION))
            if key in self._services:
                raise ValueError(f"program {key[0]:#x} version {key[1]} is served twice")
            self._services[key] = service
            versions.setdefault(key[0], []).append(key[1])
        self._versions = {p: (min(v), max(v)) for p, v in versions.items()}
        self.deferred_replies: dict[tuple[int, int], frozenset[int]] = {
            key: frozenset(getattr(service, "DEFERRED_REPLIES", ()))
            for key, service in self._services.items()
        }
        """(program, version) -> procedures whose replies may wait to share a later write."""
        self.verifiers: dict[int, Verifier] = (
            dict(verifiers) if verifiers is not None else default_verifiers()
        )
        self._plain_none = self.verifiers.get(AUTH_NONE) is verify_none
        # (program, version, procedure) -> (Procedure, bound handler, argument decoder, result
        # encoder), made on the first call; the decoder takes the call body and gives the
        # handler's arguments, the encoder its result's reply pieces
        self._routes: dict[tuple[int, int, int], _Route] = {}

    @property
    def programs(self) -> list[tuple[int, int]]:
        """The (program, version) pairs served."""
        return sorted(self._services)

    def dispatch(
        self, conn: ServerConnection, call: CallMessage, info: ConnectionInfo
    ) -> list[Buffer]:
        xid = call.xid
        if call.rpcvers != RPC_VERSION:
            return conn.reply_rpc_mismatch(xid)
        cred = call.cred
        if cred is NULL_AUTH and self._plain_none:
            credential = _NO_CREDENTIAL
        else:
            verifier = self.verifiers.get(cred.flavor)
            if verifier is None:
                return conn.reply_auth_error(xid, AUTH_REJECTEDCRED)
            try:
                principal = verifier(cred, call.verf)
            except AuthError as exc:
                return conn.reply_auth_error(xid, exc.stat)
            credential = Credential(cred.flavor, cred.body, principal)
        service = self._services.get((call.prog, call.vers))
        if service is None:
            span = self._versions.get(call.prog)
            if span is None:
                return conn.reply_error(xid, PROG_UNAVAIL)
            return conn.reply_error(xid, PROG_MISMATCH, low=span[0], high=span[1])
        if call.proc == 0:
            if len(call.body):
                return conn.reply_error(xid, GARBAGE_ARGS)
            return conn.reply_success(xid)
        route = self._routes.get((call.prog, call.vers, call.proc))
        if route is None:
            procedure = service.PROCEDURES.get(call.proc)
            if procedure is None:
                return conn.reply_error(xid, PROC_UNAVAIL)
            route = (
                procedure,
                getattr(service, procedure.name),
                _decoder(service, procedure),
                _encoder(procedure),
                getattr(service, "TAGGED_ARGS", {}).get(procedure.number),
                getattr(service, "TAG_SHIFT", 0),
            )
            self._routes[(call.prog, call.vers, call.proc)] = route
        procedure, handler, decode, encode, tagged, shift = route
        if decode is None:  # a procedure without arguments
            if len(call.body):
                return conn.reply_error(xid, GARBAGE_ARGS)
            args: Any = ()
        else:
            try:
                args = decode(call.body)
            except XdrError as exc:
                log.debug("%s: garbage arguments: %s", _Named(call, procedure), exc)
                return conn.reply_error(xid, GARBAGE_ARGS)
            except Exception:
                log.exception("%s: argument decoder failed", _Named(call, procedure))
                return conn.reply_error(xid, SYSTEM_ERR)
        ctx = _new_context(CallContext, (xid, call.prog, call.vers, call.proc, credential, info))
        if tagged is not None:
            for index, allowed in tagged:
                tag = args[index] >> shift
                if tag and not allowed >> tag & 1:
                    handler = _tag_refusal(service, procedure)
                    break
        try:
            result = handler(ctx, *args)
        except NotImplementedError:
            return conn.reply_error(xid, PROC_UNAVAIL)
        except Exception:
            log.exception("%s: handler failed", _Named(call, procedure))
            return conn.reply_error(xid, SYSTEM_ERR)
        try:
            body = encode(result)
        except Exception:
            log.exception("%s: result %r could not be encoded", _Named(call, procedure), result)
            return conn.reply_error(xid, SYSTEM_ERR)
        return conn.reply_success(xid, body)



_Route = tuple[
    Any,
    Callable[..., Any],
    Callable[[Buffer], Any] | None,
    Callable[[Any], list[Buffer]],
    tuple[tuple[int, int], ...] | None,
    int,
]


def _tag_refusal(service: Any, procedure: Any) -> Callable[..., Any]:
    """The handler of a call whose tagged argument holds a tag not allowed there."""

    def refused(ctx: CallContext, *args: Any) -> Any:
        return service.tagged_arg_refused(ctx, procedure, args)

    return refused


def _decoder(service: Any, procedure: Any) -> Callable[[Buffer], Any] | None:
    """How a procedure's call body becomes its handler's arguments (see the module doc): the
    service's own decoder, views, the procedure's plan (fixed-size arguments: one struct),
    else its codecs; None for a procedure without arguments (an empty body)."""
    own = getattr(service, "ARG_DECODERS", {}).get(procedure.number)
    if own is not None:
        return own  # type: ignore[no-any-return]
    codecs = procedure.arg_codecs
    if procedure.number in getattr(service, "VIEW_ARGS", ()):
        return lambda body: _decode_views(codecs, body)
    plan = getattr(procedure, "plan", None)
    if plan is not None and plan.decode_args is not None:
        return plan.decode_args  # type: ignore[no-any-return]
    if not codecs:
        return None
    if len(codecs) == 1:
        decode_one = codecs[0].decode
        return lambda body: [decode_one(body)]
    return lambda body: _decode_all(codecs, body)


def _encoder(procedure: Any) -> Callable[[Any], list[Buffer]]:
    """How a handler's result becomes the reply's pieces: the procedure's plan (a fixed-size
    result: one struct), else its codec."""
    plan = getattr(procedure, "plan", None)
    if plan is not None and plan.encode_result is not None:
        return plan.encode_result  # type: ignore[no-any-return]
    codec = procedure.result_codec
    if codec is xdr_int:
        return _encode_status
    return lambda value: _encode_result(codec, value)


def _encode_status(value: Any) -> list[Buffer]:
    """An int result (a status): the most common result."""
    if type(value) is int:
        try:
            return [_INT.pack(value)]
        except struct.error:
            pass  # the codec says what is wrong
    return _encode_result(xdr_int, value)


def _decode_all(codecs: Any, body: Buffer) -> list[Any]:
    dec = Decoder(body)
    args = [codec.unpack(dec) for codec in codecs]
    dec.done()
    return args


def _decode_views(codecs: Any, body: Buffer) -> list[Any]:
    """Arguments whose large opaque data stay views of the call record (no copy)."""
    dec = Decoder(body, views=True)
    args = [codec.unpack(dec) for codec in codecs]
    dec.done()
    return args


_NO_CREDENTIAL = Credential(AUTH_NONE, b"", None)


class _Named:
    """A call's name for log messages, formatted only when a message is emitted."""

    __slots__ = ("call", "procedure")

    def __init__(self, call: CallMessage, procedure: Any) -> None:
        self.call = call
        self.procedure = procedure

    def __str__(self) -> str:
        c = self.call
        return f"program {c.prog:#x} version {c.vers} procedure {c.proc} ({self.procedure.name})"


_INT = struct.Struct(">i")


def _encode_result(codec: Any, value: Any) -> list[Buffer]:
    if codec is None:
        return []
    if codec is xdr_int and type(value) is int:  # a status: the most common result
        return [_INT.pack(value)]
    enc = Encoder()
    codec.pack(enc, value)
    return [b for b in enc.buffers() if len(b)]
