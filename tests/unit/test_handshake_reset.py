"""A server that resets the connection during connection setup is a ConnectionLost (what
reconnecting and callers catch), not a bare OSError."""

from __future__ import annotations

import pytest

from cricket_xdr.rpc.errors import ConnectionLost
from cricket_xdr.rpc.handshake import null_call


class ResettingSocket:
    """Takes the call, then answers with a reset, as a server refusing a connection does."""

    def __init__(self, error: OSError) -> None:
        self.error = error

    def sendall(self, data: bytes) -> None:
        pass

    def recv_into(self, view: memoryview) -> int:
        raise self.error


@pytest.mark.parametrize("error", [ConnectionResetError(104, "reset"), BrokenPipeError(32, "pipe")])
def test_a_reset_during_setup_is_connection_lost(error: OSError) -> None:
    with pytest.raises(ConnectionLost, match="dropped the connection during connection setup"):
        null_call(ResettingSocket(error), 0x20000001, 1)


def test_a_timeout_stays_a_timeout() -> None:
    with pytest.raises(TimeoutError):
        null_call(ResettingSocket(TimeoutError("timed out")), 0x20000001, 1)
