"""Cricket client: CUDA driver calls of this process run on a remote GPU.

    import cricket_client
    from cricket_client import driver as cuda   # instead of: from cuda.bindings import driver

    cricket_client.connect("gpu-node:7070")      # or set REMOTE_GPU_ADDRESS; else lazy
    err, = cuda.cuInit(0)

Needs no GPU, driver, CUDA toolkit or cuda-python: only the standard library and xdrlib3.
"""

from __future__ import annotations

from . import driver, runtime
from .checkpoints import CheckpointFailed, CheckpointInfo, checkpoint, redirect
from .connection import ADDRESS_ENV, Connection, ServerInfo, connect, get_connection
from .errors import (
    CricketClientError,
    HelloRefused,
    NotConnectedError,
    NotSupportedRemotely,
)
from .reconnect import CallsLost, SessionNotFound
from .remote_imports import install

__all__ = [
    "ADDRESS_ENV",
    "Connection",
    "ServerInfo",
    "connect",
    "get_connection",
    "last_error_message",
    "driver",
    "runtime",
    "install",
    "checkpoint",
    "redirect",
    "CheckpointFailed",
    "CheckpointInfo",
    "CallsLost",
    "CricketClientError",
    "HelloRefused",
    "SessionNotFound",
    "NotConnectedError",
    "NotSupportedRemotely",
]


def last_error_message() -> str:
    """Why the last failed call of the active connection failed (CUDA has no place for it)."""
    return get_connection().last_error_message()
