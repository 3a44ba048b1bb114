"""What rpc_spec/cricket.x states about each CRICKET_V1 procedure (its ``/* @... */`` facts),
read from the generated module on first use (importing it costs start-up time)."""

from __future__ import annotations

import functools

from cricket_xdr.stubs import Facts

__all__ = ["pipelined", "procedure_facts", "read_only", "uncounted"]


@functools.cache
def procedure_facts() -> dict[str, Facts]:
    """Procedure name -> its facts."""
    from rpc_spec import cricket_rpc as proto

    return {p.name: p.facts for p in proto.CRICKET_V1_Server.PROCEDURES.values()}


@functools.cache
def pipelined() -> frozenset[str]:
    """Procedures sent without waiting for their reply (``@pipelined``)."""
    return frozenset(n for n, f in procedure_facts().items() if f.pipelined)


@functools.cache
def uncounted() -> frozenset[str]:
    """Procedures that do not count for replay (``@uncounted``: session plumbing)."""
    return frozenset(n for n, f in procedure_facts().items() if not f.counted)


@functools.cache
def read_only() -> frozenset[str]:
    """Counted procedures that change nothing a checkpoint holds (``@readonly``)."""
    return frozenset(n for n, f in procedure_facts().items() if f.replay == "readonly")
