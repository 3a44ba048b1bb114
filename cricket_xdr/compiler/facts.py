"""The facts a .x file may state about a procedure or one of its arguments.

Facts are written in a comment that starts with ``@`` (rpcgen reads it as any comment):

    int CU_EVENT_RECORD(cu_handle /* @handle(event) */, cu_handle /* @handle(stream) */) = 122; /* @pipelined @replay */

A ``;`` in a facts comment ends the facts; free text may follow it. The generated module
carries them as ``cricket_xdr.stubs.Facts`` on each ``Procedure``.
"""

from __future__ import annotations

__all__ = ["ARGUMENT_FACTS", "HANDLE_KINDS", "PROCEDURE_FACTS", "REPLAY_CLASSES", "handle_kinds"]

# How a call counts for replay after a restore (exactly one per procedure of a version that
# states facts): counted and sent again; counted but changes nothing a checkpoint holds
# (reads, queries, synchronizations); not counted at all (session plumbing).
REPLAY_CLASSES = {
    "replay": "counted, and sent again after a restore that lacks it",
    "readonly": "counted, but changes nothing a checkpoint holds",
    "uncounted": "not counted for replay (session plumbing)",
}

PROCEDURE_FACTS = {
    "pipelined": "the client does not wait for the reply; the server may defer writing it",
    **REPLAY_CLASSES,
}

ARGUMENT_FACTS = {
    "view": "bulk data the server uses as a view of the call record (no copy)",
    "handle": "a handle of the kind named, as in @handle(stream); @handle(function, kernel): "
    "either kind",
}

# The kinds of handle an argument may hold (cricket_server.resources.HandleKind).
HANDLE_KINDS = (
    "context", "module", "function", "library", "kernel", "stream", "event", "array",
    "graph", "graph_exec", "graph_node", "memhandle", "mempool", "mipmap", "green_ctx",
)  # fmt: skip


def handle_kinds(arg: str | None) -> tuple[str, ...]:
    """The kinds an ``@handle(...)`` names, in order."""
    return tuple(k.strip() for k in (arg or "").split(",") if k.strip())
