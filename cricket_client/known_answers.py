"""Answers the client already knows: a repeated query whose answer cannot have changed is
answered from the connection's cache, without a round trip.

Kept per connection (`conn.known`), at the first successful answer:

- device facts (cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet, cuDeviceGetName,
  cuDeviceGetAttribute, cuDeviceTotalMem, cuDeviceGetUuid, cuDeviceGetPCIBusId,
  cuDeviceCanAccessPeer, cuDeviceGetP2PAttribute, cudaGetDeviceProperties, cuDeviceGetLuid,
  the atomic capabilities, cuDeviceGetExecAffinitySupport, the NVLink fabric queries): fixed
  while the session lives on a server;
- the current context and its device (cuCtxGetCurrent, cuCtxGetDevice,
  cuCtxGetStreamPriorityRange) and each primary context's state (cuDevicePrimaryCtxGetState):
  a session has one context stack and its own primary contexts on the server, which only its
  own calls change; any call that creates, destroys, sets, pushes or pops a context, or
  retains, releases, resets or sets the flags of a primary context, forgets them. A
  cuCtxSetCurrent of the context known to be current changes nothing and is answered here
  (CuPy sets its device's context around each operation); a cuStreamGetCaptureInfo or
  cuStreamIsCapturing of a default stream, with a context known current and no capture of
  this client under way, is answered "not capturing" here (driver_graphs; PyTorch and CuPy
  ask before their copies);
- function attributes (cuFuncGetAttribute): forgotten by cuFuncSetAttribute,
  cuFuncSetCacheConfig, any cuKernelSet*, module and library unloads, and whatever forgets
  the context answers (a destroyed or reset context frees its modules);
- pointer attributes of an allocation (cuPointerGetAttribute(s) asking only for attributes
  fixed for its life, the memory type among them, and answered with one): forgotten by every
  call that may end or remap memory (frees, unmaps, releases, destroys, resets, unloads,
  pool trims, maps, access changes, graph launches); an address that is no allocation is
  asked each time.

A synchronize with nothing sent since a successful one that covers it is answered here too:
cuCtxSynchronize after cuCtxSynchronize, cuStreamSynchronize or cuStreamQuery of a stream
after synchronizing that stream (or, for the legacy stream, the context) or after a copy to
host memory on it (cuMemcpyDtoHAsync, cuMemcpyAsync: the server waited for the stream to
hand over the bytes; `stream_settled`). Nothing can be
pending: no counted call of this connection went out since (the replay count is unchanged;
only HELLO, GOODBYE, checkpoints and the session's queries of itself are not counted), no launch is gathered and no reply or failure waits to be collected.

Answers that state others can change are never kept (cuMemGetInfo, limits, which a launch
may raise, stream and event queries). A failed answer is not kept. After a resume
(`cricket_client.reconnect`) everything is forgotten: the restored session may run on
another server. A query answered here is not sent, so neither the client nor the server
counts it for replay (`cricket_client.replay`): both counts stay equal. A query is still
sent while an asynchronous failure waits to be reported, so that it reports it as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .early_copies import Allocations

if TYPE_CHECKING:
    from .connection import Connection

__all__ = [
    "KnownAnswers", "RULES", "answer", "answered_here", "context_answers_changed",
    "known_current_context", "on_context_change", "settles_here", "stream_settled",
]

DEVICE, CONTEXT, FUNCTION, POINTER = 0, 1, 2, 3
SETTLE = -2  # a synchronize, answered when nothing was sent since one that covers it

_GETTERS = {
    "CU_DRIVER_GET_VERSION": DEVICE,
    "CU_DEVICE_GET_COUNT": DEVICE,
    "CU_DEVICE_GET": DEVICE,
    "CU_DEVICE_GET_NAME": DEVICE,
    "CU_DEVICE_GET_ATTRIBUTE": DEVICE,
    "CU_DEVICE_TOTAL_MEM": DEVICE,
    "CU_DEVICE_GET_UUID": DEVICE,
    "CU_DEVICE_GET_PCI_BUS_ID": DEVICE,
    "CU_DEVICE_CAN_ACCESS_PEER": DEVICE,
    "CU_DEVICE_GET_P2P_ATTRIBUTE": DEVICE,
    "RT_DEVICE_GET_PROPERTIES": DEVICE,
    "CU_DEVICE_GET_LUID": DEVICE,
    "CU_DEVICE_GET_HOST_ATOMIC_CAPABILITIES": DEVICE,
    "CU_DEVICE_GET_P2P_ATOMIC_CAPABILITIES": DEVICE,
    "CU_DEVICE_GET_EXEC_AFFINITY_SUPPORT": DEVICE,
    "CU_DEVICE_GET_FABRIC_CLUSTER_UUID": DEVICE,
    "CU_DEVICE_GET_CLIQUE_COUNT": DEVICE,
    "CU_DEVICE_GET_CLIQUE_INFO": DEVICE,
    "CU_CTX_GET_CURRENT": CONTEXT,
    "CU_CTX_GET_DEVICE": CONTEXT,
    "CU_CTX_GET_STREAM_PRIORITY_RANGE": CONTEXT,
    "CU_CTX_GET_ID": CONTEXT,
    "CU_DEVICE_PRIMARY_CTX_GET_STATE": CONTEXT,
    "CU_FUNC_GET_ATTRIBUTE": FUNCTION,
    "CU_POINTER_GET_ATTRIBUTES": POINTER,
}
_CONTEXT_CHANGERS = (
    "CU_INIT",
    "CU_CTX_CREATE",
    "CU_CTX_DESTROY",
    "CU_GREEN_CTX_DESTROY",
    "CU_CTX_SET_CURRENT",
    "CU_CTX_PUSH_CURRENT",
    "CU_CTX_POP_CURRENT",
    "CU_DEVICE_PRIMARY_CTX_RETAIN",
    "CU_DEVICE_PRIMARY_CTX_RELEASE",
    "CU_DEVICE_PRIMARY_CTX_RESET",
    "CU_DEVICE_PRIMARY_CTX_SET_FLAGS",
)
_FUNCTION_CHANGERS = (
    "CU_FUNC_SET_ATTRIBUTE",
    "CU_FUNC_SET_CACHE_CONFIG",
    "CU_MODULE_UNLOAD",
    "CU_LIBRARY_UNLOAD",
)

# procedure -> (cache its answers are kept in, or -1; caches it forgets)
RULES: dict[str, tuple[int, tuple[int, ...]]] = {
    **{proc: (cache, ()) for proc, cache in _GETTERS.items()},
    **{proc: (-1, (CONTEXT, FUNCTION)) for proc in _CONTEXT_CHANGERS},
    **{proc: (-1, (FUNCTION,)) for proc in _FUNCTION_CHANGERS},
    **{proc: (SETTLE, ()) for proc in ("CU_CTX_SYNCHRONIZE", "CU_STREAM_SYNCHRONIZE", "CU_STREAM_QUERY")},
}


# Pointer attributes kept: those fixed for an allocation's life (not SYNC_MEMOPS, access
# flags or mapping state): CONTEXT, MEMORY_TYPE, DEVICE_POINTER, BUFFER_ID, IS_MANAGED,
# DEVICE_ORDINAL, RANGE_START_ADDR, RANGE_SIZE.
_MEMORY_TYPE = 2
_FIXED_POINTER_ATTRIBUTES = frozenset({1, 2, 3, 7, 8, 9, 11, 12})
# Calls whose name says they may end or remap an allocation forget the pointer answers.
_ENDS_MEMORY = ("FREE", "UNMAP", "RELEASE", "DESTROY", "RESET", "UNLOAD", "TRIM", "CU_MEM_MAP",
                "SET_ACCESS", "PEER_ACCESS", "CU_GRAPH_LAUNCH")  # fmt: skip

_MEMO: dict[str, tuple[int, tuple[int, ...]] | None] = {}

# Called whenever a connection's answers of the current context may change or must not be
# given (an asynchronous failure waits): copies kept elsewhere (the native library's, in C)
# are dropped. Empty unless the native library runs in this process.
on_context_change: list[Callable[[], None]] = []


def context_answers_changed() -> None:
    """The current context's answers may change, or must not be given: tell the listeners."""
    for listener in on_context_change:
        listener()


def rule(proc: str) -> tuple[int, tuple[int, ...]] | None:
    """What `proc` does to the known answers: None when nothing (most calls)."""
    try:
        return _MEMO[proc]
    except KeyError:
        pass
    found = RULES.get(proc)
    forgets: set[int] = set(found[1]) if found is not None and found[0] < 0 else set()
    if proc.startswith("CU_KERNEL_SET_"):
        forgets.add(FUNCTION)
    if found is None or found[0] < 0:
        if "_GET_" not in proc and any(word in proc for word in _ENDS_MEMORY):
            forgets.add(POINTER)
        if forgets:
            found = (-1, tuple(sorted(forgets)))
    _MEMO[proc] = found
    return found


def _keepable(kind: int, args: tuple[Any, ...], reply: Any) -> bool:
    """Whether a successful reply may be kept: pointer attributes only of an allocation
    (memory type asked for and not 0) and only those fixed for its life."""
    if kind != POINTER:
        return True
    attrs = args[0]
    if _MEMORY_TYPE not in attrs or not _FIXED_POINTER_ATTRIBUTES.issuperset(attrs):
        return False
    items = reply[1].value
    return all(not item.err for item in items) and any(
        item.attribute == _MEMORY_TYPE and item.value for item in items
    )


class KnownAnswers:
    """A connection's kept answers: one dict per kind, keyed by (procedure, arguments)."""

    def __init__(self) -> None:
        self.caches: tuple[dict[Any, Any], ...] = ({}, {}, {}, {})
        self.allocations = Allocations()  # what early copies may write (early_copies)
        # after a successful synchronize: (transport, its next call number, what it covered)
        self.settled: tuple[Any, int, Any] | None = None

    def forget(self, *kinds: int) -> None:
        for kind in kinds:
            self.caches[kind].clear()
        if CONTEXT in kinds:
            self.allocations.context_may_change()
            context_answers_changed()

    def memory_ends(self, proc: str, args: tuple[Any, ...]) -> None:
        """A call that may end or remap memory: a free forgets its allocation, any other
        every allocation (none may take an early copy until allocated again)."""
        if proc in ("CU_MEM_FREE", "CU_MEM_FREE_ASYNC") and args:
            self.allocations.freed(args[0])
        else:
            self.allocations.forget()

    def forget_all(self) -> None:
        """After a resume: the restored session may answer otherwise."""
        for cache in self.caches:
            cache.clear()
        self.settled = None
        self.allocations.forget()
        self.allocations.context_may_change()
        context_answers_changed()

    def __len__(self) -> int:
        return sum(len(c) for c in self.caches)


def known_current_context(conn: Connection) -> int | None:
    """The current context as the server last answered it and still kept (not 0), or None:
    not known, none current, or an asynchronous failure waits to be reported."""
    pipe = conn.pipeline
    if pipe.deferred_error or pipe.deferred_exception is not None:
        return None
    reply = conn.known.caches[CONTEXT].get(("CU_CTX_GET_CURRENT", ()))
    if reply is None or reply[0]:
        return None
    return int(reply[1].value) or None


def answered_here(conn: Connection, proc: str) -> None:
    """Book a call answered by the client: no message of an earlier call stays, counted."""
    conn._local_message = None
    if conn.stats is not None:
        conn.stats.known[proc] += 1


def _success(send: Callable[..., Any]) -> tuple[int, ...]:
    """A success in the reply's shape: `sync`'s (CUresult, status), `call`'s (CUresult,)."""
    return (0, 0) if getattr(send, "__name__", "") == "_sync" else (0,)


def answer(
    conn: Connection,
    proc: str,
    found: tuple[int, tuple[int, ...]],
    args: tuple[Any, ...],
    send: Callable[..., Any],
) -> Any:
    """Answer `proc(*args)` from the kept answers, else `send(proc, *args)` and keep a
    successful reply; or, for a call that changes them, forget them around `send`."""
    kind, forgets = found
    known = conn.known
    if kind == SETTLE:
        return _settle(conn, known, proc, args, send)
    if kind < 0:
        if proc == "CU_CTX_SET_CURRENT" and args and known_current_context(conn) == args[0]:
            answered_here(conn, proc)  # already current: nothing changes
            return _success(send)
        known.forget(*forgets)
        if POINTER in forgets:
            known.memory_ends(proc, args)
        try:
            return send(proc, *args)
        finally:
            known.forget(*forgets)  # a query of another thread may have kept an older one
    cache = known.caches[kind]
    key: Any = (proc, args)
    try:
        reply = cache.get(key)
    except TypeError:  # a list among the arguments (the attributes asked for)
        key = (proc, tuple(tuple(a) if isinstance(a, list) else a for a in args))
        try:
            reply = cache.get(key)
        except TypeError:  # unhashable arguments: not kept
            return send(proc, *args)
    pipe = conn.pipeline
    if reply is not None and not pipe.deferred_error and pipe.deferred_exception is None:
        answered_here(conn, proc)
        return reply
    reply = send(proc, *args)
    if reply[0] == 0 and _keepable(kind, args, reply):
        cache[key] = reply
    return reply


def _next_call_number(conn: Connection) -> tuple[Any, int]:
    """(transport, calls counted on it): every call that can give the device work is counted."""
    return conn._rpc, conn.replay_log.seq


def _quiet(conn: Connection) -> bool:
    pipe = conn.pipeline
    return not (
        pipe.pending or pipe.launches.queued or pipe.deferred_error
        or pipe.deferred_exception is not None
    )  # fmt: skip


def _settle(
    conn: Connection, known: KnownAnswers, proc: str, args: tuple[Any, ...], send: Callable[..., Any]
) -> Any:
    """A synchronize (or stream query) with nothing sent since one that covers it: success
    here; else sent, and remembered when it succeeds with nothing left pending."""
    if settles_here(conn, proc, args[0] if args else None):
        answered_here(conn, proc)
        return _success(send)
    known.settled = None
    reply = send(proc, *args)
    if reply[0] == 0 and proc != "CU_STREAM_QUERY":
        _mark_settled(conn, (proc, args[0] if args else None))
    return reply


def settles_here(conn: Connection, proc: str, stream: int | None) -> bool:
    """Whether a synchronize (or stream query) `proc` of `stream` would be answered here:
    nothing was sent since a successful one that covers it."""
    settled = conn.known.settled
    if settled is None or not _quiet(conn):
        return False
    rpc, number, covered = settled
    return (rpc, number) == _next_call_number(conn) and (
        covered == ("CU_CTX_SYNCHRONIZE", None)
        and (proc == "CU_CTX_SYNCHRONIZE" or stream == 0)
        or covered == ("CU_STREAM_SYNCHRONIZE", stream) and proc != "CU_CTX_SYNCHRONIZE"
    )


def stream_settled(conn: Connection, stream: int) -> None:
    """A call that made the server wait for `stream` (a copy into host memory on it, which
    waits for the stream to deliver its bytes) succeeded: a synchronize or query of that
    stream with nothing sent since is answered here (as after a cuStreamSynchronize)."""
    _mark_settled(conn, ("CU_STREAM_SYNCHRONIZE", stream))


def _mark_settled(conn: Connection, covered: tuple[str, Any]) -> None:
    """`covered` (a synchronize and its stream) holds until the next counted call, if
    nothing is pending now."""
    if _quiet(conn):
        rpc, number = _next_call_number(conn)
        conn.known.settled = (rpc, number, covered)
