"""The Python side of the native `libcuda.so.1`: one implementation per exported function.

Imported only inside the library (its cffi module `_cricket_libcuda` exists there). Each entry
gets plain integers (handles, host pointers) and typed output pointers, makes the call as
cricket_client.driver does (same procedures, same pipelining), writes the outputs and returns
the CUresult. Most entries are generated (_entries_generated.py: they call the driver mirror
itself); the ones here and in entries_families.py need more (docs/internals.md says what). A Python exception never becomes CUDA_SUCCESS: it is answered with a CUresult
(INVALID_VALUE for bad arguments, NOT_SUPPORTED for what is not remoted, UNKNOWN otherwise) and
its message is what the session's last error message gives.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import threading
import traceback
import weakref
from collections.abc import Callable
from typing import Any

from _cricket_libcuda import ffi, lib  # type: ignore[import-not-found]

from cricket_xdr.rpc.errors import RpcError
from rpc_spec.handles import KIND_SHIFT, HandleKind

from .. import call_stats, driver, driver_graphs, known_answers
from .. import connection as _connection
from .._driver_base import _WIRE_PER_THREAD
from .._enums import CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, DRIVER_NAMES
from .._types import as_int
from ..connection import get_connection as _conn
from ..errors import CricketClientError, NotSupportedRemotely
from ..host_buffers import HostBufferError
from . import export_slots
from .known_context import CONTEXT, DEVICE, KnownContext
from .launch_pack import ParamPacker
from .signatures import select_symbol

__all__ = ["start"]

log = logging.getLogger("cricket_client.native")

SUCCESS = 0
INVALID_VALUE = 1
NOT_INITIALIZED = 3
NOT_SUPPORTED = 801
NOT_FOUND = 500
UNKNOWN = 999
SYMBOL_NOT_FOUND = 1  # CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
LAUNCH_ATTRIBUTE_COOPERATIVE = 2
LAUNCH_ATTRIBUTE_SIZE = 72  # CUlaunchAttribute: id, padding to 8, a 64-byte value union

_TRACE = bool(os.environ.get("CRICKET_NATIVE_TRACE"))
_lock = threading.Lock()
_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    log.warning("%s", message)


def _local_error(message: str) -> None:
    try:
        _conn().set_local_error(message)
    except Exception:  # no session (yet): the log still names it
        log.debug("no session to record %r", message)


def _onerror(name: str) -> Callable[[Any, BaseException, Any], int]:
    def onerror(kind: Any, exc: BaseException, tb: Any) -> int:
        if isinstance(exc, NotSupportedRemotely | NotImplementedError):
            code = NOT_SUPPORTED
        elif isinstance(exc, HostBufferError | ValueError | TypeError | OverflowError):
            code = INVALID_VALUE
        elif isinstance(exc, CricketClientError):  # no server address, HELLO refused
            code = NOT_INITIALIZED
            _warn_once(f"session {type(exc).__name__}", f"cricket: {exc}")
        elif isinstance(exc, RpcError):  # the connection failed or the server refused a call
            code = UNKNOWN
            _warn_once(f"rpc {type(exc).__name__}", f"cricket: {name}: {exc}")
        else:
            code = UNKNOWN
            log.error("%s failed in the client", name, exc_info=(kind, exc, tb))
        _local_error(f"{name}: {exc}")
        if _TRACE:
            log.warning("%s -> %d (%s: %s)", name, code, type(exc).__name__, exc)
        return code

    return onerror


IMPLEMENTED: set[str] = set()  # the exported functions given their implementation


def _why_failed() -> str:
    try:
        return _conn().last_error_message()
    except Exception as exc:  # no session, or it failed: the trace says so
        return f"no message: {exc}"


def _traced(name: str, fn: Callable[..., int]) -> Callable[..., int]:
    """`fn`, logging each call's result (`CRICKET_NATIVE_TRACE=1`)."""

    @functools.wraps(fn)
    def traced(*args: Any) -> int:
        code = fn(*args)
        if code:
            log.warning("%s -> %d (%s)", name, code, _why_failed())
        else:
            log.warning("%s -> 0", name)
        return code

    return traced


def _entry(fn: Callable[..., int]) -> Callable[..., int]:
    """Make `fn` the implementation of the exported function of the same name."""
    name = fn.__name__
    impl = _traced(name, fn) if _TRACE else fn
    ffi.def_extern(name=f"py_{name}", error=UNKNOWN, onerror=_onerror(name))(impl)
    IMPLEMENTED.add(name)
    return fn


def _null(call: str, name: str) -> int:
    """A NULL pointer where `call` needs one: CUDA_ERROR_INVALID_VALUE, the reason kept."""
    _local_error(f"{call}: {name} is NULL")
    return INVALID_VALUE


def _err(result: tuple[Any, ...]) -> int:
    return int(result[0])


def _ptr(value: Any) -> int:
    return as_int(value) if value is not None else 0


# -- lifetime -------------------------------------------------------------------------------


def _finalizing() -> None:
    """From here on calls are answered in C (cricket_client.native.at_exit): cuda.core, the
    CUDA runtime under PyTorch and others release what they hold while the interpreter shuts
    down, and the library's Python cannot serve them then."""
    try:
        _note_for_after_exit()
    except Exception:  # a session that is failing: every call after the exit is refused
        log.debug("nothing noted for calls after the exit", exc_info=True)
    lib.cricket_set_state(0, 1)


def _note_for_after_exit() -> None:
    """What objects released after the exit still ask, noted in the C copies of the client's
    answers (known_context) while it answers (its known answers: no round trip where it holds
    them), and whether the context's work is done; nothing without a live session."""
    conn = _connection._thread.connection or _connection._default
    if conn is None or conn.closed or not conn._rpc.looks_alive():
        return
    cuCtxGetCurrent(ffi.new("uintptr_t *"))
    _context_device(ffi.new("CUdevice *"))  # fails, noting nothing, without a current context
    err, count = driver.cuDeviceGetCount()
    for ordinal in range(0 if int(err) else int(count or 0)):
        cuDevicePrimaryCtxGetState(ordinal, ffi.new("unsigned int *"), ffi.new("int *"))
    if not int(driver.cuCtxSynchronize()[0]):
        lib.cricket_exit_note_drained(int(not driver_graphs.capturing_any(conn)))


_forsaken: list[Any] = []  # a forked child's copies of its parent's connections, kept inert


def _after_fork_failed(kind: Any, exc: BaseException, tb: Any) -> None:
    log.error("forked child: no session of its own", exc_info=(kind, exc, tb))


@ffi.def_extern(name="py_at_exit")
def _at_exit() -> None:
    """A program without Python exits (the library's C exit handler): write what the client
    writes at exit (cricket_client.call_stats), which no Python exit handler will."""
    call_stats.write_pending()


@ffi.def_extern(name="py_after_fork", onerror=_after_fork_failed)
def _after_fork() -> None:
    """In a forked child (run by the child's first driver call): the parent's session is the
    parent's. The child drops its copy of the connection without a word to the server (no
    GOODBYE, no shutdown: those would end the parent's session) and opens a session of its own,
    initialized as the parent's was; the parent's contexts, memory and modules are not in it."""
    global _lock
    # Only this thread exists in the child: locks another thread of the parent held at the
    # fork would stay held for ever, so the child gets fresh ones.
    _lock = threading.Lock()
    _connection._default_lock = threading.Lock()
    old, _connection._default = _connection._default, None
    mine = _connection._thread.connection
    _connection._thread.connection = None
    for conn in (old, mine):
        if conn is None:
            continue
        _forsaken.append(conn)
        rpc = getattr(conn, "_rpc", None)
        sock = getattr(rpc, "_sock", None)
        try:
            fd = sock.detach() if sock is not None else -1
            if fd >= 0:
                os.close(fd)
        except OSError:
            pass
    if _init_flags is not None:
        _conn().sync("CU_INIT", _init_flags)


def start() -> None:
    """Called once by the library's init code."""
    lib.cricket_set_state(1, 0)
    atexit.register(_finalizing)


# -- cuGetProcAddress and what is not remoted ----------------------------------------------

_addresses: dict[tuple[bytes, int, int], tuple[int, int]] = {}
_stub_names: list[str] = []
_stub_index: dict[str, int] = {}


def _stub_for(name: str) -> int:
    with _lock:
        index = _stub_index.get(name)
        if index is None:
            index = min(len(_stub_names), lib.cricket_stub_count() - 1)
            if index == len(_stub_names):
                _stub_names.append(name)
            _stub_index[name] = index
    return int(lib.cricket_stub(index))


@ffi.def_extern(name="py_proc_address", error=0)
def _proc_address(symbol: Any, version: int, flags: int, status: Any) -> int:
    raw = ffi.string(symbol)
    key = (raw, version, flags)
    found = _addresses.get(key)
    if found is None:
        name = raw.decode(errors="replace")
        chosen = select_symbol(name, version, flags)
        if chosen is not None:
            found = (int(lib.cricket_symbol(chosen.encode())), 0)
        else:
            # Never NULL: a caller that ignores the status gets a function that answers
            # CUDA_ERROR_NOT_SUPPORTED naming itself (the one exported by that name, else one
            # of the pool).
            known = name in DRIVER_NAMES
            named = int(lib.cricket_symbol(raw)) if known else 0
            found = (named or _stub_for(name), 0 if known else SYMBOL_NOT_FOUND)
        if _TRACE:
            log.warning("cuGetProcAddress(%s, %d, %d) -> %s", name, version, flags, chosen or "stub")
        _addresses[key] = found
    status[0] = found[1]
    return found[0]


@ffi.def_extern(name="py_unsupported", error=NOT_SUPPORTED)
def _unsupported(index: int) -> int:
    names = _stub_names[index] if index < len(_stub_names) else "a driver function"
    message = f"{names} is not supported remotely by Cricket (native libcuda)"
    _warn_once(names, message)
    _local_error(message)
    return NOT_SUPPORTED


@ffi.def_extern(name="py_unsupported_name", error=NOT_SUPPORTED)
def _unsupported_name(name: Any) -> int:
    text = ffi.string(name).decode()
    message = f"{text} is not supported remotely by Cricket (native libcuda)"
    _warn_once(text, message)
    _local_error(message)
    return NOT_SUPPORTED


# The runtime's probe for a bootstrap bypass: a driver without it answers NOT_FOUND, and the
# runtime goes the ordinary way (asking for the tables below).
_BYPASS_PROBE = "f8cff95121468b4eb9e2fb469e7c0dd9"


@_entry
def cuGetExportTable(ppExportTable: int, pExportTableId: Any) -> int:
    """Private tables of the CUDA runtime (static in cuda.bindings.runtime, CuPy, PyTorch): the
    ones declared in export_tables.py; any other answers NOT_SUPPORTED, naming the table once."""
    uuid = bytes(ffi.buffer(pExportTableId, 16)).hex() if pExportTableId else "NULL"
    if ppExportTable:
        ffi.cast("uintptr_t *", ppExportTable)[0] = 0
    if uuid == _BYPASS_PROBE:
        return NOT_FOUND
    if ppExportTable and pExportTableId:
        found = export_slots.get_export_table(ppExportTable, bytes.fromhex(uuid))
        if found is not None:
            return found
    message = (
        f"cuGetExportTable {{{uuid}}}: private CUDA runtime tables are not supported remotely "
        "by Cricket (native libcuda)"
    )
    _warn_once("export " + uuid, message)
    _local_error(message)
    return NOT_SUPPORTED


# -- initialization, devices ----------------------------------------------------------------


_init_flags: int | None = None  # what cuInit succeeded with (a forked child repeats it)


@_entry
def cuInit(Flags: int) -> int:
    global _init_flags
    err = _conn().sync("CU_INIT", Flags)[0]
    if not err:
        _init_flags = Flags
    return err


def _text_out(proc: str, out: Any, length: int, dev: int) -> int:
    if out == ffi.NULL or length <= 0:
        return INVALID_VALUE
    err, r = _conn().sync(proc, dev)
    if not err:
        raw = r.value.encode()[: length - 1] + b"\0"
        ffi.memmove(out, raw, len(raw))
    return err


@_entry
def cuDeviceGetName(name: Any, length: int, dev: int) -> int:
    return _text_out("CU_DEVICE_GET_NAME", name, length, dev)


@_entry
def cuDeviceGetPCIBusId(bus_id: Any, length: int, dev: int) -> int:
    return _text_out("CU_DEVICE_GET_PCI_BUS_ID", bus_id, length, dev)


@_entry
def cuDeviceComputeCapability(major: Any, minor: Any, dev: int) -> int:
    conn = _conn()
    err, hi = conn.call("CU_DEVICE_GET_ATTRIBUTE", 75, dev)  # COMPUTE_CAPABILITY_MAJOR
    if not err:
        err, lo = conn.call("CU_DEVICE_GET_ATTRIBUTE", 76, dev)
    if not err:
        major[0], minor[0] = hi, lo
    return err  # type: ignore[no-any-return]


# -- contexts -------------------------------------------------------------------------------


def _handle_out(out: Any, proc: str, *args: Any) -> int:
    if out == ffi.NULL:
        return INVALID_VALUE
    err, r = _conn().sync(proc, *args)
    if not err:
        out[0] = r.value
    return err


@_entry
def cuCtxCreate_v2(pctx: Any, flags: int, dev: int) -> int:
    return _handle_out(pctx, "CU_CTX_CREATE", flags, dev)


def _no_create_params(call: str, given: bool) -> int:
    if given:
        _local_error(f"{call}: context creation parameters are not supported remotely")
        return NOT_SUPPORTED
    return SUCCESS


@_entry
def cuCtxCreate_v3(pctx: Any, params: int, count: int, flags: int, dev: int) -> int:
    return _no_create_params("cuCtxCreate_v3", bool(params and count)) or cuCtxCreate_v2(
        pctx, flags, dev
    )


@_entry
def cuCtxCreate_v4(pctx: Any, params: int, flags: int, dev: int) -> int:
    return _no_create_params("cuCtxCreate_v4", bool(params)) or cuCtxCreate_v2(pctx, flags, dev)


def _in_context(ctx: int, call: Callable[[], int]) -> int:
    """`call` with `ctx` current (0: the current context, as CUDA 13's _v2 forms take it)."""
    if not ctx:
        return call()
    conn = _conn()
    err = conn.sync("CU_CTX_PUSH_CURRENT", ctx)[0]
    if err:
        return err
    try:
        return call()
    finally:
        conn.sync("CU_CTX_POP_CURRENT")


# -- the current context and its device: answered in C while known (known_context) -----------

_known = KnownContext(lib)


def _forget_known_context() -> None:
    """The client's own answers may change: the C copies go (traced with the caller, which
    says why a program's context questions keep reaching Python)."""
    _known.forget()
    if _TRACE:
        callers = traceback.extract_stack(limit=10)[:-1]
        log.warning("context answers forgotten (%s)", " <- ".join(f.name for f in reversed(callers)))


known_answers.on_context_change.append(_forget_known_context)


@_entry
def cuCtxGetCurrent(pctx: Any) -> int:
    if not pctx:
        return INVALID_VALUE
    epoch = _known.epoch()
    err, ctx = driver.cuCtxGetCurrent()
    if not err:
        pctx[0] = value = as_int(ctx) if ctx is not None else 0
        _known.note(CONTEXT, value, epoch)
    return int(err)


@_entry
def cuDevicePrimaryCtxGetState(dev: int, flags: Any, active: Any) -> int:
    if not flags:
        return _null("cuDevicePrimaryCtxGetState", "flags")
    if not active:
        return _null("cuDevicePrimaryCtxGetState", "active")
    epoch = _known.epoch()
    err, value_flags, value_active = driver.cuDevicePrimaryCtxGetState(dev)
    if not err:
        flags[0], active[0] = int(value_flags or 0), int(value_active or 0)
        _known.note_primary(dev, flags[0], active[0], epoch)
    return int(err)


@_entry
def cuStreamIsCapturing(hStream: int, captureStatus: Any) -> int:
    if not captureStatus:
        return _null("cuStreamIsCapturing", "captureStatus")
    epoch = _no_capture_epoch(hStream)
    err, status = driver.cuStreamIsCapturing(hStream)
    if not err:
        captureStatus[0] = int(status)
        if epoch is not None:
            _known.note_no_capture(epoch)
    return int(err)


def _no_capture_epoch(stream: int) -> int | None:
    """The known answers' epoch when the client knows default stream `stream` is not
    capturing (its answer, once given, is kept for the library to give in C: known_context),
    else None."""
    wire = _WIRE_STREAMS.get(stream)  # a default stream (the only ones answered in C)
    if wire is None:
        return None
    epoch = _known.epoch()
    return epoch if driver_graphs.not_capturing_here(_conn(), wire) else None


def _context_device(device: Any) -> int:
    epoch = _known.epoch()
    err, dev = driver.cuCtxGetDevice()
    if not err:
        device[0] = value = as_int(dev)
        _known.note(DEVICE, value, epoch)
    return int(err)


@_entry
def cuCtxGetDevice(device: Any) -> int:
    if not device:
        return INVALID_VALUE
    return _context_device(device)


@_entry
def cuCtxGetDevice_v2(device: Any, ctx: int) -> int:
    if device == ffi.NULL:
        return INVALID_VALUE
    return _in_context(ctx, lambda: _context_device(device))  # ctx 0: the current one


@_entry
def cuCtxSynchronize_v2(ctx: int) -> int:
    return _in_context(ctx, lambda: _err(driver.cuCtxSynchronize()))


# -- pointer attributes ---------------------------------------------------------------------


@_entry
def cuPointerGetAttributes(count: int, attributes: Any, data: int, ptr: int) -> int:
    attrs = _ints(attributes, count)
    if len(attrs) != count or not data:
        return INVALID_VALUE
    types = [_POINTER_ATTRIBUTES.get(a) for a in attrs]
    if None in types:
        missing = attrs[types.index(None)]
        raise NotSupportedRemotely(f"cuPointerGetAttributes: attribute {missing}")
    err, values = driver.cuPointerGetAttributes(count, attrs, ptr)
    if err:
        return int(err)
    slots = _words(data, count)
    for slot, ctype, value in zip(slots, types, values or [], strict=True):
        if slot:  # attributes the pointer does not have read as 0, as the driver leaves them
            number = 0 if value is None else int(value if isinstance(value, bool) else as_int(value))
            ffi.cast(f"{ctype} *", slot)[0] = number
    return SUCCESS


# -- page-locked and mapped host memory: cricket_client.driver's (runtime_host, mapped_host) --


def _host_alloc(pp: int, size: int, flags: int) -> int:
    if not pp:
        return INVALID_VALUE
    err, address = driver.cuMemHostAlloc(size, flags)
    if not err:
        ffi.cast("uintptr_t *", pp)[0] = address
    return int(err)


@_entry
def cuMemAllocHost_v2(pp: int, size: int) -> int:
    return _host_alloc(pp, size, 0)


@_entry
def cuMemHostAlloc(pp: int, size: int, flags: int) -> int:
    return _host_alloc(pp, size, flags)


@_entry
def cuMemFreeHost(p: int) -> int:
    return _err(driver.cuMemFreeHost(p))


@_entry
def cuMemHostRegister_v2(p: int, size: int, flags: int) -> int:
    return _err(driver.cuMemHostRegister(p, size, flags))


@_entry
def cuMemHostUnregister(p: int) -> int:
    return _err(driver.cuMemHostUnregister(p))


# attribute -> (C type written at *data, how the value is read)
_POINTER_ATTRIBUTES: dict[int, str] = {
    1: "uintptr_t",  # CONTEXT
    2: "unsigned int",  # MEMORY_TYPE
    3: "uintptr_t",  # DEVICE_POINTER
    4: "uintptr_t",  # HOST_POINTER
    6: "unsigned int",  # SYNC_MEMOPS
    7: "unsigned long long",  # BUFFER_ID
    8: "unsigned int",  # IS_MANAGED
    9: "int",  # DEVICE_ORDINAL
    11: "uintptr_t",  # RANGE_START_ADDR
    12: "size_t",  # RANGE_SIZE
    13: "unsigned int",  # MAPPED
}


@_entry
def cuPointerGetAttribute(data: int, attribute: int, ptr: int) -> int:
    ctype = _POINTER_ATTRIBUTES.get(attribute)
    if ctype is None:
        raise NotSupportedRemotely(f"cuPointerGetAttribute: attribute {attribute}")
    err, value = driver.cuPointerGetAttribute(attribute, ptr)
    if not err:
        ffi.cast(ctype + " *", data)[0] = int(as_int(value) if not isinstance(value, bool) else value)
    return int(err)


# -- modules, libraries, functions ----------------------------------------------------------


def _words(array: int, count: int) -> list[int]:
    if not array or count <= 0:
        return []
    return list(ffi.unpack(ffi.cast("uintptr_t *", array), count))


def _ints(array: Any, count: int) -> list[int]:
    if array == ffi.NULL or count <= 0:
        return []
    return list(ffi.unpack(array, count))


def _set_handle(out: Any, result: tuple[Any, ...]) -> int:
    err = int(result[0])
    if not err:
        out[0] = _ptr(result[1])
    return err


@_entry
def cuModuleLoadDataEx(module: Any, image: int, n: int, options: Any, values: int) -> int:
    opts = _ints(options, n)
    return _set_handle(module, driver.cuModuleLoadDataEx(image, len(opts), opts, _words(values, len(opts))))


@_entry
def cuLibraryLoadData(
    library: Any,
    code: int,
    jit_options: Any,
    jit_values: int,
    n_jit: int,
    lib_options: Any,
    lib_values: int,
    n_lib: int,
) -> int:
    jo, lo = _ints(jit_options, n_jit), _ints(lib_options, n_lib)
    result = driver.cuLibraryLoadData(
        code, jo, _words(jit_values, len(jo)), len(jo), lo, _words(lib_values, len(lo)), len(lo)
    )
    return _set_handle(library, result)


_kernel_functions: dict[tuple[int, int], int] = {}  # (connection, CUkernel) -> its CUfunction


def _func(handle: int) -> int:
    """A CUfunction, or a CUkernel given where the driver accepts one cast to CUfunction
    (launches, function attributes): its function in the current context, asked for once."""
    if handle >> KIND_SHIFT != HandleKind.KERNEL:
        return handle
    conn = _conn()
    key = (id(conn), handle)
    func = _kernel_functions.get(key)
    if func is None:
        err, r = conn.sync("CU_KERNEL_GET_FUNCTION", handle)
        if err:
            return handle  # the call with the kernel itself fails with the server's reason
        func = _kernel_functions[key] = int(r.value)
    return func


@_entry
def cuFuncGetParamCount(func: int, count: Any) -> int:
    err, layout = _conn().param_layout(_func(func))
    if not err:
        count[0] = len(layout)
    return err


# function or kernel handle -> the C string of its name handed out last (kept alive: the
# driver's answer points into memory the driver owns)
_names: dict[int, Any] = {}


def _name_of(out: Any, handle: int, call: Callable[[int], tuple[Any, ...]]) -> int:
    if not out:
        return INVALID_VALUE
    err, name = call(handle)
    if not err:
        kept = _names[handle] = ffi.new("char[]", name)
        out[0] = kept
    return int(err)


@_entry
def cuFuncGetName(name: Any, func: int) -> int:
    if func >> KIND_SHIFT == HandleKind.KERNEL:  # a CUkernel given as a CUfunction
        return _name_of(name, func, driver.cuKernelGetName)
    return _name_of(name, func, driver.cuFuncGetName)


@_entry
def cuFuncIsLoaded(state: Any, func: int) -> int:
    state[0] = 1  # CU_FUNCTION_LOADING_STATE_LOADED: the server loads modules eagerly
    return SUCCESS


@_entry
def cuFuncLoad(func: int) -> int:
    return SUCCESS


# cuKernel*: the kernel's function in the current context (`dev` is the current context's)
@_entry
def cuKernelGetAttribute(pi: Any, attrib: int, kernel: int, dev: int) -> int:
    if pi == ffi.NULL:
        return INVALID_VALUE
    err, value = driver.cuFuncGetAttribute(attrib, _func(kernel))
    if not err:
        pi[0] = value
    return int(err)


@_entry
def cuKernelSetAttribute(attrib: int, value: int, kernel: int, dev: int) -> int:
    return _err(driver.cuFuncSetAttribute(_func(kernel), attrib, value))


@_entry
def cuKernelSetCacheConfig(kernel: int, config: int, dev: int) -> int:
    return _err(driver.cuFuncSetCacheConfig(_func(kernel), config))


@_entry
def cuKernelGetParamInfo(kernel: int, index: int, offset: Any, size: Any) -> int:
    err, off, length = driver.cuFuncGetParamInfo(_func(kernel), index)
    if not err:
        if offset != ffi.NULL:
            offset[0] = off
        if size != ffi.NULL:
            size[0] = length
    return int(err)


@_entry
def cuKernelGetParamCount(kernel: int, count: Any) -> int:
    return cuFuncGetParamCount(kernel, count)


@_entry
def cuKernelGetName(name: Any, kernel: int) -> int:
    return _name_of(name, kernel, driver.cuKernelGetName)


# -- launches -------------------------------------------------------------------------------


# per connection: function or kernel handle given -> its packer and function id, made once
_launch_plans: weakref.WeakKeyDictionary[Any, dict[int, tuple[ParamPacker, int]]] = (
    weakref.WeakKeyDictionary()
)
# the default streams as the wire names them (cricket_client._driver_base._stream)
_WIRE_STREAMS = {0: 0, CU_STREAM_LEGACY: 0, CU_STREAM_PER_THREAD: _WIRE_PER_THREAD}


_last_plans: tuple[Any, dict[int, tuple[ParamPacker, int]]] = (None, {})  # the latest connection's


def _launch_plan(conn: Any, f: int) -> tuple[ParamPacker, int] | None:
    global _last_plans
    last, plans = _last_plans
    if last is not conn:
        plans = _launch_plans.setdefault(conn, {})
        _last_plans = (conn, plans)
    plan = plans.get(f)
    if plan is not None and conn.param_layout(plan[1])[1] is plan[0].layout:
        return plan  # the layout the connection keeps for the function (no call: it is cached)
    func = _func(f)
    if func == f and f >> KIND_SHIFT == HandleKind.KERNEL:
        return None  # not resolved: the general path reports it
    err, layout = conn.param_layout(func)
    if err:
        return None
    plan = plans[f] = (ParamPacker(ffi, lib, layout), func)
    return plan


@_entry
def cuLaunchKernel(
    f: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int, stream: int,
    params: int, extra: int,
) -> int:
    # The fast path: the function's packer (made once) packs kernelParams in C, and the
    # launch goes as cricket_client.driver sends it (batched, pipelined).
    if not extra:
        conn = _conn()
        plan = _launch_plan(conn, f)
        if plan is not None and not conn.replay_log.logging:
            packer, func = plan
            body = packer.body(
                func, gx, gy, gz, bx, by, bz, shared, _WIRE_STREAMS.get(stream, stream), params
            )
            if body is not None:
                conn.post_launch(body)
                return SUCCESS
    return _err(
        driver.cuLaunchKernel(
            _func(f), gx, gy, gz, bx, by, bz, shared, stream, params or None, extra or None
        )
    )


@_entry
def cuLaunchCooperativeKernel(
    f: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int, stream: int,
    params: int,
) -> int:
    return _err(
        driver.cuLaunchCooperativeKernel(
            _func(f), gx, gy, gz, bx, by, bz, shared, stream, params or None
        )
    )


@_entry
def cuLaunchKernelEx(config: Any, f: int, params: int, extra: int) -> int:
    if config == ffi.NULL:
        return INVALID_VALUE
    c = config
    cooperative = False
    attrs = int(ffi.cast("uintptr_t", c.attrs))
    for i in range(c.numAttrs):
        base = attrs + i * LAUNCH_ATTRIBUTE_SIZE
        ident = ffi.cast("int *", base)[0]
        if ident == LAUNCH_ATTRIBUTE_COOPERATIVE:
            cooperative = bool(ffi.cast("int *", base + 8)[0])
            continue
        # other attributes (cluster dimensions, priority, ...): one CU_LAUNCH_KERNEL_EX call
        from .entries_families import launch_config

        return _err(driver.cuLaunchKernelEx(launch_config(c), _func(f), params or None, extra or None))
    grid, block = (c.gridDimX, c.gridDimY, c.gridDimZ), (c.blockDimX, c.blockDimY, c.blockDimZ)
    stream = int(ffi.cast("uintptr_t", c.hStream))
    if cooperative:
        if extra:
            raise NotSupportedRemotely("cuLaunchKernelEx: a cooperative launch with `extra`")
        return _err(driver.cuLaunchCooperativeKernel(_func(f), *grid, *block, c.sharedMemBytes, stream, params or None))
    # a plain launch (what cuda.core and numba-cuda send): cuLaunchKernel's fast path
    return cuLaunchKernel(f, *grid, *block, c.sharedMemBytes, stream, params, extra)


# -- host functions: run on the calling thread once the stream's earlier work is done --------
# CUDA runs them on a driver thread, later work on the stream waiting for them; here the caller
# waits for the stream, then runs the function: same order, synchronous (a host function may
# not call CUDA either way).


def _run_host_function(stream: int, call: Callable[[], None]) -> int:
    err = _err(driver.cuStreamSynchronize(stream))
    if err:
        return err
    call()
    return SUCCESS


@_entry
def cuLaunchHostFunc(stream: int, fn: int, data: int) -> int:
    if not fn:
        return INVALID_VALUE
    host_fn = ffi.cast("void (*)(void *)", fn)
    return _run_host_function(stream, lambda: host_fn(ffi.cast("void *", data)))


@_entry
def cuLaunchHostFunc_v2(stream: int, fn: int, data: int, sync_mode: int) -> int:
    return cuLaunchHostFunc(stream, fn, data)


@_entry
def cuStreamAddCallback(stream: int, callback: int, data: int, flags: int) -> int:
    if not callback or flags:
        return INVALID_VALUE
    fn = ffi.cast("void (*)(uintptr_t, int, void *)", callback)
    return _run_host_function(stream, lambda: fn(stream, SUCCESS, ffi.cast("void *", data)))


# -- capture interaction modes: the calling thread's, kept by cricket_client.capture_modes -----


@_entry
def cuThreadExchangeStreamCaptureMode(mode: Any) -> int:
    """*mode is read and written (the mode given, then the thread's previous one)."""
    if mode == ffi.NULL:
        return INVALID_VALUE
    err, old = driver.cuThreadExchangeStreamCaptureMode(mode[0])
    if not err:
        mode[0] = int(old)
    return int(err)


# the later families (pools, virtual memory, graphs, flags, arrays, peers): their own module;
# then every entry that needs nothing of its own, generated (tools/gen_mirrors.py)
from . import _entries_generated, entries_families  # noqa: E402, F401
