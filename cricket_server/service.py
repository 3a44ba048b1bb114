"""`CricketService`: the CRICKET_V1 procedures of rpc_spec/cricket.x, served by sessions.

Each connection gets its session from HELLO (kept in `ctx.connection.state`); every CUDA
procedure delegates to it. A `CudaError` becomes the reply's CUresult (a failed result is the
union's default arm); any other exception is logged and answered CUDA_ERROR_UNKNOWN, so no
backend failure takes down the server or the connection. The text of the last failure is
kept for GET_ERROR_MESSAGE.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_INITIALIZED,
    CUDA_ERROR_NOT_PERMITTED,
    CUDA_ERROR_NOT_READY,
    CUDA_ERROR_NOT_SUPPORTED,
    CUDA_ERROR_UNKNOWN,
    CUDA_SUCCESS,
    CudaError,
)
from cricket_server.binding_procedures import BindingProcedures
from cricket_server.checkpoints.sessions import checkpoint_call
from cricket_server.checkpoints.targets import check_own_target
from cricket_server.datapath import DataPathProcedures
from cricket_server.graph_access_procedures import GraphAccessProcedures
from cricket_server.graph_procedures import GraphProcedures
from cricket_server.handle_checks import KIND_SHIFT, tag_masks, wrong_kind
from cricket_server.kernel_node_attr_procedures import KernelNodeAttrProcedures
from cricket_server.launch_batch import (
    Launch,
    decode_graph_launch_batch_args,
    decode_launch_batch_args,
)
from cricket_server.limits import confine_checkpoint_path
from cricket_server.service_arrays import ArrayProcedures
from cricket_server.service_device_facts import DeviceFactProcedures
from cricket_server.service_flags import FlagsProcedures
from cricket_server.service_resources import DevResourceProcedures, MipmapProcedures
from cricket_server.service_sm_groups import SmGroupProcedures
from cricket_server.service_tail import TailProcedures
from cricket_server.service_vmm_pools import VmmPoolProcedures
from cricket_server.session import Session, SessionManager, negotiate_version
from rpc_spec import cricket_rpc as proto

log = logging.getLogger("cricket_server.service")

T = TypeVar("T")
STATE_KEY = "cricket"


@dataclass
class ConnectionState:
    """What the service keeps per connection."""

    session: Session | None = None
    last_error: str = ""  # failures before HELLO


def format_peer(peer: object) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        host, port = peer[0], peer[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(peer) if peer else "unix"


def _truncate(text: str, limit: int = proto.MAX_NAME) -> str:
    data = text.encode()
    return text if len(data) <= limit else data[: limit - 3].decode(errors="ignore") + "..."


def _options(options: list[Any]) -> dict[int, int]:
    return {int(o.option): int(o.value) for o in options}


def is_operator(ctx: Any) -> bool:
    """Whether the call came from the server's operator: the peer of a local Unix socket
    running as the server's user (or root), as the kernel says (SO_PEERCRED)."""
    uid = getattr(ctx.connection, "peer_uid", None)
    return uid is not None and uid in (0, os.geteuid())


def operator_refusal(ctx: Any) -> proto.checkpoint_result | None:
    """CHECKPOINT_SERVER writes every session's memory and token: None for the operator, the
    refusal (CUDA_ERROR_NOT_PERMITTED) for anyone else."""
    if is_operator(ctx):
        return None
    peer = format_peer(ctx.connection.peer)
    log.warning("CHECKPOINT_SERVER from %s refused: not the operator", peer)
    return proto.checkpoint_result(
        CUDA_ERROR_NOT_PERMITTED,
        _truncate(
            "CHECKPOINT_SERVER is the operator's: call it over the server's Unix socket "
            f"(--unix) as its user (uid {os.geteuid()}); a client checkpoints its own session "
            "(CHECKPOINT_SESSION, cricket_client.checkpoint)"
        ),
    )


def _refuse(session: Session, code: int, message: str) -> None:
    """A call refused before its handler ran (cricket_server.handle_checks)."""
    session.require_init(message.split(":", 1)[0])
    log.warning("session %#x: %s", session.id, message)
    raise CudaError(code, message)


def _mem_info(session: Session) -> proto.mem_info:
    free, total = session.mem_get_info()
    return proto.mem_info(free=free, total=total)


class CricketService(
    GraphProcedures,
    GraphAccessProcedures,
    KernelNodeAttrProcedures,
    BindingProcedures,
    FlagsProcedures,
    DataPathProcedures,
    ArrayProcedures,
    MipmapProcedures,
    DevResourceProcedures,
    SmGroupProcedures,
    VmmPoolProcedures,
    TailProcedures,
    DeviceFactProcedures,
    proto.CRICKET_V1_Server,
):
    """Serves CRICKET_V1 over the sessions of one `SessionManager`."""

    # From the facts of rpc_spec/cricket.x. `@view`: host-to-device payloads are used before
    # the handler returns, so no copy out of the record. `@pipelined`: the client does not
    # wait for each reply, so they may share writes.
    VIEW_ARGS = frozenset(n for n, p in proto.CRICKET_V1_Server.PROCEDURES.items() if p.facts.views)
    ARG_DECODERS = {
        proto.CU_LAUNCH_KERNEL_BATCH: decode_launch_batch_args,
        proto.CU_GRAPH_LAUNCH_BATCH: decode_graph_launch_batch_args,
    }
    DEFERRED_REPLIES = frozenset(
        n for n, p in proto.CRICKET_V1_Server.PROCEDURES.items() if p.facts.pipelined
    )
    # `@handle(kind)`: a handle of another kind is refused before the handler runs
    # (cricket_server.handle_checks), but where the handler takes what the client sends
    # alongside first (DATA_TCP_HTOD: the bytes come on the data channels) and checks then.
    TAGGED_ARGS = tag_masks(proto.CRICKET_V1_Server.PROCEDURES.values(), skip={"DATA_TCP_HTOD"})
    TAG_SHIFT = KIND_SHIFT

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager

    def tagged_arg_refused(self, ctx: Any, procedure: Any, args: tuple[Any, ...]) -> Any:
        """A call with a handle of the wrong kind (the dispatcher found its tag not allowed
        there): refused as the session refuses a call, and counted as it counts one."""
        handler = getattr(self, procedure.name)
        refused = wrong_kind(procedure, handler, args)
        if refused is None:  # a tag that names no kind: no handle, the session's to refuse
            return handler(ctx, *args)
        code = self._run(ctx, procedure.name, _refuse, *refused)[0]
        result_cls = getattr(procedure.result_codec, "cls", None)  # a union, else a status
        return code if result_cls is None else result_cls(code, None)

    # -- plumbing ---------------------------------------------------------------------------
    @staticmethod
    def _state(ctx: Any) -> ConnectionState:
        state = ctx.connection.state.get(STATE_KEY)
        if state is None:
            state = ctx.connection.state[STATE_KEY] = ConnectionState()
        return state

    def _run(
        self, ctx: Any, call: str, fn: Callable[..., T], *args: Any, calls: int = 1
    ) -> tuple[int, T | None]:
        """Run `fn(session, *args)` on the connection's session; (CUresult, value or None).
        `calls`: how many client calls it stands for (a batch of launches), as counted for
        replay."""
        state = ctx.connection.state.get(STATE_KEY) or self._state(ctx)
        session = state.session
        if session is None or session.closed:
            state.last_error = f"{call}: no session on this connection (call HELLO first)"
            return CUDA_ERROR_NOT_INITIALIZED, None
        with session.lock:
            session.calls += calls
            try:
                return CUDA_SUCCESS, fn(session, *args)
            except CudaError as e:
                session.last_error = e.message
                log.debug("session %#x: %s -> %d: %s", session.id, call, e.code, e.message)
                return e.code, None
            except Exception as e:
                session.last_error = f"{call}: server error: {type(e).__name__}: {e}"
                log.exception("session %#x: %s failed in the backend", session.id, call)
                return CUDA_ERROR_UNKNOWN, None

    def _status(self, ctx: Any, call: str, fn: Callable[[Session], object]) -> int:
        return self._run(ctx, call, fn)[0]

    def _result(
        self, cls: Callable[[int, Any], T], ctx: Any, call: str, fn: Callable[..., Any], *args: Any
    ) -> T:
        """`_run` with the value in a result union `cls(CUresult, value or None)`; `fn` may be
        a `Session` method itself, with its arguments in `args` (no closure per call)."""
        code, value = self._run(ctx, call, fn, *args)
        return cls(code, value if code == CUDA_SUCCESS else None)

    def _ready(self, ctx: Any, call: str, fn: Callable[[Session], bool]) -> int:
        code, done = self._run(ctx, call, fn)
        if code == CUDA_SUCCESS and not done:
            return CUDA_ERROR_NOT_READY
        return code

    # -- session ----------------------------------------------------------------------------
    def HELLO(self, ctx: Any, args: proto.hello_args) -> proto.hello_result:
        state = self._state(ctx)
        token = bytes(args.session_token)
        try:
            version = negotiate_version(args.protocol_version)
            ctx.connection.replies_may_wait = version >= 2  # it asks for held replies itself
            session = state.session
            if session is not None and not session.closed:
                if token != session.token:
                    raise CudaError(
                        CUDA_ERROR_INVALID_VALUE,
                        f"HELLO: this connection already has session {session.id:#x}",
                    )
            elif token:
                session = self.manager.resume(token)  # a session a restart brought back
                state.session = session
                self._bind(ctx, session)
                log.info(
                    "session %#x resumed by %s", session.id, format_peer(ctx.connection.peer)
                )
            else:
                session = self.manager.open(format_peer(ctx.connection.peer), args.client_name)
                state.session = session
                self._bind(ctx, session)
            backend = self.manager.backend
            ok = proto.hello_ok(
                protocol_version=version,
                server_version=self.manager.server_version,
                backend=backend.name,
                driver_version=backend.driver_version(),
                runtime_version=backend.runtime_version(),
                session_id=session.id,
                session_token=session.token,
                va_base=self.manager.arena.base,
                va_size=self.manager.arena.size,
            )
            return proto.hello_result(CUDA_SUCCESS, ok)
        except CudaError as e:
            state.last_error = e.message
            log.warning("HELLO from %s refused: %s", format_peer(ctx.connection.peer), e.message)
            return proto.hello_result(e.code, None)
        except Exception as e:
            state.last_error = f"HELLO: server error: {type(e).__name__}: {e}"
            log.exception("HELLO from %s failed", format_peer(ctx.connection.peer))
            return proto.hello_result(CUDA_ERROR_UNKNOWN, None)

    def _bind(self, ctx: Any, session: Session) -> None:
        """Make `session` this connection's; its end frees it (or starts its grace)."""
        conn_id = ctx.connection.id
        session.connection_id = conn_id
        session.drain_connection = ctx.connection.drain_received  # for operator checkpoints
        ctx.connection.add_close_callback(
            lambda s=session: self.manager.connection_lost(s, conn_id)
        )

    def GOODBYE(self, ctx: Any) -> int:
        state = self._state(ctx)
        if state.session is not None:
            state.session.close("goodbye")
            state.session = None
        return CUDA_SUCCESS

    # -- checkpoint/restart (cricket_server.checkpoints.sessions) ----------------------------------
    def _checkpoint_path(self, path: str) -> str:
        """The client's path, confined to the checkpoint root (--checkpoint-root, or the
        default one of the server's user)."""
        return confine_checkpoint_path(path, self.manager.limits.checkpoint_root)

    def CHECKPOINT_SESSION(self, ctx: Any, path: str) -> proto.checkpoint_result:
        session = self._state(ctx).session
        if session is None or session.closed:
            return proto.checkpoint_result(
                CUDA_ERROR_NOT_INITIALIZED, "checkpoint: no session on this connection"
            )
        try:
            path = self._checkpoint_path(path)
            check_own_target(path, session.id)
        except CudaError as e:
            log.warning("session %#x: %s", session.id, e.message)
            return proto.checkpoint_result(e.code, e.message[: proto.MAX_NAME])
        return checkpoint_call(self.manager, [session], path)

    def CHECKPOINT_SERVER(self, ctx: Any, path: str, session_id: int) -> proto.checkpoint_result:
        refusal = operator_refusal(ctx)
        if refusal is not None:
            return refusal
        try:
            path = self._checkpoint_path(path)
        except CudaError as e:
            log.warning("CHECKPOINT_SERVER from %s: %s", ctx.connection.peer, e.message)
            return proto.checkpoint_result(e.code, e.message[: proto.MAX_NAME])
        own = self._state(ctx).session
        if own is not None and session_id != own.id:  # a client may name only its own session
            log.warning(
                "session %#x: CHECKPOINT_SERVER of session %#x refused", own.id, session_id
            )
            return proto.checkpoint_result(
                CUDA_ERROR_INVALID_VALUE, f"checkpoint: no session {session_id:#x} here"
            )
        if getattr(self.manager, "channel", None) is not None:  # a worker (process isolation)
            return proto.checkpoint_result(
                CUDA_ERROR_NOT_SUPPORTED,
                "checkpoint: this server keeps each session in a worker process of its own "
                "(--isolation process), so no process holds them all; checkpoint from the "
                "client (cricket_client.checkpoint) or serve with --isolation thread",
            )
        sessions = self.manager.sessions()
        if session_id:
            sessions = [s for s in sessions if s.id == session_id]
            if not sessions:
                return proto.checkpoint_result(
                    CUDA_ERROR_INVALID_VALUE, f"checkpoint: no session {session_id:#x} here"
                )
        return checkpoint_call(self.manager, sessions, path)

    def SESSION_CALLS(self, ctx: Any) -> proto.u64_result:
        session = self._state(ctx).session
        if session is None or session.closed:
            return proto.u64_result(CUDA_ERROR_NOT_INITIALIZED, None)
        with session.lock:
            return proto.u64_result(CUDA_SUCCESS, session.calls)

    def GET_ERROR_MESSAGE(self, ctx: Any) -> str:
        state = self._state(ctx)
        session = state.session
        return _truncate(session.last_error if session is not None else state.last_error)

    # -- devices ----------------------------------------------------------------------------
    def CU_INIT(self, ctx: Any, flags: int) -> int:
        return self._status(ctx, "cuInit", lambda s: s.init(flags))

    def CU_DRIVER_GET_VERSION(self, ctx: Any) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuDriverGetVersion", lambda s: s.driver_version()
        )

    def CU_DEVICE_GET_COUNT(self, ctx: Any) -> proto.int_result:
        return self._result(proto.int_result, ctx, "cuDeviceGetCount", lambda s: s.device_count())

    def CU_DEVICE_GET(self, ctx: Any, ordinal: int) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuDeviceGet", lambda s: s.device("cuDeviceGet", ordinal)
        )

    def CU_DEVICE_GET_NAME(self, ctx: Any, dev: int) -> proto.str_result:
        call = "cuDeviceGetName"
        return self._result(
            proto.str_result, ctx, call, lambda s: s.backend.device_name(s.device(call, dev))
        )

    def CU_DEVICE_GET_ATTRIBUTE(self, ctx: Any, attrib: int, dev: int) -> proto.int_result:
        return self._result(
            proto.int_result, ctx, "cuDeviceGetAttribute", Session.device_attribute, attrib, dev
        )

    def CU_DEVICE_TOTAL_MEM(self, ctx: Any, dev: int) -> proto.u64_result:
        call = "cuDeviceTotalMem"
        return self._result(
            proto.u64_result, ctx, call, lambda s: s.backend.device_total_mem(s.device(call, dev))
        )

    def CU_DEVICE_GET_UUID(self, ctx: Any, dev: int) -> proto.uuid_result:
        call = "cuDeviceGetUuid"
        return self._result(
            proto.uuid_result,
            ctx,
            call,
            lambda s: bytes(s.backend.device_uuid(s.device(call, dev))),
        )

    def CU_DEVICE_GET_PCI_BUS_ID(self, ctx: Any, dev: int) -> proto.str_result:
        call = "cuDeviceGetPCIBusId"
        return self._result(
            proto.str_result, ctx, call, lambda s: s.backend.device_pci_bus_id(s.device(call, dev))
        )

    # -- contexts ---------------------------------------------------------------------------
    def CU_DEVICE_PRIMARY_CTX_RETAIN(self, ctx: Any, dev: int) -> proto.handle_result:
        return self._result(
            proto.handle_result,
            ctx,
            "cuDevicePrimaryCtxRetain",
            lambda s: s.primary_ctx_retain(dev),
        )

    def CU_DEVICE_PRIMARY_CTX_RELEASE(self, ctx: Any, dev: int) -> int:
        return self._status(ctx, "cuDevicePrimaryCtxRelease", lambda s: s.primary_ctx_release(dev))

    def CU_DEVICE_PRIMARY_CTX_RESET(self, ctx: Any, dev: int) -> int:
        return self._status(ctx, "cuDevicePrimaryCtxReset", lambda s: s.primary_ctx_reset(dev))

    def CU_DEVICE_PRIMARY_CTX_GET_STATE(self, ctx: Any, dev: int) -> proto.ctx_state_result:
        def state(s: Session) -> proto.ctx_state:
            flags, active = s.primary_ctx_get_state(dev)
            return proto.ctx_state(flags=flags, active=int(active))

        return self._result(proto.ctx_state_result, ctx, "cuDevicePrimaryCtxGetState", state)

    def CU_DEVICE_PRIMARY_CTX_SET_FLAGS(self, ctx: Any, dev: int, flags: int) -> int:
        return self._status(
            ctx, "cuDevicePrimaryCtxSetFlags", lambda s: s.primary_ctx_set_flags(dev, flags)
        )

    def CU_CTX_CREATE(self, ctx: Any, flags: int, dev: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuCtxCreate", lambda s: s.ctx_create(flags, dev)
        )

    def CU_CTX_DESTROY(self, ctx: Any, handle: int) -> int:
        return self._status(ctx, "cuCtxDestroy", lambda s: s.ctx_destroy(handle))

    def CU_CTX_SET_CURRENT(self, ctx: Any, handle: int) -> int:
        return self._status(ctx, "cuCtxSetCurrent", lambda s: s.ctx_set_current(handle))

    def CU_CTX_GET_CURRENT(self, ctx: Any) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuCtxGetCurrent", lambda s: s.ctx_get_current()
        )

    def CU_CTX_PUSH_CURRENT(self, ctx: Any, handle: int) -> int:
        return self._status(ctx, "cuCtxPushCurrent", lambda s: s.ctx_push_current(handle))

    def CU_CTX_POP_CURRENT(self, ctx: Any) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuCtxPopCurrent", lambda s: s.ctx_pop_current()
        )

    def CU_CTX_SYNCHRONIZE(self, ctx: Any) -> int:
        return self._status(ctx, "cuCtxSynchronize", lambda s: s.ctx_synchronize())

    def CU_CTX_GET_DEVICE(self, ctx: Any) -> proto.int_result:
        return self._result(proto.int_result, ctx, "cuCtxGetDevice", Session.ctx_get_device)

    def CU_CTX_GET_LIMIT(self, ctx: Any, limit: int) -> proto.u64_result:
        return self._result(
            proto.u64_result, ctx, "cuCtxGetLimit", lambda s: s.ctx_get_limit(limit)
        )

    def CU_CTX_SET_LIMIT(self, ctx: Any, limit: int, value: int) -> int:
        return self._status(ctx, "cuCtxSetLimit", lambda s: s.ctx_set_limit(limit, value))

    def CU_CTX_GET_STREAM_PRIORITY_RANGE(self, ctx: Any) -> proto.int_pair_result:
        def pair(s: Session) -> proto.int_pair:
            least, greatest = s.ctx_stream_priority_range()
            return proto.int_pair(first=least, second=greatest)

        return self._result(proto.int_pair_result, ctx, "cuCtxGetStreamPriorityRange", pair)

    # -- memory -----------------------------------------------------------------------------
    def CU_MEM_ALLOC(self, ctx: Any, size: int) -> proto.ptr_result:
        return self._result(proto.ptr_result, ctx, "cuMemAlloc", lambda s: s.mem_alloc(size))

    def CU_MEM_ALLOC_PITCH(
        self, ctx: Any, width: int, height: int, element_size: int
    ) -> proto.pitch_result:
        def alloc(s: Session) -> proto.pitch_alloc:
            ptr, pitch = s.mem_alloc_pitch(width, height, element_size)
            return proto.pitch_alloc(ptr=ptr, pitch=pitch)

        return self._result(proto.pitch_result, ctx, "cuMemAllocPitch", alloc)

    def CU_MEM_FREE(self, ctx: Any, ptr: int) -> int:
        return self._status(ctx, "cuMemFree", lambda s: s.mem_free(ptr))

    def CU_MEM_GET_INFO(self, ctx: Any) -> proto.mem_info_result:
        return self._result(proto.mem_info_result, ctx, "cuMemGetInfo", _mem_info)

    def CU_MEM_GET_ADDRESS_RANGE(self, ctx: Any, ptr: int) -> proto.mem_range_result:
        def span(s: Session) -> proto.mem_range:
            base, size = s.mem_get_address_range(ptr)
            return proto.mem_range(base=base, size=size)

        return self._result(proto.mem_range_result, ctx, "cuMemGetAddressRange", span)

    def CU_MEMCPY_HTOD(self, ctx: Any, dst: int, data: Any) -> int:
        return self._status(ctx, "cuMemcpyHtoD", lambda s: s.memcpy_htod(dst, memoryview(data)))

    def CU_MEMCPY_DTOH(self, ctx: Any, src: int, size: int) -> proto.mem_result:
        return self._result(
            proto.mem_result, ctx, "cuMemcpyDtoH", lambda s: s.memcpy_dtoh(src, size)
        )

    def CU_MEMCPY_DTOD(self, ctx: Any, dst: int, src: int, size: int) -> int:
        return self._status(ctx, "cuMemcpyDtoD", lambda s: s.memcpy_dtod(dst, src, size))

    def CU_MEMCPY_HTOD_ASYNC(self, ctx: Any, dst: int, data: Any, stream: int) -> int:
        return self._status(
            ctx, "cuMemcpyHtoDAsync", lambda s: s.memcpy_htod(dst, memoryview(data), stream)
        )

    def CU_MEMCPY_DTOH_ASYNC(self, ctx: Any, src: int, size: int, stream: int) -> proto.mem_result:
        return self._result(
            proto.mem_result, ctx, "cuMemcpyDtoHAsync", lambda s: s.memcpy_dtoh(src, size, stream)
        )

    def CU_MEMCPY_DTOD_ASYNC(self, ctx: Any, dst: int, src: int, size: int, stream: int) -> int:
        return self._status(
            ctx, "cuMemcpyDtoDAsync", lambda s: s.memcpy_dtod(dst, src, size, stream)
        )

    def CU_MEMSET(self, ctx: Any, dst: int, value: int, width: int, count: int) -> int:
        return self._status(ctx, "cuMemset", lambda s: s.memset(dst, value, width, count))

    def CU_MEMSET_ASYNC(
        self, ctx: Any, dst: int, value: int, width: int, count: int, stream: int
    ) -> int:
        return self._status(
            ctx, "cuMemsetAsync", lambda s: s.memset(dst, value, width, count, stream)
        )

    def CU_MEM_ALLOC_ASYNC(self, ctx: Any, size: int, stream: int) -> proto.ptr_result:
        return self._result(
            proto.ptr_result, ctx, "cuMemAllocAsync", lambda s: s.mem_alloc_async(size, stream)
        )

    def CU_MEM_FREE_ASYNC(self, ctx: Any, ptr: int, stream: int) -> int:
        return self._status(ctx, "cuMemFreeAsync", lambda s: s.mem_free_async(ptr, stream))

    def CU_POINTER_GET_ATTRIBUTES(
        self, ctx: Any, attributes: list[int], ptr: int
    ) -> proto.pointer_attributes_result:
        def values(s: Session) -> list[proto.pointer_attribute_value]:
            return [
                proto.pointer_attribute_value(attribute=a, err=e, value=v)
                for a, e, v in s.pointer_attributes(attributes, ptr)
            ]

        return self._result(proto.pointer_attributes_result, ctx, "cuPointerGetAttributes", values)

    # -- modules, libraries, functions ------------------------------------------------------
    def _load(self, ctx: Any, call: str, fn: Callable[[Session], int]) -> proto.module_load_result:
        code, handle = self._run(ctx, call, fn)
        if code != CUDA_SUCCESS:
            return proto.module_load_result(code, _truncate(self.GET_ERROR_MESSAGE(ctx), 1 << 16))
        assert handle is not None
        loaded = proto.module_loaded(handle=handle, info_log="", error_log="")
        return proto.module_load_result(CUDA_SUCCESS, loaded)

    def CU_MODULE_LOAD_DATA(
        self, ctx: Any, image: Any, options: list[Any]
    ) -> proto.module_load_result:
        call = "cuModuleLoadData"
        return self._load(ctx, call, lambda s: s.module_load(bytes(image), _options(options), call))

    def CU_MODULE_LOAD_FAT_BINARY(self, ctx: Any, image: Any) -> proto.module_load_result:
        call = "cuModuleLoadFatBinary"
        return self._load(ctx, call, lambda s: s.module_load(bytes(image), {}, call))

    def CU_LINK(self, ctx: Any, inputs: list[Any], options: list[Any]) -> proto.link_result:
        """cuLinkComplete: the client's inputs linked by the backend; a failure's reply carries
        the linker's message (its error log)."""
        call = "cuLinkComplete"
        wire = [(int(i.type), str(i.name), bytes(i.data)) for i in inputs]
        code, value = self._run(ctx, call, lambda s: s.link(wire, _options(options)))
        if code != CUDA_SUCCESS:
            return proto.link_result(code, _truncate(self.GET_ERROR_MESSAGE(ctx), 1 << 16))
        assert value is not None
        image, info = value
        return proto.link_result(code, proto.linked_image(image=image, info_log=info))

    def CU_MODULE_UNLOAD(self, ctx: Any, module: int) -> int:
        return self._status(ctx, "cuModuleUnload", lambda s: s.module_unload(module))

    def CU_MODULE_GET_FUNCTION(self, ctx: Any, module: int, name: str) -> proto.handle_result:
        return self._result(
            proto.handle_result,
            ctx,
            "cuModuleGetFunction",
            lambda s: s.module_get_function(module, name),
        )

    def CU_MODULE_GET_GLOBAL(self, ctx: Any, module: int, name: str) -> proto.global_result:
        def found(s: Session) -> proto.global_info:
            ptr, size = s.module_get_global(module, name)
            return proto.global_info(ptr=ptr, size=size)

        return self._result(proto.global_result, ctx, "cuModuleGetGlobal", found)

    def CU_LIBRARY_LOAD_DATA(
        self, ctx: Any, image: Any, jit_options: list[Any], library_options: list[Any]
    ) -> proto.module_load_result:
        return self._load(
            ctx,
            "cuLibraryLoadData",
            lambda s: s.library_load(
                bytes(image), _options(jit_options), _options(library_options)
            ),
        )

    def CU_LIBRARY_UNLOAD(self, ctx: Any, library: int) -> int:
        return self._status(ctx, "cuLibraryUnload", lambda s: s.library_unload(library))

    def CU_LIBRARY_GET_KERNEL(self, ctx: Any, library: int, name: str) -> proto.handle_result:
        return self._result(
            proto.handle_result,
            ctx,
            "cuLibraryGetKernel",
            lambda s: s.library_get_kernel(library, name),
        )

    def CU_KERNEL_GET_FUNCTION(self, ctx: Any, kernel: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuKernelGetFunction", lambda s: s.kernel_get_function(kernel)
        )

    def CU_FUNC_GET_ATTRIBUTE(self, ctx: Any, attrib: int, func: int) -> proto.int_result:
        return self._result(
            proto.int_result,
            ctx,
            "cuFuncGetAttribute",
            lambda s: s.func_get_attribute(attrib, func),
        )

    def CU_FUNC_SET_ATTRIBUTE(self, ctx: Any, func: int, attrib: int, value: int) -> int:
        return self._status(
            ctx, "cuFuncSetAttribute", lambda s: s.func_set_attribute(func, attrib, value)
        )

    def CU_FUNC_SET_CACHE_CONFIG(self, ctx: Any, func: int, config: int) -> int:
        return self._status(
            ctx, "cuFuncSetCacheConfig", lambda s: s.func_set_cache_config(func, config)
        )

    def CU_FUNC_GET_PARAM_INFO(self, ctx: Any, func: int) -> proto.param_info_result:
        def params(s: Session) -> list[proto.param_info]:
            return [proto.param_info(offset=p.offset, size=p.size) for p in s.func_param_info(func)]

        return self._result(proto.param_info_result, ctx, "cuFuncGetParamInfo", params)

    # -- launches ---------------------------------------------------------------------------
    def _launch(self, ctx: Any, args: proto.launch_args, cooperative: bool) -> int:
        call = "cuLaunchCooperativeKernel" if cooperative else "cuLaunchKernel"
        return self._status(
            ctx,
            call,
            lambda s: s.launch(
                args.function,
                (args.grid_x, args.grid_y, args.grid_z),
                (args.block_x, args.block_y, args.block_z),
                args.shared_mem_bytes,
                args.stream,
                memoryview(args.params),
                cooperative,
            ),
        )

    def CU_LAUNCH_KERNEL(self, ctx: Any, args: proto.launch_args) -> int:
        return self._launch(ctx, args, cooperative=False)

    def CU_LAUNCH_COOPERATIVE_KERNEL(self, ctx: Any, args: proto.launch_args) -> int:
        return self._launch(ctx, args, cooperative=True)

    def CU_LAUNCH_KERNEL_BATCH(self, ctx: Any, launches: list[Launch]) -> int:
        return self._run(
            ctx, "cuLaunchKernel", Session.launch_batch, launches, calls=len(launches)
        )[0]

    # -- streams and events -----------------------------------------------------------------
    def CU_STREAM_CREATE(self, ctx: Any, flags: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuStreamCreate", lambda s: s.stream_create(flags)
        )

    def CU_STREAM_CREATE_WITH_PRIORITY(
        self, ctx: Any, flags: int, priority: int
    ) -> proto.handle_result:
        return self._result(
            proto.handle_result,
            ctx,
            "cuStreamCreateWithPriority",
            lambda s: s.stream_create(flags, priority),
        )

    def CU_STREAM_DESTROY(self, ctx: Any, stream: int) -> int:
        return self._status(ctx, "cuStreamDestroy", lambda s: s.stream_destroy(stream))

    def CU_STREAM_SYNCHRONIZE(self, ctx: Any, stream: int) -> int:
        return self._status(ctx, "cuStreamSynchronize", lambda s: s.stream_synchronize(stream))

    def CU_STREAM_QUERY(self, ctx: Any, stream: int) -> int:
        return self._ready(ctx, "cuStreamQuery", lambda s: s.stream_query(stream))

    def CU_STREAM_WAIT_EVENT(self, ctx: Any, stream: int, event: int, flags: int) -> int:
        return self._status(
            ctx, "cuStreamWaitEvent", lambda s: s.stream_wait_event(stream, event, flags)
        )

    def CU_EVENT_CREATE(self, ctx: Any, flags: int) -> proto.handle_result:
        return self._result(
            proto.handle_result, ctx, "cuEventCreate", lambda s: s.event_create(flags)
        )

    def CU_EVENT_DESTROY(self, ctx: Any, event: int) -> int:
        return self._status(ctx, "cuEventDestroy", lambda s: s.event_destroy(event))

    def CU_EVENT_RECORD(self, ctx: Any, event: int, stream: int) -> int:
        return self._status(ctx, "cuEventRecord", lambda s: s.event_record(event, stream))

    def CU_EVENT_SYNCHRONIZE(self, ctx: Any, event: int) -> int:
        return self._status(ctx, "cuEventSynchronize", lambda s: s.event_synchronize(event))

    def CU_EVENT_QUERY(self, ctx: Any, event: int) -> int:
        return self._ready(ctx, "cuEventQuery", lambda s: s.event_query(event))

    def CU_EVENT_ELAPSED_TIME(self, ctx: Any, start: int, end: int) -> proto.float_result:
        return self._result(
            proto.float_result,
            ctx,
            "cuEventElapsedTime",
            lambda s: s.event_elapsed_time(start, end),
        )

    # -- occupancy --------------------------------------------------------------------------
    def CU_OCCUPANCY_MAX_ACTIVE_BLOCKS_PER_MULTIPROCESSOR(
        self, ctx: Any, func: int, block_size: int, smem: int, flags: int
    ) -> proto.int_result:
        return self._result(
            proto.int_result,
            ctx,
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            lambda s: s.occupancy_max_active_blocks(func, block_size, smem, flags),
        )

    def CU_OCCUPANCY_MAX_POTENTIAL_BLOCK_SIZE(
        self, ctx: Any, func: int, smem: int, block_size_limit: int, flags: int
    ) -> proto.int_pair_result:
        def pair(s: Session) -> proto.int_pair:
            grid, block = s.occupancy_max_potential_block_size(func, smem, block_size_limit, flags)
            return proto.int_pair(first=grid, second=block)

        return self._result(proto.int_pair_result, ctx, "cuOccupancyMaxPotentialBlockSize", pair)

    # -- runtime API support ----------------------------------------------------------------
    def RT_DEVICE_GET_PROPERTIES(
        self, ctx: Any, dev: int, attributes: list[int]
    ) -> proto.device_properties_result:
        def props(s: Session) -> proto.device_properties:
            name, uuid, total, values = s.device_properties(dev, attributes)
            return proto.device_properties(
                name=_truncate(name),
                uuid=uuid,
                total_mem=total,
                values=[  # an int on the wire: unsigned attributes wrap, the client undoes it
                    proto.device_attribute_value(err=e, value=(v + 2**31) % 2**32 - 2**31)
                    for e, v in values
                ],
            )

        return self._result(proto.device_properties_result, ctx, "cudaGetDeviceProperties", props)

    def RT_MEMCPY_2D_HTOD(
        self, ctx: Any, dst: int, dpitch: int, rows: Any, width: int, height: int, stream: int
    ) -> int:
        return self._status(
            ctx,
            "cudaMemcpy2D",
            lambda s: s.memcpy_2d_htod(dst, dpitch, memoryview(rows), width, height, stream),
        )

    def RT_MEMCPY_2D_DTOH(
        self, ctx: Any, src: int, spitch: int, width: int, height: int, stream: int
    ) -> proto.mem_result:
        return self._result(
            proto.mem_result,
            ctx,
            "cudaMemcpy2D",
            lambda s: s.memcpy_2d_dtoh(src, spitch, width, height, stream),
        )

    def RT_MEMCPY_2D_DTOD(
        self,
        ctx: Any,
        dst: int,
        dpitch: int,
        src: int,
        spitch: int,
        width: int,
        height: int,
        stream: int,
    ) -> int:
        return self._status(
            ctx,
            "cudaMemcpy2D",
            lambda s: s.memcpy_2d_dtod(dst, dpitch, src, spitch, width, height, stream),
        )

    def RT_MEMSET_2D(
        self, ctx: Any, dst: int, pitch: int, value: int, width: int, height: int, stream: int
    ) -> int:
        return self._status(
            ctx, "cudaMemset2D", lambda s: s.memset_2d(dst, pitch, value, width, height, stream)
        )
