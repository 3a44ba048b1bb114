"""RPC call and reply messages (RFC 5531 section 9), encoded with precompiled structs.

Call header (all fields are big-endian 32-bit words, opaque bodies padded to 4 bytes)::

    | xid | CALL=0 | rpcvers=2 | prog | vers | proc | cred flavor | len | body... |
    | verf flavor | len | body... | procedure arguments...                       |

Reply header::

    | xid | REPLY=1 | MSG_ACCEPTED=0 | verf flavor | len | body... | accept_stat | ...
        SUCCESS: results...   PROG_MISMATCH: low | high   others: nothing
    | xid | REPLY=1 | MSG_DENIED=1 | RPC_MISMATCH=0 | low | high
    | xid | REPLY=1 | MSG_DENIED=1 | AUTH_ERROR=1 | auth_stat

Nothing here does I/O; record marking is `record`'s job.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from .errors import (
    AuthError,
    CallDecodeError,
    GarbageArgs,
    ProcUnavail,
    ProgMismatch,
    ProgUnavail,
    RemoteRpcError,
    ReplyDecodeError,
    RpcMismatch,
    SystemErr,
)

RPC_VERSION = 2
CALL = 0
REPLY = 1
MSG_ACCEPTED = 0
MSG_DENIED = 1

SUCCESS = 0
PROG_UNAVAIL = 1
PROG_MISMATCH = 2
PROC_UNAVAIL = 3
GARBAGE_ARGS = 4
SYSTEM_ERR = 5

RPC_MISMATCH = 0
AUTH_ERROR = 1

AUTH_NONE = 0
AUTH_SYS = 1
AUTH_SHORT = 2
AUTH_DH = 3
RPCSEC_GSS = 6

AUTH_OK = 0
AUTH_BADCRED = 1
AUTH_REJECTEDCRED = 2
AUTH_BADVERF = 3
AUTH_REJECTEDVERF = 4
AUTH_TOOWEAK = 5

MAX_AUTH_BYTES = 400

_U32 = struct.Struct(">I")
_U32X2 = struct.Struct(">II")
_U32X3 = struct.Struct(">III")
_CALL6 = struct.Struct(">6I")
_CALL_NONE = struct.Struct(">10I")  # call header with AUTH_NONE cred and verf
_REPLY3 = struct.Struct(">3I")
_REPLY6 = struct.Struct(">6I")  # xid, REPLY, MSG_ACCEPTED, verf AUTH_NONE, 0, accept_stat
_PAD = (b"", b"\0\0\0", b"\0\0", b"\0")


class OpaqueAuth(NamedTuple):
    """`opaque_auth`: an authentication flavor and its body (at most 400 bytes)."""

    flavor: int
    body: bytes = b""


NULL_AUTH = OpaqueAuth(AUTH_NONE, b"")


def encode_opaque_auth(auth: OpaqueAuth) -> bytes:
    body = auth.body
    if len(body) > MAX_AUTH_BYTES:
        raise ValueError(f"auth flavor {auth.flavor}: body of {len(body)} bytes exceeds 400")
    return _U32X2.pack(auth.flavor, len(body)) + body + _PAD[len(body) & 3]


def _decode_opaque_auth(
    data: bytes | bytearray | memoryview, pos: int, what: str
) -> tuple[OpaqueAuth, int]:
    if len(data) < pos + 8:
        raise ValueError(f"{what} truncated")
    flavor, length = _U32X2.unpack_from(data, pos)
    if length > MAX_AUTH_BYTES:
        raise ValueError(f"{what} body of {length} bytes exceeds 400")
    start = pos + 8
    end = start + length
    padded = start + ((length + 3) & ~3)
    if len(data) < padded:
        raise ValueError(f"{what} body truncated")
    return OpaqueAuth(flavor, bytes(data[start:end])), padded


# --- calls -------------------------------------------------------------------------------


def encode_call_header(
    xid: int, prog: int, vers: int, proc: int, cred: OpaqueAuth, verf: OpaqueAuth
) -> bytes:
    """The call header, without arguments."""
    if cred.flavor == AUTH_NONE and not cred.body and verf.flavor == AUTH_NONE and not verf.body:
        return _CALL_NONE.pack(xid, CALL, RPC_VERSION, prog, vers, proc, 0, 0, 0, 0)
    return (
        _CALL6.pack(xid, CALL, RPC_VERSION, prog, vers, proc)
        + encode_opaque_auth(cred)
        + encode_opaque_auth(verf)
    )


class CallMessage(NamedTuple):
    """A decoded call. `rpcvers != 2` leaves every field after it at zero/empty. (A tuple:
    `decode_call` makes one per call without running Python code.)"""

    xid: int
    rpcvers: int
    prog: int
    vers: int
    proc: int
    cred: OpaqueAuth
    verf: OpaqueAuth
    body: bytes | bytearray | memoryview


_new_message = tuple.__new__  # _new_message(CallMessage, fields): CallMessage(*fields)


def decode_call(record: bytes | bytearray | memoryview) -> CallMessage:
    """Parse a call record. Raises CallDecodeError when it is not a well-formed call."""
    if len(record) >= 40:
        xid, mtype, rpcvers, prog, vers, proc, cflav, clen, vflav, vlen = _CALL_NONE.unpack_from(
            record
        )
        if mtype == CALL and rpcvers == RPC_VERSION and not (cflav or clen or vflav or vlen):
            # Small argument bodies are copied (cheaper than a view), large ones are not.
            body = record[40:] if len(record) < 4096 else memoryview(record)[40:]
            return _new_message(
                CallMessage, (xid, rpcvers, prog, vers, proc, NULL_AUTH, NULL_AUTH, body)
            )
    if len(record) < 12:
        raise CallDecodeError(f"record of {len(record)} bytes is too short for a call")
    xid, mtype, rpcvers = _U32X3.unpack_from(record)
    if mtype != CALL:
        raise CallDecodeError(f"xid {xid:#x}: message type {mtype} sent to a server, expected CALL")
    if rpcvers != RPC_VERSION:
        return CallMessage(xid, rpcvers, 0, 0, 0, NULL_AUTH, NULL_AUTH, b"")
    if len(record) < 40:
        raise CallDecodeError(f"xid {xid:#x}: call header truncated ({len(record)} bytes)")
    _, _, _, prog, vers, proc = _CALL6.unpack_from(record)
    try:
        cred, pos = _decode_opaque_auth(record, 24, "credential")
        verf, pos = _decode_opaque_auth(record, pos, "verifier")
    except ValueError as exc:
        raise CallDecodeError(f"xid {xid:#x}: {exc}") from None
    return CallMessage(xid, rpcvers, prog, vers, proc, cred, verf, memoryview(record)[pos:])


# --- replies -----------------------------------------------------------------------------


def encode_success_header(xid: int, verf: OpaqueAuth = NULL_AUTH) -> bytes:
    """Reply header for SUCCESS; the results follow it."""
    if verf.flavor == AUTH_NONE and not verf.body:
        return _REPLY6.pack(xid, REPLY, MSG_ACCEPTED, 0, 0, SUCCESS)
    return _REPLY3.pack(xid, REPLY, MSG_ACCEPTED) + encode_opaque_auth(verf) + _U32.pack(SUCCESS)


def encode_accepted_error(
    xid: int,
    accept_stat: int,
    *,
    low: int = 0,
    high: int = 0,
    verf: OpaqueAuth = NULL_AUTH,
) -> bytes:
    """A complete MSG_ACCEPTED reply with an error accept_stat (PROG_MISMATCH carries low..high)."""
    head = (
        _REPLY3.pack(xid, REPLY, MSG_ACCEPTED) + encode_opaque_auth(verf) + _U32.pack(accept_stat)
    )
    if accept_stat == PROG_MISMATCH:
        head += _U32X2.pack(low, high)
    return head


def encode_rpc_mismatch(xid: int, low: int = RPC_VERSION, high: int = RPC_VERSION) -> bytes:
    return _REPLY6.pack(xid, REPLY, MSG_DENIED, RPC_MISMATCH, low, high)


def encode_auth_error(xid: int, auth_stat: int) -> bytes:
    return struct.pack(">5I", xid, REPLY, MSG_DENIED, AUTH_ERROR, auth_stat)


@dataclass(slots=True)
class ReplyMessage:
    """A decoded reply. `body` holds the results when accepted with SUCCESS."""

    xid: int
    reply_stat: int = MSG_ACCEPTED
    accept_stat: int = SUCCESS
    verf: OpaqueAuth = NULL_AUTH
    body: bytes | bytearray | memoryview = b""
    reject_stat: int = 0
    low: int = 0
    high: int = 0
    auth_stat: int = 0

    def error(
        self, prog: int | None = None, vers: int | None = None, proc: int | None = None
    ) -> RemoteRpcError | None:
        """The exception this reply stands for, or None for SUCCESS."""
        xid = self.xid
        if self.reply_stat == MSG_ACCEPTED:
            stat = self.accept_stat
            if stat == SUCCESS:
                return None
            if stat == PROG_MISMATCH:
                return ProgMismatch(self.low, self.high, prog, vers, proc, xid=xid)
            cls = _ACCEPT_ERRORS.get(stat)
            if cls is None:  # decode_reply lets no other value through
                raise AssertionError(f"accept_stat {stat}")
            return cls(prog, vers, proc, xid=xid)
        if self.reject_stat == RPC_MISMATCH:
            return RpcMismatch(self.low, self.high, prog, vers, proc, xid=xid)
        return AuthError(self.auth_stat, "", prog, vers, proc, xid=xid)


_ACCEPT_ERRORS: dict[int, type[RemoteRpcError]] = {
    PROG_UNAVAIL: ProgUnavail,
    PROC_UNAVAIL: ProcUnavail,
    GARBAGE_ARGS: GarbageArgs,
    SYSTEM_ERR: SystemErr,
}


def reply_xid(record: bytes | bytearray | memoryview) -> int | None:
    """The xid of a reply record, or None when the record cannot be a reply."""
    if len(record) < 8:
        return None
    xid, mtype = _U32X2.unpack_from(record)
    return xid if mtype == REPLY else None


def decode_reply(record: bytes | bytearray | memoryview) -> ReplyMessage:
    """Parse a reply record. Raises ReplyDecodeError when it is malformed."""
    if len(record) >= 24:
        xid, mtype, stat, vflav, vlen, astat = _REPLY6.unpack_from(record)
        if (
            mtype == REPLY
            and stat == MSG_ACCEPTED
            and vflav == AUTH_NONE
            and vlen == 0
            and astat == SUCCESS
        ):
            body = record[24:] if len(record) < 65536 else memoryview(record)[24:]
            return ReplyMessage(xid, body=body)
    if len(record) < 12:
        raise ReplyDecodeError(f"record of {len(record)} bytes is too short for a reply")
    xid, mtype, stat = _REPLY3.unpack_from(record)
    where = f"reply xid {xid:#x}"
    if mtype != REPLY:
        raise ReplyDecodeError(f"{where}: message type {mtype}, expected REPLY")
    if stat == MSG_ACCEPTED:
        try:
            verf, pos = _decode_opaque_auth(record, 12, "verifier")
        except ValueError as exc:
            raise ReplyDecodeError(f"{where}: {exc}") from None
        if len(record) < pos + 4:
            raise ReplyDecodeError(f"{where}: accept_stat missing")
        (astat,) = _U32.unpack_from(record, pos)
        pos += 4
        if astat == SUCCESS:
            return ReplyMessage(xid, verf=verf, body=memoryview(record)[pos:])
        if astat == PROG_MISMATCH:
            if len(record) != pos + 8:
                raise ReplyDecodeError(f"{where}: PROG_MISMATCH needs low and high versions")
            low, high = _U32X2.unpack_from(record, pos)
            return ReplyMessage(xid, accept_stat=astat, verf=verf, low=low, high=high)
        if astat not in _ACCEPT_ERRORS:
            raise ReplyDecodeError(f"{where}: unknown accept_stat {astat}")
        if len(record) != pos:
            raise ReplyDecodeError(f"{where}: {len(record) - pos} bytes after accept_stat {astat}")
        return ReplyMessage(xid, accept_stat=astat, verf=verf)
    if stat == MSG_DENIED:
        if len(record) < 16:
            raise ReplyDecodeError(f"{where}: reject_stat missing")
        (rstat,) = _U32.unpack_from(record, 12)
        if rstat == RPC_MISMATCH and len(record) == 24:
            low, high = _U32X2.unpack_from(record, 16)
            return ReplyMessage(xid, MSG_DENIED, reject_stat=rstat, low=low, high=high)
        if rstat == AUTH_ERROR and len(record) == 20:
            (astat,) = _U32.unpack_from(record, 16)
            return ReplyMessage(xid, MSG_DENIED, reject_stat=rstat, auth_stat=astat)
        raise ReplyDecodeError(
            f"{where}: malformed MSG_DENIED (reject_stat {rstat}, {len(record)} bytes)"
        )
    raise ReplyDecodeError(f"{where}: unknown reply_stat {stat}")
