"""The linker calls of a session: a client's whole link (cuLinkCreate ... cuLinkComplete) in one
call, run by the backend in the current context. It makes no handle and keeps nothing: the
linked image goes back to the client, which loads it as any other module image."""

from __future__ import annotations

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.session_core import SessionCore


class SessionLink(SessionCore):
    """cuLinkComplete's work (CU_LINK)."""

    def link(
        self, inputs: list[tuple[int, str, bytes]], jit_options: dict[int, int]
    ) -> tuple[bytes, str]:
        call = "cuLinkComplete"
        self.current(call)
        if not inputs:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: nothing was added to the link")
        return self.bsession.link(inputs, jit_options)
