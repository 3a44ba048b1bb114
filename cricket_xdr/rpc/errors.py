"""The exceptions of the ONC RPC runtime.

`LocalRpcError`: this side saw something go wrong (lost connection, timeout, a record over the
size limit, a reply it cannot parse). `RemoteRpcError`: the peer answered the call with a reject
or error state (RFC 5531 `accept_stat` / `reject_stat`). Remote errors name the call they answer
(program, version and procedure numbers, xid) when the client knows them.
"""

from __future__ import annotations

__all__ = [
    "RpcError",
    "LocalRpcError",
    "ConnectionLost",
    "RpcTimeout",
    "ConnectTimeout",
    "RecordTooLarge",
    "BufferLimit",
    "MessageDecodeError",
    "ReplyDecodeError",
    "CallDecodeError",
    "RemoteRpcError",
    "ProgUnavail",
    "ProgMismatch",
    "ProcUnavail",
    "GarbageArgs",
    "SystemErr",
    "RpcMismatch",
    "AuthError",
    "AUTH_STAT_NAMES",
]


class RpcError(Exception):
    """Base of every error the RPC runtime raises."""


class LocalRpcError(RpcError):
    """Something went wrong on this side of the connection."""


class ConnectionLost(LocalRpcError):
    """The connection closed or failed; every call in flight on it fails with this."""


class RpcTimeout(LocalRpcError, TimeoutError):
    """No reply came within the call's timeout; a late reply for it is dropped."""


class ConnectTimeout(RpcTimeout):
    """Setting up a connection (TCP connect, STARTTLS, token proof, the first call) did not
    finish in time: `where` names the address, `stage` the step that was still waiting."""

    def __init__(self, where: str, stage: str, timeout: float | None) -> None:
        within = f" within {timeout:g} s" if timeout is not None else ""
        super().__init__(f"{where}: no answer during {stage}{within} (connection setup)")
        self.where = where
        self.stage = stage
        self.timeout = timeout


class RecordTooLarge(LocalRpcError):
    """A record (or a fragment header announcing one) exceeds the configured maximum."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"record of at least {size} bytes exceeds the maximum of {limit} bytes")
        self.size = size
        self.limit = limit


class BufferLimit(RecordTooLarge):
    """Buffering a record's start would exceed a budget shared by several connections
    (`record.BufferBudget`); the record is refused like one over the maximum size."""

    def __init__(self, size: int, limit: int, used: int, what: str) -> None:
        LocalRpcError.__init__(
            self,
            f"a record of {size} bytes would exceed {what} of {limit} bytes "
            f"({used} bytes of it are in use)",
        )
        self.size = size
        self.limit = limit
        self.used = used


class MessageDecodeError(LocalRpcError):
    """A record does not hold a well-formed RPC message."""


class ReplyDecodeError(MessageDecodeError):
    """A reply record could not be parsed (client side)."""


class CallDecodeError(MessageDecodeError):
    """A call record could not be parsed (server side); the connection is dropped."""


def _call_name(prog: int | None, vers: int | None, proc: int | None) -> str:
    if prog is None:
        return "call"
    return f"program {prog:#x} version {vers} procedure {proc}"


class RemoteRpcError(RpcError):
    """The server answered the call with an error or reject state."""

    reason = "remote error"

    def __init__(
        self,
        prog: int | None = None,
        vers: int | None = None,
        proc: int | None = None,
        *,
        xid: int | None = None,
    ) -> None:
        self.prog = prog
        self.vers = vers
        self.proc = proc
        self.xid = xid
        super().__init__(self._message())

    def _message(self) -> str:
        return f"{_call_name(self.prog, self.vers, self.proc)}: {self.reason}"


class ProgUnavail(RemoteRpcError):
    reason = "program not served (PROG_UNAVAIL)"


class ProcUnavail(RemoteRpcError):
    reason = "procedure not implemented (PROC_UNAVAIL)"


class GarbageArgs(RemoteRpcError):
    reason = "server could not decode the arguments (GARBAGE_ARGS)"


class SystemErr(RemoteRpcError):
    reason = "server failed while executing the call (SYSTEM_ERR)"


class _RangeError(RemoteRpcError):
    def __init__(
        self,
        low: int,
        high: int,
        prog: int | None = None,
        vers: int | None = None,
        proc: int | None = None,
        *,
        xid: int | None = None,
    ) -> None:
        self.low = low
        self.high = high
        super().__init__(prog, vers, proc, xid=xid)


class ProgMismatch(_RangeError):
    def _message(self) -> str:
        return (
            f"{_call_name(self.prog, self.vers, self.proc)}: version not served, "
            f"server has versions {self.low}..{self.high} (PROG_MISMATCH)"
        )


class RpcMismatch(_RangeError):
    def _message(self) -> str:
        return (
            f"{_call_name(self.prog, self.vers, self.proc)}: RPC version not supported, "
            f"server speaks {self.low}..{self.high} (RPC_MISMATCH)"
        )


AUTH_STAT_NAMES = {
    0: "AUTH_OK",
    1: "AUTH_BADCRED",
    2: "AUTH_REJECTEDCRED",
    3: "AUTH_BADVERF",
    4: "AUTH_REJECTEDVERF",
    5: "AUTH_TOOWEAK",
    6: "AUTH_INVALIDRESP",
    7: "AUTH_FAILED",
    8: "AUTH_KERB_GENERIC",
    9: "AUTH_TIMEEXPIRE",
    10: "AUTH_TKT_FILE",
    11: "AUTH_DECODE",
    12: "AUTH_NET_ADDR",
    13: "RPCSEC_GSS_CREDPROBLEM",
    14: "RPCSEC_GSS_CTXPROBLEM",
}


class AuthError(RemoteRpcError):
    """The server refused the call's credentials (MSG_DENIED / AUTH_ERROR).

    Server-side verifiers raise it too (`AuthError(AUTH_BADCRED, "why")`) to deny a call.
    """

    def __init__(
        self,
        stat: int,
        detail: str = "",
        prog: int | None = None,
        vers: int | None = None,
        proc: int | None = None,
        *,
        xid: int | None = None,
    ) -> None:
        self.stat = stat
        self.detail = detail
        super().__init__(prog, vers, proc, xid=xid)

    def _message(self) -> str:
        name = AUTH_STAT_NAMES.get(self.stat, f"auth_stat {self.stat}")
        extra = f": {self.detail}" if self.detail else ""
        return f"{_call_name(self.prog, self.vers, self.proc)}: credentials refused ({name}){extra}"
