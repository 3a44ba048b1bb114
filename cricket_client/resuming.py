"""The replay and reconnect wrapper around a `Connection`'s call methods.

`resuming(method)` runs a call method so that a lost connection does not lose the call:

- gathered launches are sent first (the server keeps the program's order), in one write with
  the call the method sends (one wake-up of the server for both);
- the calls it sends are numbered in the connection's replay log (and logged, once the
  program took a checkpoint: `cricket_client.replay`); a call that never ran (its arguments
  did not encode, the server refused it before dispatching it) is not numbered, as the
  server does not count it either;
- when the connection is lost and reconnecting is on, the session is resumed on a server
  holding it (`cricket_client.reconnect`) and the method runs once more;
- a log that outgrew its bound is renewed (a new checkpoint) after the call.

The synchronous path of `Connection.call` does the same inline when nothing is logged,
gathered or pending (see there); everything else goes through here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from cricket_xdr.rpc.errors import (
    AuthError,
    ConnectionLost,
    GarbageArgs,
    ProcUnavail,
    ProgMismatch,
    ProgUnavail,
    RpcMismatch,
)
from cricket_xdr.xdr import XdrEncodeError

from .reconnect import resume_after_loss
from .replay import calls_of, renew_log

if TYPE_CHECKING:
    from .connection import Connection

__all__ = ["NOT_RUN", "resuming"]

F = TypeVar("F", bound=Callable[..., Any])

# A call that failed with one of these never reached CricketService._run, which counts calls:
# its arguments did not encode, or the server refused it before dispatching it.
NOT_RUN = (
    XdrEncodeError,
    TypeError,
    ValueError,
    OverflowError,
    GarbageArgs,
    ProcUnavail,
    ProgUnavail,
    ProgMismatch,
    RpcMismatch,
    AuthError,
)

_ONE_CALL = frozenset({"call", "_call_resuming", "sync", "_sync", "post", "post_now", "post_now_encoded", "post_encoded"})  # methods sending one call
_POSTING = frozenset({"post", "post_now", "post_now_encoded", "post_encoded"})  # methods whose call may wait in the RPC client


def resuming(method: F) -> F:
    """Run a call method; when the connection is lost and reconnecting is on, resume the
    session on a server holding it (cricket_client.reconnect) and run it once more."""

    one_call = method.__name__ in _ONE_CALL
    posting = method.__name__ in _POSTING
    into = method.__name__ == "sync_into"  # one call when given one (args, view)

    @functools.wraps(method)
    def wrapper(self: Connection, *args: Any, **kwargs: Any) -> Any:
        launches = self.pipeline.launches
        if not launches.queued or posting:
            if launches.queued:
                launches.flush()  # gathered launches go first: the server keeps the order
            return _run(self, args, kwargs)
        # Gathered launches go first (the server keeps the order), in one write with the
        # call the method sends; should it send none, they leave when it returns.
        transport = self._rpc
        launches.flush(with_next=True)
        try:
            return _run(self, args, kwargs)
        finally:
            transport.flush()

    def _run(self: Connection, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        book = self.replay_log
        transport = self._rpc
        if (one_call or into and len(args[1]) == 1) and not book.logging:
            # One call, nothing logged: only its sequence number to keep.
            mark = book.count(args[0])
            try:
                return method(self, *args, **kwargs)
            except ConnectionLost as lost:
                book.rollback(mark)
                if not resume_after_loss(self, lost, transport):
                    raise
                return wrapper(self, *args, **kwargs)
            except NOT_RUN:
                book.rollback(mark)  # the server did not count it either
                raise
        mark = book.begin(calls_of(method.__name__, self, args))
        try:
            result = method(self, *args, **kwargs)
        except ConnectionLost as lost:
            book.rollback(mark)
            if not resume_after_loss(self, lost, transport):
                raise
            return wrapper(self, *args, **kwargs)
        except NOT_RUN:
            if one_call:
                book.rollback(mark)
            raise
        book.settle(mark, result)
        if book.full():
            renew_log(self)
        return result

    return wrapper  # type: ignore[return-value]
