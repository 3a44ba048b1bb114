"""Facts about procedures (``/* @pipelined @replay */``, ``/* @view */``, ``/* @handle(k) */``):
the compiler reads and checks them, the generated module carries them, and client and server
take them from there (they once found "pipelined" in the spec with regular expressions and
kept the replay classes in hand-written lists)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_compiler_generated import load_generated

from cricket_client import facts
from cricket_server.service import CricketService
from cricket_xdr.compiler import ir
from cricket_xdr.compiler.driver import compile_source
from cricket_xdr.compiler.errors import XdrgenError
from cricket_xdr.compiler.parser import parse
from cricket_xdr.stubs import Facts
from rpc_spec import cricket_rpc as proto

# What the client and the server used before the facts (regular expressions over comments
# and hand-kept lists), which the facts of rpc_spec/cricket.x must give again.
PIPELINED_BEFORE = {
    "CU_MEMCPY_HTOD_ASYNC", "CU_MEMCPY_DTOD_ASYNC", "CU_MEMSET_ASYNC", "CU_MEM_FREE_ASYNC",
    "CU_LAUNCH_KERNEL", "CU_LAUNCH_COOPERATIVE_KERNEL", "CU_LAUNCH_KERNEL_BATCH",
    "CU_STREAM_WAIT_EVENT",
    "CU_EVENT_RECORD", "RT_MEMCPY_2D_HTOD", "RT_MEMCPY_2D_DTOD", "RT_MEMSET_2D",
    "CU_GRAPH_LAUNCH", "CU_STREAM_CAPTURE_HOST_COPY",  # CUDA graphs
}
UNCOUNTED_BEFORE = {
    "HELLO", "GOODBYE", "GET_ERROR_MESSAGE", "CHECKPOINT_SESSION", "CHECKPOINT_SERVER",
    "SESSION_CALLS",
}
READ_ONLY_BEFORE = {
    "CU_DRIVER_GET_VERSION", "CU_DEVICE_GET_COUNT", "CU_DEVICE_GET", "CU_DEVICE_GET_NAME",
    "CU_DEVICE_GET_ATTRIBUTE", "CU_DEVICE_TOTAL_MEM", "CU_DEVICE_GET_UUID",
    "CU_DEVICE_GET_PCI_BUS_ID", "CU_DEVICE_PRIMARY_CTX_GET_STATE", "CU_CTX_GET_CURRENT",
    "CU_CTX_SYNCHRONIZE", "CU_CTX_GET_DEVICE", "CU_CTX_GET_LIMIT",
    "CU_CTX_GET_STREAM_PRIORITY_RANGE", "CU_MEM_GET_INFO", "CU_MEM_GET_ADDRESS_RANGE",
    "CU_MEMCPY_DTOH", "CU_MEMCPY_DTOH_ASYNC", "CU_POINTER_GET_ATTRIBUTES",
    "CU_FUNC_GET_ATTRIBUTE", "CU_FUNC_GET_PARAM_INFO", "CU_STREAM_SYNCHRONIZE",
    "CU_STREAM_QUERY", "CU_EVENT_SYNCHRONIZE", "CU_EVENT_QUERY", "CU_EVENT_ELAPSED_TIME",
    "CU_OCCUPANCY_MAX_ACTIVE_BLOCKS_PER_MULTIPROCESSOR", "CU_OCCUPANCY_MAX_POTENTIAL_BLOCK_SIZE",
    "RT_DEVICE_GET_PROPERTIES", "RT_MEMCPY_2D_DTOH", "DATA_SHM_DTOH", "DATA_TCP_DTOH",
    "ARRAY_GET_DESCRIPTOR", "MEMCPY_3D_TO_HOST", "TEX_OBJECT_GET_DESCS",
    "SURF_OBJECT_GET_RESOURCE_DESC",
    # CUDA graphs
    "CU_GRAPH_GET_NODES", "CU_GRAPH_GET_ROOT_NODES", "CU_GRAPH_GET_EDGES",
    "CU_GRAPH_NODE_GET_TYPE", "CU_GRAPH_NODE_GET_DEPENDENCIES", "CU_GRAPH_NODE_GET_PARAMS",
    "CU_STREAM_GET_CAPTURE_INFO",
}
# flags, attributes, launch variants; several devices (procedures 560-599)
PIPELINED_BEFORE |= {"CU_LAUNCH_KERNEL_EX", "CU_MEMCPY_PEER_ASYNC"}
READ_ONLY_BEFORE |= {
    "CU_CTX_GET_FLAGS", "CU_CTX_GET_CACHE_CONFIG", "CU_OCCUPANCY_AVAILABLE_DYNAMIC_SMEM_PER_BLOCK",
    "CU_OCCUPANCY_MAX_ACTIVE_CLUSTERS", "CU_OCCUPANCY_MAX_POTENTIAL_CLUSTER_SIZE",
    "CU_STREAM_GET_PRIORITY", "CU_STREAM_GET_FLAGS",
    "CU_STREAM_GET_ATTRIBUTE", "CU_DEVICE_CAN_ACCESS_PEER", "CU_DEVICE_GET_P2P_ATTRIBUTE",
}  # fmt: skip
# Read-only procedures added since: virtual memory management and memory pools.
READ_ONLY_VMM_POOLS = {
    "CU_MEM_GET_ALLOCATION_GRANULARITY", "CU_MEM_GET_ACCESS",
    "CU_MEM_GET_ALLOCATION_PROPERTIES_FROM_HANDLE", "CU_MEM_POOL_GET_ATTRIBUTE",
}
READ_ONLY_BINDING_TESTS = {
    "CU_FUNC_GET_NAME", "CU_KERNEL_GET_NAME", "CU_GRAPH_GET_ID", "CU_GRAPH_EXEC_GET_ID",
    "CU_GRAPH_NODE_GET_LOCAL_ID", "CU_GRAPH_NODE_GET_TOOLS_ID", "CU_GRAPH_NODE_GET_CONTAINING_GRAPH",
}  # fmt: skip
READ_ONLY_LINK = {"CU_LINK"}  # a link makes no server state: nothing to replay
READ_ONLY_RESOURCES = {  # mipmapped and sparse arrays; device resources and green contexts
    "MIPMAP_GET_LEVEL", "MIPMAP_GET_SPARSE_PROPERTIES", "ARRAY_GET_SPARSE_PROPERTIES",
    "MIPMAP_GET_MEMORY_REQUIREMENTS", "ARRAY_GET_MEMORY_REQUIREMENTS", "MIPMAP_GET_DESCRIPTOR",
    "CU_DEVICE_GET_DEV_RESOURCE", "CU_DEV_SM_RESOURCE_SPLIT_BY_COUNT",
    "CU_GREEN_CTX_GET_DEV_RESOURCE", "CU_CTX_FROM_GREEN_CTX", "CU_CTX_GET_DEV_RESOURCE",
    "CU_STREAM_GET_GREEN_CTX",
}  # fmt: skip
# a refusal the client reports for a capture: it changes nothing a checkpoint holds
READ_ONLY_CAPTURE = {"CU_STREAM_CAPTURE_PROHIBIT"}
READ_ONLY_GRAPH_NODES = {"CU_DEVICE_GET_GRAPH_MEM_ATTRIBUTE"}
READ_ONLY_GRAPH_ACCESS = {  # procedures 800-839
    "CU_GRAPH_EXEC_GET_FLAGS", "CU_GRAPH_UPLOAD", "CU_GRAPH_NODE_GET_ENABLED",
    "CU_GRAPH_DEBUG_DOT", "CU_GRAPH_NODE_FIND_IN_CLONE",
}
READ_ONLY_GRAPH_ACCESS |= {"CU_GRAPH_KERNEL_NODE_GET_ATTRIBUTE"}  # procedures 860-869
# profiling ranges (870-879) and persisting L2 lines (880-889): no session state to replay
READ_ONLY_GRAPH_ACCESS |= {"CU_PROFILER_START", "CU_PROFILER_STOP", "CU_CTX_RESET_PERSISTING_L2_CACHE"}
# a stream's resources, structured SM splits, tensor maps (940-979): values, no session state
READ_ONLY_GRAPH_ACCESS |= {
    "CU_STREAM_GET_DEV_RESOURCE", "CU_DEV_SM_RESOURCE_SPLIT", "CU_TENSOR_MAP_ENCODE_IM2COL_WIDE",
    "CU_TENSOR_MAP_SET_ALLOCATION_CLASS",
}
# small module, context, stream and memory calls (procedures 720-779)
PIPELINED_BEFORE |= {"CU_MEMSET_D2D", "CU_STREAM_BATCH_MEM_OP"}
PIPELINED_BEFORE |= {"CU_GRAPH_LAUNCH_BATCH"}  # gathered graph launches (418)
READ_ONLY_TAIL = {
    "CU_KERNEL_GET_LIBRARY", "CU_FUNC_GET_MODULE", "CU_FUNC_IS_LOADED", "CU_FUNC_LOAD",
    "CU_MODULE_GET_LOADING_MODE", "CU_CTX_GET_API_VERSION", "CU_CTX_GET_ID", "CU_STREAM_GET_CTX",
    "CU_STREAM_GET_ID", "CU_STREAM_GET_DEVICE", "CU_DEVICE_GET_TEXTURE_1D_LINEAR_MAX_WIDTH",
    "CU_CTX_GET_SHARED_MEM_CONFIG", "CU_CTX_GET_DEVICE_V2", "CU_CTX_SYNCHRONIZE_V2",
    "CU_TENSOR_MAP_ENCODE", "CU_TENSOR_MAP_REPLACE_ADDRESS",
}  # fmt: skip
# device facts, array planes, library unified functions (procedures 900-939)
READ_ONLY_TAIL |= {
    "CU_DEVICE_GET_LUID", "CU_DEVICE_GET_HOST_ATOMIC_CAPABILITIES",
    "CU_DEVICE_GET_P2P_ATOMIC_CAPABILITIES", "CU_DEVICE_GET_EXEC_AFFINITY_SUPPORT",
    "CU_CTX_GET_EXEC_AFFINITY", "CU_DEVICE_GET_FABRIC_CLUSTER_UUID", "CU_DEVICE_GET_CLIQUE_COUNT",
    "CU_DEVICE_GET_CLIQUE_INFO", "CU_GREEN_CTX_GET_ID", "CU_ARRAY_GET_PLANE",
    "CU_LIBRARY_GET_UNIFIED_FUNCTION",
}  # fmt: skip
PROCEDURES = proto.CRICKET_V1_Server.PROCEDURES
SPEC_PATH = Path(__file__).parents[2] / "rpc_spec" / "cricket.x"


def test_the_spec_gives_the_pipelined_set_client_and_server_used() -> None:
    assert facts.pipelined() == PIPELINED_BEFORE
    assert {
        int(getattr(proto, name)) for name in PIPELINED_BEFORE
    } == CricketService.DEFERRED_REPLIES


def test_the_spec_gives_the_replay_lists_the_client_kept() -> None:
    assert facts.uncounted() == UNCOUNTED_BEFORE
    assert facts.read_only() == (
        READ_ONLY_BEFORE | READ_ONLY_VMM_POOLS | READ_ONLY_BINDING_TESTS | READ_ONLY_LINK
        | READ_ONLY_RESOURCES | READ_ONLY_CAPTURE | READ_ONLY_GRAPH_NODES | READ_ONLY_TAIL
        | READ_ONLY_GRAPH_ACCESS
    )
    stated = {p.name: p.facts.replay for p in PROCEDURES.values()}
    assert set(stated.values()) == {"replay", "readonly", "uncounted"}  # every one states one


def test_the_spec_gives_the_view_arguments_the_service_listed() -> None:
    assert {
        proto.CU_MEMCPY_HTOD, proto.CU_MEMCPY_HTOD_ASYNC, proto.CU_GRAPH_LAUNCH,
        proto.CU_GRAPH_LAUNCH_SYNC,
    } == CricketService.VIEW_ARGS
    assert PROCEDURES[proto.CU_MEMCPY_HTOD_ASYNC].facts.views == (1,)


def test_handle_kinds_of_arguments() -> None:
    assert PROCEDURES[proto.CU_EVENT_RECORD].facts.handles == ((0, ("event",)), (1, ("stream",)))
    assert PROCEDURES[proto.CU_FUNC_GET_ATTRIBUTE].facts.handles == ((1, ("function", "kernel")),)
    # every cu_handle argument of the program names its kind
    spec = parse(SPEC_PATH.read_text(), str(SPEC_PATH))
    program = next(d for d in spec.definitions if isinstance(d, ir.ProgramDef))
    for p in program.versions[0].procedures:
        held = {i for i, _kinds in PROCEDURES[int(getattr(proto, p.name))].facts.handles}
        for i, arg in enumerate(p.args):
            if arg.type is not None and arg.type.name == "cu_handle":
                assert i in held, f"{p.name}: argument {i} holds a handle of no stated kind"


SPEC = """\
typedef opaque blob<>;
typedef unsigned hyper handle;
program P {
    version V {
        int PUT(unsigned hyper, blob /* @view */, handle /* @handle(stream) */) = 1; /* @pipelined @replay; dst, data, stream */
        int GET(handle /* @handle(function, kernel) */) = 2; /* @readonly */
        int BYE(void) = 3; /* @uncounted */
    } = 1;
} = 0x20000001;
"""


def test_generated_module_carries_the_facts(tmp_path: Path) -> None:
    src = tmp_path / "facts.x"
    src.write_text(SPEC)
    mod = load_generated(src, tmp_path, "facts_rpc")
    procs = mod.V_Server.PROCEDURES
    assert procs[1].facts == Facts(pipelined=True, replay="replay", views=(1,),
                                   handles=((2, ("stream",)),))
    assert procs[2].facts == Facts(replay="readonly", handles=((0, ("function", "kernel")),))
    assert procs[3].facts == Facts(replay="uncounted") and not procs[3].facts.counted


def test_a_spec_without_facts_states_none() -> None:
    text = compile_source("program P { version V { int A(int) = 1; } = 1; } = 1;\n", "t.x")
    assert "_Facts" not in text


PROC = "program P {\n version V {\n"
END = " } = 1;\n} = 1;\n"
ERRORS = [
    # (id, source, line, column, message fragment)
    ("misspelled fact", PROC + "  int A(int) = 1; /* @pipelind @replay */\n" + END, 3, 22,
     "unknown fact '@pipelind' of procedure A (did you mean '@pipelined'?)"),
    ("misspelled replay class", PROC + "  int A(int) = 1; /* @readonyl */\n" + END, 3, 22,
     "unknown fact '@readonyl' of procedure A (did you mean '@readonly'?)"),
    ("unknown argument fact", PROC + "  int A(int /* @viw */) = 1; /* @replay */\n" + END, 3, 16,
     "unknown fact '@viw' of argument 1 of A (did you mean '@view'?)"),
    ("argument fact on a procedure", PROC + "  int A(int) = 1; /* @replay @view */\n" + END, 3, 30,
     "fact '@view' belongs on an argument, not on procedure A"),
    ("procedure fact on an argument", PROC + "  int A(int /* @pipelined */) = 1; /* @replay */\n"
     + END, 3, 16, "fact '@pipelined' belongs on a procedure, not on argument 1 of A"),
    ("unknown handle kind", PROC + "  int A(unsigned hyper /* @handle(strem) */) = 1; /* @replay */\n"
     + END, 3, 27, "fact '@handle' of argument 1 of A names kind 'strem'"),
    ("handle without kind", PROC + "  int A(int /* @handle */) = 1; /* @replay */\n" + END, 3, 16,
     "names no kind"),
    ("handle of a non-integer", "struct s { int x; };\n" + PROC
     + "  int A(s /* @handle(event) */) = 1; /* @replay */\n" + END, 4, 14,
     "fact '@handle' needs an integer; argument 1 of A is not one"),
    ("view of a non-opaque", PROC + "  int A(int /* @view */) = 1; /* @replay */\n" + END, 3, 16,
     "fact '@view' needs opaque data; argument 1 of A is not opaque"),
    ("contradicting replay classes", PROC + "  int A(int) = 1; /* @replay @readonly */\n" + END,
     3, 30, "procedure A is already '@replay' (at 3:22); '@readonly' contradicts it"),
    ("repeated fact", PROC + "  int A(int) = 1; /* @replay @pipelined @pipelined */\n" + END,
     3, 41, "fact '@pipelined' of procedure A is stated twice (first at 3:30)"),
    ("no replay class", PROC + "  int A(int) = 1; /* @replay */\n  int B(int) = 2;\n" + END, 4, 7,
     "procedure B states no replay class (version V states facts)"),
    ("text that is not a fact", PROC + "  int A(int) = 1; /* @replay stream */\n" + END, 3, 30,
     "expected a fact like '@pipelined' in the facts of procedure A, found 'stream'"),
    ("fact with an argument it does not take", PROC + "  int A(int) = 1; /* @replay(yes) */\n"
     + END, 3, 22, "fact '@replay' of procedure A takes no argument"),
    ("facts on the next line", PROC + "  int A(int) = 1;\n  /* @replay */\n" + END, 4, 6,
     "the facts of A must follow it on the same line"),
    ("facts on a struct field", "struct s {\n    int a; /* @view */\n};\n", 2, 12,
     "facts comment '/* @view */' here: facts follow a procedure"),
    ("facts on a second line of the comment", PROC
     + "  int A(int) = 1; /* @replay\n     @pipelind */\n" + END, 4, 6, "unknown fact '@pipelind'"),
]


@pytest.mark.parametrize(("source", "line", "column", "message"),
                         [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_a_wrong_fact_is_an_error_at_its_line_and_column(
    source: str, line: int, column: int, message: str
) -> None:
    with pytest.raises(XdrgenError) as info:
        compile_source(source, "spec/t.x")
    found = [d for d in info.value.diagnostics if message in d.message]
    assert found, str(info.value)
    assert str(found[0]).startswith(f"spec/t.x:{line}:{column}: error: "), str(found[0])


def test_plain_comments_are_not_facts() -> None:
    text = compile_source(PROC + "  int A(int /* a count */) = 1; /* A: @ is not first */\n"
                          + END, "t.x")
    assert "_Facts" not in text
