"""Whose checkpoint a client may replace: a tenant writes only where nothing is, or over a
checkpoint of its own session.

The checkpoint root is shared by every client of a server, so without this a client could
name another client's checkpoint and replace it (CHECKPOINT_SESSION renames its new directory
over an existing one). The operator's CHECKPOINT_SERVER is not held to it.
"""

from __future__ import annotations

import os

from checkpoint.format import CheckpointError
from checkpoint.reader import Checkpoint
from cricket_server.backends.base import CUDA_ERROR_NOT_PERMITTED, CudaError


def check_own_target(path: str, session_id: int) -> None:
    """CudaError (CUDA_ERROR_NOT_PERMITTED) when `path` exists and is not a checkpoint of
    session `session_id` alone."""
    if not os.path.lexists(path):
        return
    try:
        sessions = {s.session_id for s in Checkpoint.open(path).manifest.sessions}
    except CheckpointError:
        raise CudaError(
            CUDA_ERROR_NOT_PERMITTED,
            f"checkpoint: {path!r} exists and is no checkpoint; name a new directory",
        ) from None
    if sessions != {session_id}:
        raise CudaError(
            CUDA_ERROR_NOT_PERMITTED,
            f"checkpoint: {path!r} holds the checkpoint of other sessions; a session replaces "
            "only its own checkpoint",
        )
