"""ONC RPC (RFC 5531): a sans-io core (`message`, `record`, `connection`, `dispatch`), client
and server transports over TCP and Unix sockets, and authentication flavors (`auth`)."""

from .auth import AuthNone, AuthSys, AuthSysParams, Credential
from .client import PendingCall, RpcClient
from .dispatch import CallContext, ConnectionInfo
from .errors import (
    AuthError,
    ConnectionLost,
    ConnectTimeout,
    GarbageArgs,
    LocalRpcError,
    ProcUnavail,
    ProgMismatch,
    ProgUnavail,
    RecordTooLarge,
    RemoteRpcError,
    ReplyDecodeError,
    RpcError,
    RpcMismatch,
    RpcTimeout,
    SystemErr,
)
from .server import RpcServer

__all__ = [
    "AuthError",
    "AuthNone",
    "AuthSys",
    "AuthSysParams",
    "CallContext",
    "ConnectionInfo",
    "ConnectionLost",
    "ConnectTimeout",
    "Credential",
    "GarbageArgs",
    "LocalRpcError",
    "PendingCall",
    "ProcUnavail",
    "ProgMismatch",
    "ProgUnavail",
    "RecordTooLarge",
    "RemoteRpcError",
    "ReplyDecodeError",
    "RpcClient",
    "RpcError",
    "RpcMismatch",
    "RpcServer",
    "RpcTimeout",
    "SystemErr",
]
