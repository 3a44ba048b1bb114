"""`WorkerService`: `CricketService` as a worker process serves it, one session per process.

- A sticky CUDA error (the kernel faults below) spoils the CUDA state of the whole process,
  as on a local GPU: from then on the session answers that error to every call, and the
  message of GET_ERROR_MESSAGE names the first failure.
- The session's end (GOODBYE) closes the connection after the reply, and so ends the worker:
  a fresh session always gets a fresh process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from cricket_server.backends.base import CudaError
from cricket_server.checkpoints.workers import ForwardedCalls
from cricket_server.service import CricketService, operator_refusal
from rpc_spec import cricket_rpc as proto

log = logging.getLogger("cricket_server.workers")

T = TypeVar("T")

STICKY_ERRORS: dict[int, str] = {
    214: "CUDA_ERROR_ECC_UNCORRECTABLE",
    700: "CUDA_ERROR_ILLEGAL_ADDRESS",
    714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
    715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    716: "CUDA_ERROR_MISALIGNED_ADDRESS",
    717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    718: "CUDA_ERROR_INVALID_PC",
    719: "CUDA_ERROR_LAUNCH_FAILED",
}


class WorkerService(CricketService):
    """See the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sticky: dict[int, tuple[int, str]] = {}  # session id -> (code, first message)

    def sticky_error(self, session_id: int) -> int | None:
        """The sticky CUresult of that session, or None while it has none."""
        found = self._sticky.get(session_id)
        return found[0] if found is not None else None

    def _run(
        self, ctx: Any, call: str, fn: Callable[..., T], *args: Any, calls: int = 1
    ) -> tuple[int, T | None]:
        if self._sticky:  # else (the common case) nothing to look up before the call
            session = self._state(ctx).session
            if session is not None and not session.closed and session.id in self._sticky:
                code, first = self._sticky[session.id]
                session.last_error = (
                    f"{call}: {STICKY_ERRORS[code]} earlier in this session ({first}); its "
                    "CUDA state is unusable, end the session"
                )
                return code, None
        code, value = super()._run(ctx, call, fn, *args, calls=calls)
        if code in STICKY_ERRORS and (session := self._state(ctx).session) is not None:
            self._sticky[session.id] = (code, session.last_error)
            log.warning(
                "session %#x: %s is sticky: every later call of the session fails; the worker "
                "ends with it",
                session.id,
                STICKY_ERRORS[code],
            )
        return code, value

    forwarded: ForwardedCalls | None = None  # set by the worker: its control channel

    def CHECKPOINT_SERVER(self, ctx: Any, path: str, session_id: int) -> proto.checkpoint_result:
        """Every session lives in a worker of its own: the main process asks each worker for
        its part and commits the checkpoint (cricket_server.checkpoints.workers)."""
        refusal = operator_refusal(ctx)
        if refusal is not None:
            return refusal
        own = self._state(ctx).session
        if self.forwarded is None or (own is not None and session_id != own.id):
            return super().CHECKPOINT_SERVER(ctx, path, session_id)  # refuses another's
        try:
            path = self._checkpoint_path(path)
        except CudaError as e:
            return proto.checkpoint_result(e.code, e.message[: proto.MAX_NAME])
        code, text = self.forwarded.call(path, session_id)
        if code != 0:
            return proto.checkpoint_result(code, text[: proto.MAX_NAME])
        sessions, size, stored, calls = (int(x) for x in text.split())
        done = proto.checkpoint_done(
            sessions=sessions, bytes=size, stored_bytes=stored, calls=calls
        )
        return proto.checkpoint_result(0, done)

    def GOODBYE(self, ctx: Any) -> int:
        result = super().GOODBYE(ctx)
        ctx.connection.close()
        return result
