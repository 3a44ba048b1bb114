"""Every procedure of rpc_spec/cricket.x is served end to end: a handler in `CricketService`, a
client that calls it, and the backend methods its handler needs in both backends.

`BACKEND_NEEDS` below is the declared table (docs/internals.md, "Adding a CUDA call"): per
procedure, the `Backend`/`BackendSession` methods its handler reaches. The test fails when the
table and the .x disagree (a new procedure needs a row), when a row misses a backend method
the handler's code visibly calls, and when a backend neither implements a needed method nor
inherits a documented default of the base (e.g. one answering CUDA_ERROR_NOT_SUPPORTED).
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from cricket_server.backends.base import Backend, BackendSession
from cricket_server.backends.cuda.backend import CudaBackend
from cricket_server.backends.cuda.session import CudaSession
from cricket_server.backends.sim.backend import SimBackend, SimSession
from cricket_server.service import CricketService
from cricket_server.session import Session
from cricket_xdr.compiler.driver import compile_file
from rpc_spec import cricket_rpc as proto

ROOT = Path(__file__).resolve().parents[2]
# Where clients live: the client library, and the operator's tools (cricket-checkpoint).
CLIENT_SOURCES = ("cricket_client", "checkpoint")

# Procedure -> the backend methods its handler needs (besides the session's own bookkeeping).
BACKEND_NEEDS: dict[str, tuple[str, ...]] = {
    "HELLO": ("open_session",),
    "GOODBYE": ("close", "set_device", "synchronize", "vmm_release", "vmm_unmap"),
    "GET_ERROR_MESSAGE": (),
    "CU_INIT": (),
    "CU_DRIVER_GET_VERSION": ("driver_version",),
    "CU_DEVICE_GET_COUNT": ("device_count",),
    "CU_DEVICE_GET": ("device_count",),
    "CU_DEVICE_GET_NAME": ("device_count", "device_name"),
    "CU_DEVICE_GET_ATTRIBUTE": ("device_attribute", "device_count"),
    "CU_DEVICE_TOTAL_MEM": ("device_count", "device_total_mem"),
    "CU_DEVICE_GET_UUID": ("device_count", "device_uuid"),
    "CU_DEVICE_GET_PCI_BUS_ID": ("device_count", "device_pci_bus_id"),
    "CU_DEVICE_PRIMARY_CTX_RETAIN": ("device_count",),
    "CU_DEVICE_PRIMARY_CTX_RELEASE": ("device_count", "set_device"),
    "CU_DEVICE_PRIMARY_CTX_RESET": ("device_count", "disable_peer_access", "set_device"),
    "CU_DEVICE_PRIMARY_CTX_GET_STATE": ("device_count",),
    "CU_DEVICE_PRIMARY_CTX_SET_FLAGS": ("device_count",),
    "CU_CTX_CREATE": ("device_count", "set_device"),
    "CU_CTX_DESTROY": ("set_device",),
    "CU_CTX_SET_CURRENT": ("set_device",),
    "CU_CTX_GET_CURRENT": (),
    "CU_CTX_PUSH_CURRENT": ("set_device",),
    "CU_CTX_POP_CURRENT": ("set_device",),
    "CU_CTX_SYNCHRONIZE": ("synchronize",),
    "CU_CTX_GET_DEVICE": (),
    "CU_CTX_GET_LIMIT": ("get_limit",),
    "CU_CTX_SET_LIMIT": ("set_limit",),
    "CU_CTX_GET_STREAM_PRIORITY_RANGE": ("stream_priority_range",),
    "CU_MEM_ALLOC": ("chunk_backing",),
    "CU_MEM_ALLOC_PITCH": ("chunk_backing",),
    "CU_MEM_FREE": ("set_device", "synchronize"),
    "CU_MEM_GET_INFO": ("mem_get_info",),
    "CU_MEM_GET_ADDRESS_RANGE": (),
    "CU_MEMCPY_HTOD": ("memcpy_htod",),
    "CU_MEMCPY_DTOH": ("memcpy_dtoh",),
    "CU_MEMCPY_DTOD": ("memcpy_dtod",),
    "CU_MEMCPY_HTOD_ASYNC": ("memcpy_htod",),
    "CU_MEMCPY_DTOH_ASYNC": ("memcpy_dtoh",),
    "CU_MEMCPY_DTOD_ASYNC": ("memcpy_dtod",),
    "CU_MEMSET": ("memset",),
    "CU_MEMSET_ASYNC": ("memset",),
    "CU_MEM_ALLOC_ASYNC": ("chunk_backing", "device_count", "event_query", "event_synchronize", "event_destroy", "set_device"),
    "CU_MEM_FREE_ASYNC": ("event_create", "event_record", "event_destroy", "set_device"),
    "CU_POINTER_GET_ATTRIBUTES": (),
    "CU_MODULE_LOAD_DATA": ("module_load",),
    "CU_MODULE_LOAD_FAT_BINARY": ("module_load",),
    "CU_MODULE_UNLOAD": ("module_unload",),
    "CU_MODULE_GET_FUNCTION": ("module_get_function",),
    "CU_MODULE_GET_GLOBAL": ("module_get_global",),
    "CU_LIBRARY_LOAD_DATA": ("library_load",),
    "CU_LIBRARY_UNLOAD": ("library_unload",),
    "CU_LIBRARY_GET_KERNEL": ("library_get_kernel",),
    "CU_KERNEL_GET_FUNCTION": ("kernel_get_function",),
    "CU_FUNC_GET_ATTRIBUTE": ("func_get_attribute", "kernel_get_function"),
    "CU_FUNC_SET_ATTRIBUTE": ("func_set_attribute", "kernel_get_function"),
    "CU_FUNC_SET_CACHE_CONFIG": ("func_set_cache_config", "kernel_get_function"),
    "CU_FUNC_GET_PARAM_INFO": ("func_param_info", "kernel_get_function"),
    "CU_LAUNCH_KERNEL": ("func_param_info", "kernel_get_function", "launch"),
    "CU_LAUNCH_COOPERATIVE_KERNEL": ("func_param_info", "kernel_get_function", "launch"),
    "CU_LAUNCH_KERNEL_BATCH": ("func_param_info", "kernel_get_function", "launcher"),
    "CU_STREAM_CREATE": ("stream_create",),
    "CU_STREAM_CREATE_WITH_PRIORITY": ("stream_create",),
    "CU_STREAM_DESTROY": ("stream_destroy",),
    "CU_STREAM_SYNCHRONIZE": ("stream_synchronize",),
    "CU_STREAM_QUERY": ("stream_query",),
    "CU_STREAM_WAIT_EVENT": ("stream_wait_event",),
    "CU_EVENT_CREATE": ("event_create",),
    "CU_EVENT_DESTROY": ("event_destroy",),
    "CU_EVENT_RECORD": ("event_record",),
    "CU_EVENT_SYNCHRONIZE": ("event_synchronize",),
    "CU_EVENT_QUERY": ("event_query",),
    "CU_EVENT_ELAPSED_TIME": ("event_elapsed_time",),
    "CU_OCCUPANCY_MAX_ACTIVE_BLOCKS_PER_MULTIPROCESSOR": (
        "kernel_get_function",
        "occupancy_max_active_blocks",
    ),
    "CU_OCCUPANCY_MAX_POTENTIAL_BLOCK_SIZE": (
        "kernel_get_function",
        "occupancy_max_potential_block_size",
    ),
    "RT_DEVICE_GET_PROPERTIES": (
        "device_attribute",
        "device_count",
        "device_name",
        "device_total_mem",
        "device_uuid",
    ),
    "RT_MEMCPY_2D_HTOD": ("memcpy_htod",),
    "RT_MEMCPY_2D_DTOH": ("memcpy_dtoh",),
    "RT_MEMCPY_2D_DTOD": ("memcpy_dtod",),
    "RT_MEMSET_2D": ("memset",),
    "CHECKPOINT_SESSION": ("memcpy_dtoh", "set_device", "synchronize"),
    "CHECKPOINT_SERVER": ("memcpy_dtoh", "set_device", "synchronize"),
    "SESSION_CALLS": (),
    "DATA_SHM_OFFER": (),
    "DATA_SHM_ACCEPT": (),
    "DATA_SHM_HTOD": ("memcpy_htod", "memcpy_htod_registered", "register_host"),
    "DATA_SHM_DTOH": ("memcpy_dtoh", "memcpy_dtoh_registered", "register_host"),
    "DATA_TCP_OFFER": (),
    "DATA_TCP_HTOD": ("memcpy_htod",),
    "DATA_TCP_DTOH": ("memcpy_dtoh",),
    # arrays, textures, surfaces
    "ARRAY_CREATE": ("array_create", "array_destroy"),
    "ARRAY_DESTROY": ("array_destroy", "synchronize"),
    "ARRAY_GET_DESCRIPTOR": (),
    "MEMCPY_3D_FROM_HOST": ("memcpy_3d",),
    "MEMCPY_3D_TO_HOST": ("memcpy_3d",),
    "MEMCPY_3D_ON_DEVICE": ("memcpy_3d",),
    "TEX_OBJECT_CREATE": ("tex_object_create", "tex_object_destroy", "surf_object_create", "surf_object_destroy"),
    "TEX_OBJECT_DESTROY": ("tex_object_destroy", "surf_object_destroy"),
    "TEX_OBJECT_GET_DESCS": (),
    "SURF_OBJECT_CREATE": ("tex_object_create", "tex_object_destroy", "surf_object_create", "surf_object_destroy"),
    "SURF_OBJECT_DESTROY": ("tex_object_destroy", "surf_object_destroy"),
    "SURF_OBJECT_GET_RESOURCE_DESC": (),
    "CU_CTX_GET_FLAGS": (),
    "CU_CTX_SET_FLAGS": (),
    "CU_CTX_GET_CACHE_CONFIG": (),
    "CU_CTX_SET_CACHE_CONFIG": ("ctx_set_cache_config",),
    "CU_OCCUPANCY_AVAILABLE_DYNAMIC_SMEM_PER_BLOCK": (
        "kernel_get_function",
        "occupancy_available_dynamic_smem",
    ),
    "CU_OCCUPANCY_MAX_ACTIVE_CLUSTERS": ("kernel_get_function", "occupancy_max_active_clusters"),
    "CU_OCCUPANCY_MAX_POTENTIAL_CLUSTER_SIZE": (
        "kernel_get_function",
        "occupancy_max_potential_cluster_size",
    ),
    "CU_LAUNCH_KERNEL_EX": ("func_param_info", "kernel_get_function", "launch_ex"),
    "CU_STREAM_GET_PRIORITY": ("stream_priority_range",),
    "CU_STREAM_GET_FLAGS": (),
    "CU_STREAM_GET_ATTRIBUTE": ("stream_priority_range",),
    "CU_STREAM_SET_ATTRIBUTE": ("stream_set_attribute",),
    "CU_DEVICE_CAN_ACCESS_PEER": ("can_access_peer", "device_count"),
    "CU_DEVICE_GET_P2P_ATTRIBUTE": ("device_count", "p2p_attribute"),
    "CU_CTX_ENABLE_PEER_ACCESS": ("can_access_peer", "enable_peer_access"),
    "CU_CTX_DISABLE_PEER_ACCESS": ("disable_peer_access",),
    "CU_MEMCPY_PEER": ("memcpy_peer",),
    "CU_MEMCPY_PEER_ASYNC": ("memcpy_peer",),
    "CU_GRAPH_CREATE": (),
    "CU_GRAPH_DESTROY": (),
    "CU_GRAPH_ADD_NODE": ("func_param_info", "kernel_get_function"),
    "CU_GRAPH_GET_NODES": (),
    "CU_GRAPH_GET_ROOT_NODES": (),
    "CU_GRAPH_GET_EDGES": (),
    "CU_GRAPH_CLONE": (),
    "CU_GRAPH_ADD_DEPENDENCIES": (),
    "CU_GRAPH_DESTROY_NODE": (),
    "CU_GRAPH_EXEC_GET_FLAGS": (),
    "CU_GRAPH_UPLOAD": ("graph_upload",),
    "CU_GRAPH_REMOVE_DEPENDENCIES": (),
    "CU_GRAPH_NODE_SET_ENABLED": ("graph_exec_set_enabled",),
    "CU_GRAPH_NODE_GET_ENABLED": (),
    "CU_GRAPH_NODE_FIND_IN_CLONE": (),
    "CU_GRAPH_EXEC_CHILD_GRAPH_NODE_SET_PARAMS": (
        "func_param_info", "graph_exec_set_node", "kernel_get_function",
    ),
    "CU_GRAPH_DEBUG_DOT": ("func_param_info", "graph_debug_dot", "kernel_get_function"),
    "CU_GRAPH_KERNEL_NODE_GET_ATTRIBUTE": (
        "func_param_info", "kernel_get_function", "kernel_node_attribute",
    ),
    "CU_GRAPH_KERNEL_NODE_SET_ATTRIBUTE": (
        "func_param_info", "kernel_get_function", "kernel_node_attribute",
    ),
    "CU_GRAPH_KERNEL_NODE_COPY_ATTRIBUTES": (),
    "CU_FUNC_GET_NAME": ("kernel_get_function",),
    "CU_KERNEL_GET_NAME": (),
    "CU_GRAPH_GET_ID": (),
    "CU_GRAPH_EXEC_GET_ID": (),
    "CU_GRAPH_NODE_GET_LOCAL_ID": (),
    "CU_GRAPH_NODE_GET_TOOLS_ID": (),
    "CU_GRAPH_NODE_GET_CONTAINING_GRAPH": (),
    "CU_GRAPH_NODE_GET_TYPE": (),
    "CU_GRAPH_NODE_GET_DEPENDENCIES": (),
    "CU_GRAPH_NODE_GET_PARAMS": (),
    "CU_GRAPH_NODE_SET_PARAMS": ("func_param_info", "kernel_get_function"),
    "CU_GRAPH_INSTANTIATE": ("func_param_info", "graph_instantiate", "kernel_get_function"),
    "CU_GRAPH_EXEC_DESTROY": ("graph_exec_destroy",),
    "CU_GRAPH_LAUNCH": ("graph_launch",),
    "CU_GRAPH_LAUNCH_SYNC": ("graph_launch",),
    "CU_GRAPH_LAUNCH_BATCH": ("fast_graph_launcher", "graph_launch"),
    "CU_GRAPH_EXEC_NODE_SET_PARAMS": (
        "device_count",
        "func_param_info",
        "graph_exec_set_node",
        "kernel_get_function",
    ),
    "CU_GRAPH_EXEC_UPDATE": ("device_count", "func_param_info", "graph_exec_set_node", "kernel_get_function"),
    "CU_STREAM_BEGIN_CAPTURE": (),
    "CU_STREAM_END_CAPTURE": (),
    "CU_STREAM_GET_CAPTURE_INFO": (),
    "CU_STREAM_CAPTURE_HOST_COPY": (),
    "CU_STREAM_CAPTURE_PROHIBIT": (),  # capture modes (680-699)
    "CU_GRAPH_CONDITIONAL_HANDLE_CREATE": (),  # graph memory and conditional nodes (681-699)
    "CU_DEVICE_GET_GRAPH_MEM_ATTRIBUTE": ("device_count",),
    "CU_DEVICE_SET_GRAPH_MEM_ATTRIBUTE": ("device_count",),
    "CU_DEVICE_GRAPH_MEM_TRIM": ("device_count",),
    # virtual memory management and memory pools
    "CU_MEM_GET_ALLOCATION_GRANULARITY": ("device_count",),
    "CU_MEM_ADDRESS_RESERVE": (),
    "CU_MEM_ADDRESS_FREE": (),
    "CU_MEM_CREATE": ("device_count", "vmm_create", "set_device"),
    "CU_MEM_RELEASE": ("vmm_release", "set_device"),
    "CU_MEM_MAP": ("vmm_map", "set_device"),
    "CU_MEM_UNMAP": ("synchronize", "vmm_unmap", "vmm_release", "set_device"),
    "CU_MEM_SET_ACCESS": ("device_count", "vmm_set_access", "set_device"),
    "CU_MEM_GET_ACCESS": ("device_count",),
    "CU_MEM_GET_ALLOCATION_PROPERTIES_FROM_HANDLE": (),
    "CU_MEM_RETAIN_ALLOCATION_HANDLE": (),
    "CU_DEVICE_GET_DEFAULT_MEM_POOL": ("device_count",),
    "CU_DEVICE_GET_MEM_POOL": ("device_count",),
    "CU_DEVICE_SET_MEM_POOL": ("device_count",),
    "CU_MEM_POOL_CREATE": ("device_count",),
    "CU_MEM_POOL_DESTROY": (),
    "CU_MEM_POOL_SET_ATTRIBUTE": ("event_query", "event_synchronize", "event_destroy", "set_device"),
    "CU_MEM_POOL_GET_ATTRIBUTE": ("event_query", "event_synchronize", "event_destroy", "set_device"),
    "CU_MEM_POOL_TRIM_TO": ("event_query", "event_synchronize", "event_destroy", "set_device"),
    "CU_MEM_ALLOC_FROM_POOL_ASYNC": ("chunk_backing", "event_query", "event_synchronize", "event_destroy", "set_device"),
    "CU_LINK": ("link",),
    # mipmapped and sparse arrays
    "MIPMAP_CREATE": ("mipmap_create", "mipmap_destroy"),
    "MIPMAP_DESTROY": ("mipmap_destroy", "synchronize", "tex_object_destroy", "surf_object_destroy", "array_destroy"),
    "MIPMAP_GET_LEVEL": (),
    "MIPMAP_GET_SPARSE_PROPERTIES": ("sparse_properties",),
    "ARRAY_GET_SPARSE_PROPERTIES": ("sparse_properties",),
    "MIPMAP_GET_MEMORY_REQUIREMENTS": ("device_count", "memory_requirements"),
    "ARRAY_GET_MEMORY_REQUIREMENTS": ("device_count", "memory_requirements"),
    "MIPMAP_GET_DESCRIPTOR": (),
    # device resources and green contexts
    "CU_DEVICE_GET_DEV_RESOURCE": ("device_count", "dev_resource", "set_device"),
    "CU_DEV_SM_RESOURCE_SPLIT_BY_COUNT": ("sm_split",),
    "CU_GREEN_CTX_CREATE": ("device_count", "green_ctx_create", "set_device"),
    "CU_GREEN_CTX_DESTROY": ("green_ctx_destroy", "stream_destroy", "event_destroy", "set_device"),
    "CU_GREEN_CTX_GET_DEV_RESOURCE": ("green_ctx_resource", "set_device"),
    "CU_CTX_FROM_GREEN_CTX": (),
    "CU_CTX_GET_DEV_RESOURCE": ("dev_resource", "green_ctx_resource", "set_device"),
    "CU_GREEN_CTX_EVENT": ("stream_create", "event_create", "event_destroy", "event_record", "stream_wait_event", "set_device"),
    "CU_GREEN_CTX_STREAM_CREATE": ("stream_create", "stream_wait_event", "set_device"),
    "CU_STREAM_GET_GREEN_CTX": (),
    "CU_MODULE_ENUMERATE_FUNCTIONS": ("module_function_names", "module_get_function"),
    "CU_LIBRARY_ENUMERATE_KERNELS": ("library_kernel_names", "library_get_kernel"),
    "CU_LIBRARY_GET_GLOBAL": ("library_get_global",),
    "CU_KERNEL_GET_LIBRARY": (),
    "CU_FUNC_GET_MODULE": (),
    "CU_FUNC_IS_LOADED": ("func_is_loaded", "kernel_get_function"),
    "CU_FUNC_LOAD": ("func_load", "kernel_get_function"),
    "CU_MODULE_GET_LOADING_MODE": ("module_loading_mode",),
    "CU_CTX_GET_API_VERSION": ("ctx_api_version", "set_device"),
    "CU_CTX_GET_ID": (),
    "CU_STREAM_GET_CTX": (),
    "CU_STREAM_GET_ID": (),
    "CU_STREAM_GET_DEVICE": (),
    "CU_DEVICE_GET_TEXTURE_1D_LINEAR_MAX_WIDTH": ("device_count", "texture_1d_linear_max_width"),
    "CU_STREAM_COPY_ATTRIBUTES": ("stream_priority_range", "stream_set_attribute"),
    "CU_CTX_RECORD_EVENT": ("ctx_record_event", "set_device"),
    "CU_CTX_WAIT_EVENT": ("ctx_wait_event", "set_device"),
    "CU_CTX_GET_SHARED_MEM_CONFIG": ("ctx_get_shared_mem_config",),
    "CU_CTX_SET_SHARED_MEM_CONFIG": ("ctx_set_shared_mem_config",),
    "CU_FUNC_SET_SHARED_MEM_CONFIG": ("func_set_shared_mem_config", "kernel_get_function"),
    "CU_CTX_GET_DEVICE_V2": (),
    "CU_CTX_SYNCHRONIZE_V2": ("set_device", "synchronize"),
    "CU_PROFILER_START": ("profiler_start",),
    "CU_PROFILER_STOP": ("profiler_stop",),
    "CU_STREAM_BEGIN_CAPTURE_TO_GRAPH": (),
    "CU_STREAM_UPDATE_CAPTURE_DEPENDENCIES": (),
    "CU_CTX_RESET_PERSISTING_L2_CACHE": ("ctx_reset_persisting_l2_cache",),
    "CU_STREAM_GET_DEV_RESOURCE": ("dev_resource", "green_ctx_resource", "set_device"),
    "CU_DEV_SM_RESOURCE_SPLIT": ("sm_split_groups",),
    "CU_TENSOR_MAP_ENCODE_IM2COL_WIDE": ("tensor_map_encode_wide",),
    "CU_TENSOR_MAP_SET_ALLOCATION_CLASS": ("tensor_map_set_alloc_class",),
    "CU_STREAM_BEGIN_RECAPTURE_TO_GRAPH": (),
    "CU_MEMSET_D2D": ("memset",),
    "CU_STREAM_BATCH_MEM_OP": ("stream_mem_ops",),
    "CU_TENSOR_MAP_ENCODE": ("tensor_map_encode",),
    "CU_TENSOR_MAP_REPLACE_ADDRESS": ("tensor_map_replace_address",),
    "CU_DEVICE_GET_LUID": ("device_count", "device_luid"),
    "CU_DEVICE_GET_HOST_ATOMIC_CAPABILITIES": ("device_count",),
    "CU_DEVICE_GET_P2P_ATOMIC_CAPABILITIES": ("device_count", "p2p_atomic_capabilities"),
    "CU_DEVICE_GET_EXEC_AFFINITY_SUPPORT": ("device_count", "exec_affinity_support"),
    "CU_CTX_GET_EXEC_AFFINITY": ("ctx_exec_affinity", "set_device"),
    "CU_DEVICE_GET_FABRIC_CLUSTER_UUID": ("device_count", "fabric_cluster_uuid"),
    "CU_DEVICE_GET_CLIQUE_COUNT": ("clique_count", "device_count"),
    "CU_DEVICE_GET_CLIQUE_INFO": ("clique_info", "device_count"),
    "CU_GREEN_CTX_GET_ID": (),
    "CU_ARRAY_GET_PLANE": ("array_get_plane", "set_device"),
    "CU_POINTER_SET_ATTRIBUTE": ("synchronize", "set_device"),
    "CU_LIBRARY_GET_MODULE": ("library_get_module",),
    "CU_LIBRARY_GET_UNIFIED_FUNCTION": ("library_get_unified_function", "set_device"),
}

BACKENDS: dict[str, tuple[type[Backend], type[BackendSession]]] = {
    "sim": (SimBackend, SimSession),
    "cuda": (CudaBackend, CudaSession),
}


def _base_method(name: str) -> tuple[type, Callable[..., Any]] | None:
    for base in (BackendSession, Backend):
        if name in vars(base):
            return base, vars(base)[name]
    return None


def _backend_problems(proc: str, needs: tuple[str, ...]) -> list[str]:
    """What the backends lack for `proc`: a method the base does not declare, or one a backend
    neither overrides nor inherits as a documented, non-abstract default of the base."""
    problems = []
    for name in needs:
        found = _base_method(name)
        if found is None:
            problems.append(
                f"{proc}: backend method {name!r} is declared by neither Backend nor "
                "BackendSession (cricket_server/backends/base.py)"
            )
            continue
        base, method = found
        for backend, classes in BACKENDS.items():
            cls = classes[0] if base is Backend else classes[1]
            if getattr(cls, name) is not method:
                continue  # the backend implements it
            if getattr(method, "__isabstractmethod__", False) or not inspect.getdoc(method):
                problems.append(
                    f"{proc}: the {backend} backend ({cls.__name__}) does not implement "
                    f"{base.__name__}.{name}, and the base has no documented default "
                    "(implement it, or make the base answer CUDA_ERROR_NOT_SUPPORTED and say why "
                    "in its docstring)"
                )
    return problems


def _client_source() -> str:
    return "\n".join(
        path.read_text() for top in CLIENT_SOURCES for path in sorted((ROOT / top).rglob("*.py"))
    )


def _calls_in(source: str) -> tuple[set[str], set[str]]:
    """(session methods, backend methods) a piece of server code visibly calls."""
    session, backend = set(), set()
    for m in re.finditer(r"\b(?:s|session|self)\.(?:(bsession|backend)\.)?(\w+)\(", source):
        (backend if m.group(1) else session).add(m.group(2))
    return session, backend


def _visible_backend_calls(handler: Callable[..., Any]) -> set[str]:
    """The backend methods a handler reaches through `Session` methods, as far as its source
    shows (`s.x(...)`, `self.bsession.y(...)`, `self.backend.z(...)`)."""
    declared = {
        n for base in (Backend, BackendSession) for n in vars(base) if not n.startswith("_")
    }
    session, found = _calls_in(textwrap.dedent(inspect.getsource(handler)))
    seen: set[str] = set()
    todo = list(session)
    while todo:
        name = todo.pop()
        if name in seen or not callable(getattr(Session, name, None)):
            continue
        seen.add(name)
        inner, calls = _calls_in(textwrap.dedent(inspect.getsource(getattr(Session, name))))
        found |= calls
        todo.extend(inner)
    return found & declared


def coverage_problems(
    procedures: Mapping[int, Any],
    service: type = CricketService,
    needs: Mapping[str, tuple[str, ...]] = BACKEND_NEEDS,
    client_source: str | None = None,
) -> list[str]:
    """Every way the procedures of the .x are not served end to end, one line each."""
    client_source = _client_source() if client_source is None else client_source
    names = {p.name for p in procedures.values()}
    problems = [
        f"{name}: not in the .x any more; remove its row from BACKEND_NEEDS"
        for name in sorted(set(needs) - names)
    ]
    for number, proc in sorted(procedures.items()):
        name = proc.name
        handler = getattr(service, name, None)
        default = getattr(proto.CRICKET_V1_Server, name, None)
        if handler is None or handler is default:
            problems.append(
                f"{name} ({number}): no handler; override it in CricketService "
                "(cricket_server/service.py)"
            )
        if not re.search(rf"""["']{name}["']|\.{name}(?:_async)?\(""", client_source):
            problems.append(
                f"{name} ({number}): no client calls it; add its mirror function in "
                "cricket_client/driver.py or runtime.py (conn.sync/post)"
            )
        if name not in needs:
            problems.append(
                f"{name} ({number}): no row in BACKEND_NEEDS "
                "(tests/unit/test_procedure_coverage.py); add "
                f'"{name}": (<the Backend/BackendSession methods its handler needs>,)'
            )
            continue
        problems.extend(_backend_problems(name, needs[name]))
        if handler is not None and handler is not default:
            missing = _visible_backend_calls(handler) - set(needs[name])
            if missing:
                problems.append(
                    f"{name}: its handler calls backend methods {sorted(missing)} that its "
                    "BACKEND_NEEDS row does not list"
                )
    return problems


def test_every_procedure_is_served_end_to_end() -> None:
    problems = coverage_problems(proto.CRICKET_V1_Server.PROCEDURES)
    assert not problems, "\n".join(problems)


def _compiled_with(tmp_path: Path, extra: str) -> types.ModuleType:
    """rpc_spec/cricket.x with `extra` declared in CRICKET_V1, compiled and imported."""
    spec = (ROOT / "rpc_spec" / "cricket.x").read_text()
    end = "    } = 1;\n} = 0x20c0ffee;"
    assert end in spec, "cricket.x changed: find the end of CRICKET_V1 another way"
    source = tmp_path / "cricket.x"
    source.write_text(spec.replace(end, f"        {extra}\n{end}"))
    module = types.ModuleType("cricket_rpc_with_dummy")
    sys.modules[module.__name__] = module
    try:
        exec(compile(compile_file(str(source)), str(source), "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module


def test_a_new_procedure_without_handler_client_or_row_fails(tmp_path: Path) -> None:
    spec = _compiled_with(tmp_path, "int CU_DUMMY_CALL(unsigned) = 999; /* @replay */")
    problems = coverage_problems(spec.CRICKET_V1_Server.PROCEDURES)
    about = [p for p in problems if p.startswith("CU_DUMMY_CALL")]
    assert len(about) == 3, problems
    assert "no handler" in about[0]
    assert "no client calls it" in about[1]
    assert "no row in BACKEND_NEEDS" in about[2]


def test_a_served_procedure_with_a_backend_gap_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    # A handler, a client call and a row, but the row names a method only the sim backend has.
    class Service(CricketService):
        def CU_DUMMY_CALL(self, ctx: Any, flags: int) -> int:
            return 0

    monkeypatch.setattr(BackendSession, "dummy_call", lambda self: None, raising=False)
    monkeypatch.setattr(SimSession, "dummy_call", lambda self: None, raising=False)
    procedures = dict(proto.CRICKET_V1_Server.PROCEDURES)
    procedures[999] = types.SimpleNamespace(name="CU_DUMMY_CALL")
    needs = {**BACKEND_NEEDS, "CU_DUMMY_CALL": ("dummy_call", "no_such_method")}
    problems = coverage_problems(procedures, Service, needs, _client_source() + '"CU_DUMMY_CALL"')
    assert problems == [
        "CU_DUMMY_CALL: the cuda backend (CudaSession) does not implement "
        "BackendSession.dummy_call, and the base has no documented default (implement it, or "
        "make the base answer CUDA_ERROR_NOT_SUPPORTED and say why in its docstring)",
        "CU_DUMMY_CALL: backend method 'no_such_method' is declared by neither Backend nor "
        "BackendSession (cricket_server/backends/base.py)",
    ], problems


def test_a_row_missing_a_method_the_handler_calls_fails() -> None:
    needs = {**BACKEND_NEEDS, "CU_MEMCPY_HTOD": ()}
    problems = coverage_problems(proto.CRICKET_V1_Server.PROCEDURES, needs=needs)
    assert problems == [
        "CU_MEMCPY_HTOD: its handler calls backend methods ['memcpy_htod'] that its "
        "BACKEND_NEEDS row does not list"
    ]


def test_a_row_for_a_removed_procedure_fails() -> None:
    needs = {**BACKEND_NEEDS, "CU_GONE": ()}
    problems = coverage_problems(proto.CRICKET_V1_Server.PROCEDURES, needs=needs)
    assert problems == ["CU_GONE: not in the .x any more; remove its row from BACKEND_NEEDS"]
