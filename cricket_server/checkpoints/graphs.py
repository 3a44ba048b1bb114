"""CUDA graphs in checkpoints: what a session image keeps of its graphs and execs, and how a
restore builds them again with the same handles.

A node's parameters are kept as the XDR of cricket.x's `graph_node_params` (the same value the
client sent); an exec keeps the nodes it was made from (updates included) and is instantiated
again from them. Restore after modules, events and allocations, which the nodes refer to.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from checkpoint.format import CheckpointError
from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.graphs import (
    CUDA_ERROR_ILLEGAL_STATE,
    GraphExecRecord,
    GraphNodeRecord,
    GraphRecord,
)
from cricket_server.resources import HandleKind
from rpc_spec import checkpoint_rpc as ck
from rpc_spec import cricket_rpc as proto

if TYPE_CHECKING:
    from cricket_server.session import Session

__all__ = ["graph_images", "exec_images", "restore_graphs", "graph_handles"]


def _node_image(node: GraphNodeRecord) -> ck.graph_node_image:
    return ck.graph_node_image(
        handle=node.handle, dependencies=list(node.deps), params=node.params.encode(),
        origin=node.origin,
        attributes=[
            ck.node_attribute_image(id=a, x=x, y=y, z=z) for a, (x, y, z) in sorted(node.attrs.items())
        ],
    )


def graph_images(session: Session) -> list[ck.graph_image]:
    """The session's graphs; refused while a stream captures (a capture's state is the
    stream's, which a checkpoint does not keep)."""
    captures = session.__dict__.get("_captures")
    if captures:
        stream = next(iter(captures))
        raise CudaError(
            CUDA_ERROR_ILLEGAL_STATE,
            f"checkpoint: session {session.id:#x} is capturing stream {stream:#x} into a "
            "graph; end the capture (cuStreamEndCapture) before checkpointing",
        )
    out = []
    for record in session.handles.records():
        if isinstance(record, GraphRecord):
            nodes = [
                session.handles.get("checkpoint", HandleKind.GRAPH_NODE, h, GraphNodeRecord)
                for h in record.nodes
            ]
            out.append(
                ck.graph_image(
                    handle=record.handle,
                    ctx=record.ctx,
                    flags=record.flags,
                    nodes=[_node_image(n) for n in nodes],
                )
            )
    return out


def exec_images(session: Session) -> list[ck.graph_exec_image]:
    return [
        ck.graph_exec_image(
            handle=r.handle, ctx=r.ctx, flags=r.flags, nodes=[_node_image(n) for n in r.nodes],
            disabled=sorted(r.disabled),
        )
        for r in session.handles.records()
        if isinstance(r, GraphExecRecord)
    ]


def _nodes(
    path: str, owner: int, images: list[ck.graph_node_image], ctx: int
) -> list[GraphNodeRecord]:
    nodes = []
    for n in images:
        try:
            params = proto.graph_node_params.decode(bytes(n.params))
        except Exception as e:  # untrusted input: any decoding failure names the node
            raise CheckpointError(
                path, f"graph {owner:#x} node {n.handle:#x}: parameters do not decode: {e}"
            ) from None
        nodes.append(
            GraphNodeRecord(
                handle=n.handle, ctx=ctx, graph=owner, params=params, deps=list(n.dependencies),
                origin=n.origin, attrs={a.id: (a.x, a.y, a.z) for a in n.attributes},
            )
        )
    return nodes


def restore_graphs(
    session: Session,
    path: str,
    graphs: list[ck.graph_image],
    execs: list[ck.graph_exec_image],
    devs: dict[int, int],
) -> None:
    """Add every graph and its nodes, then instantiate every exec again (same handles)."""
    for g in graphs:
        record = session.handles.add_with_handle(g.handle, GraphRecord, ctx=g.ctx, flags=g.flags)
        for node in _nodes(path, g.handle, g.nodes, g.ctx):
            session.handles.add_with_handle(
                node.handle, GraphNodeRecord, ctx=node.ctx, graph=g.handle,
                params=node.params, deps=node.deps, origin=node.origin, attrs=node.attrs,
            )
            record.nodes.append(node.handle)
    for e in execs:
        nodes = _nodes(path, e.handle, e.nodes, e.ctx)
        try:
            with session.on_device(devs.get(e.ctx, 0)):
                obj, host = session.instantiate_nodes("restore: cuGraphInstantiate", nodes)
                for key in e.disabled:
                    if key not in {n.handle for n in nodes}:
                        raise CudaError(
                            CUDA_ERROR_INVALID_VALUE, f"disabled node {key:#x} is none of its nodes"
                        )
                    session.bsession.graph_exec_set_enabled(obj, key, False)
        except CudaError as err:
            raise CheckpointError(
                path, f"graph exec {e.handle:#x} cannot be instantiated again: {err.message}"
            ) from None
        session.handles.add_with_handle(
            e.handle, GraphExecRecord, ctx=e.ctx, obj=obj, flags=e.flags, nodes=nodes,
            host_copies=host, disabled=set(e.disabled),
        )
    session.adopt_graph_nodes()  # memory and conditional nodes' bookkeeping


def graph_handles(s: ck.session_image) -> Iterator[int]:
    """Every handle the graphs and execs of a session image hold (nodes of execs are the
    graphs' nodes, not handles of their own)."""
    for g in s.graphs:
        yield g.handle
        yield from (n.handle for n in g.nodes)
    for e in s.graph_execs:
        yield e.handle
