"""What checkpoint and restart (`cricket_server.checkpoints.sessions`) read and set of a
session besides its handles and memory: the context stack, the devices in use, a consistent
cut."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from cricket_server.resources import ContextRecord, HandleKind
from cricket_server.session_core import SessionCore


class SessionCheckpoint(SessionCore):
    """Checkpoint accessors."""

    def context_stack(self) -> list[int]:
        """The context stack, bottom first."""
        return list(self._stack)

    def set_context_state(self, initialized: bool, stack: Sequence[int]) -> None:
        """Install a restored context stack; primary contexts are found from the records."""
        self.initialized = initialized
        self._primary = {
            r.dev: r.handle
            for r in self.handles.of_kind(HandleKind.CONTEXT)
            if isinstance(r, ContextRecord) and r.primary
        }
        self._stack = list(stack)
        self._backend_dev = None
        self._sync_device()

    def devices_in_use(self) -> list[int]:
        """Devices this session has contexts on."""
        return sorted(
            {r.dev for r in self.handles.of_kind(HandleKind.CONTEXT) if isinstance(r, ContextRecord)}
        )

    def on_device(self, dev: int) -> contextlib.AbstractContextManager[None]:
        """Run a body with the backend on `dev`, then back on the current context's device."""
        return self._on_device(dev)

    def synchronize_all(self) -> None:
        """cuCtxSynchronize on every device of the session (a checkpoint's consistent cut)."""
        for dev in self.devices_in_use():
            with self._on_device(dev):
                self.bsession.synchronize()
