"""Exceptions of the client, and the result-code helpers the driver module uses."""

from __future__ import annotations

from ._enums import ERROR_STRINGS, CUresult

__all__ = [
    "CricketClientError",
    "NotConnectedError",
    "HelloRefused",
    "NotSupportedRemotely",
    "to_result",
    "error_name",
    "error_string",
]


class CricketClientError(Exception):
    """Base of the client's own exceptions (RPC failures raise cricket_xdr.rpc.errors)."""


class NotConnectedError(CricketClientError):
    """No server address: pass one to connect() or set REMOTE_GPU_ADDRESS."""


class HelloRefused(CricketClientError):
    """The server answered HELLO with an error."""


class NotSupportedRemotely(AttributeError):
    """A name of cuda.bindings.driver that cricket_client.driver does not forward."""


def to_result(code: int) -> CUresult | int:
    """CUresult for a known code, else the plain int (a newer server's code)."""
    try:
        return CUresult(code)
    except ValueError:
        return int(code)


def error_name(code: int) -> str:
    try:
        return CUresult(code).name
    except ValueError:
        return f"CUresult {code}"


def error_string(code: int) -> str | None:
    return ERROR_STRINGS.get(int(code))
