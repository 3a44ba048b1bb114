"""The handle kinds rpc_spec/cricket.x states for each argument (``/* @handle(stream) */``) are
the kinds the server accepts there: a live handle of this session, but of another kind, is
refused in every such argument, and the message names both kinds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from behaviour_helpers import KERNELS, ROOT

import cricket_client
from cricket_client.datapath import DataPaths
from cricket_client.datapath.paths import Path as DataPath
from cricket_xdr.compiler import ir
from cricket_xdr.compiler.parser import parse
from rpc_spec import cricket_rpc as proto

INVALID_HANDLE = 400
INVALID_CONTEXT = 201
SPEC = Path(ROOT) / "rpc_spec" / "cricket.x"
TCP_BYTES = 64


def _procedures() -> list[ir.ProcedureDef]:
    spec = parse(SPEC.read_text(), str(SPEC))
    program = next(d for d in spec.definitions if isinstance(d, ir.ProgramDef))
    return program.versions[0].procedures


# (procedure, argument index, the kinds stated for it), one per @handle argument
CASES = [
    (p, i, proto.CRICKET_V1_Server.PROCEDURES[int(p.number.text)].facts.handles[n][1])
    for p in _procedures()
    for n, (i, _kinds) in enumerate(
        proto.CRICKET_V1_Server.PROCEDURES[int(p.number.text)].facts.handles
    )
]


def _ok(reply: Any) -> Any:
    assert reply.err == 0, reply
    return reply.value


@pytest.fixture
def handles(session: cricket_client.Connection) -> dict[str, int]:
    """A live handle of every kind, made by this session."""
    stub = session._stub
    image = (KERNELS / "test_kernels.sm_90.cubin").read_bytes()
    module = _ok(stub.CU_MODULE_LOAD_DATA(image, [])).handle
    library = _ok(stub.CU_LIBRARY_LOAD_DATA(image, [], [])).handle
    graph = _ok(stub.CU_GRAPH_CREATE(0))
    node = _ok(stub.CU_GRAPH_ADD_NODE(graph, [], proto.graph_node_params(5)))
    sms = _ok(stub.CU_DEVICE_GET_DEV_RESOURCE(0, 1))
    return {
        "context": _ok(stub.CU_CTX_GET_CURRENT()),
        "module": module,
        "function": _ok(stub.CU_MODULE_GET_FUNCTION(module, "vector_add")),
        "library": library,
        "kernel": _ok(stub.CU_LIBRARY_GET_KERNEL(library, "vector_add")),
        "stream": _ok(stub.CU_STREAM_CREATE(0)),
        "event": _ok(stub.CU_EVENT_CREATE(0)),
        "graph": graph,
        "graph_node": node,
        "graph_exec": _ok(stub.CU_GRAPH_INSTANTIATE(graph, 0)).exec,
        "memhandle": _ok(stub.CU_MEM_CREATE(2 << 20, _device_prop(), 0)),
        "mempool": _ok(stub.CU_DEVICE_GET_DEFAULT_MEM_POOL(0)),
        "mipmap": _ok(stub.MIPMAP_CREATE(proto.array_desc(8, 8, 0, 0x20, 1, 0), 2)),
        "green_ctx": _ok(stub.CU_GREEN_CTX_CREATE([sms], 0, 1)),  # CU_GREEN_CTX_DEFAULT_STREAM
    }


def _device_prop() -> Any:
    """CUmemAllocationProp of pinned memory on device 0."""
    return proto.mem_alloc_prop(1, proto.mem_location(1, 0), 0, 0, 0, 0)


@pytest.fixture
def data_paths(session: cricket_client.Connection) -> Iterator[DataPaths]:
    """The shared segment and the data channels set up (the DATA_* copies check them before
    their stream)."""
    paths = DataPaths(session)
    try:
        paths._ready(DataPath.SHM)
        paths._ready(DataPath.TCP)
        yield paths
    finally:
        paths.close()


def _plain_value(proc: ir.ProcedureDef, index: int, ptr: int, channels: int) -> Any:
    """A harmless value for an argument that holds no handle (asynchronous copies: the
    stream is used)."""
    if proc.name.startswith("DATA_TCP_") and index in (1, 2):  # size, channels
        return TCP_BYTES if index == 1 else channels
    arg = proc.args[index]
    name = arg.type.name if arg.type is not None else "string"
    return {
        "cu_ptr": ptr, "mem_data": b"", "name_str": "vector_add", "option_list": [],
        "attribute_list": [], "device_attribute_list": [], "string": "", "bool": True,
        "cluster_config": proto.cluster_config(1, 1, 1, 32, 1, 1, 0, []),
        "graph_node_list": [], "graph_node_params": proto.graph_node_params(5),
        "graph_memcpy_params": proto.graph_memcpy_params(False, ptr, False, ptr, 16),
        "stream_mem_op_list": [], "launch_attribute": proto.launch_attribute(8, 0, 0, 0),
    }.get(name, 0)


@pytest.mark.parametrize(
    ("proc", "index", "kinds"), CASES, ids=[f"{p.name}-{i}" for p, i, _k in CASES]
)
def test_a_handle_of_another_kind_is_refused(
    session: cricket_client.Connection, handles: dict[str, int], data_paths: DataPaths,
    proc: ir.ProcedureDef, index: int, kinds: tuple[str, ...],
) -> None:
    stub = session._stub
    ptr = _ok(stub.CU_MEM_ALLOC(256))
    stated = dict(proto.CRICKET_V1_Server.PROCEDURES[int(proc.number.text)].facts.handles)
    wrong = next(k for k in handles if k not in kinds)
    args = [
        handles[wrong] if j == index
        else handles[stated[j][0]] if j in stated
        else _plain_value(proc, j, ptr, data_paths.channel_count)
        for j in range(len(proc.args))
    ]
    sent: list[Any] = []
    if proc.name == "DATA_TCP_HTOD":  # the server takes the bytes first, then checks
        assert data_paths._channels is not None
        sent = data_paths._channels.start_send(memoryview(bytes(TCP_BYTES)))
    reply = getattr(stub, proc.name)(*args)
    for future in sent:
        future.result(timeout=60)
    err = reply if isinstance(reply, int) else reply.err
    message = stub.GET_ERROR_MESSAGE()
    assert err == (INVALID_CONTEXT if kinds == ("context",) else INVALID_HANDLE), message
    article = "an" if wrong[0] in "aeiou" else "a"
    assert f"is {article} {wrong} handle, not a {kinds[0]} handle" in message
