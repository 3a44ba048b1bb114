"""The Python side of the runtime's private tables (declared in export_tables.py): one function
per implemented slot, each expressed with calls the client already remotes.

Imported only inside the library. Every slot call arrives at `_export_slot` with the table and
slot index and the arguments as integers; it is logged with `CRICKET_NATIVE_TRACE=1`, and a
slot without an implementation answers CUDA_ERROR_NOT_SUPPORTED naming its table and slot.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from _cricket_libcuda import ffi, lib  # type: ignore[import-not-found]

from .. import driver
from .._types import as_int
from ..connection import get_connection as _conn
from ..errors import NotSupportedRemotely
from ..modules import ImageError, wrapped_fatbin
from .export_tables import TABLES, Slot, Table, table_by_id
from .integrity import DeviceFacts, HashFacts, integrity_answer
from .known_context import CONTEXT, KnownContext

__all__ = ["IMPLEMENTATIONS", "get_export_table"]

log = logging.getLogger("cricket_client.native")

SUCCESS = 0
INVALID_VALUE = 1
INVALID_CONTEXT = 201
INVALID_HANDLE = 400
NOT_SUPPORTED = 801
UNKNOWN = 999

_TRACE = bool(os.environ.get("CRICKET_NATIVE_TRACE"))
_known = KnownContext(lib)
_lock = threading.Lock()
_warned: set[tuple[int, int]] = set()


def _local_error(message: str) -> None:
    try:
        _conn().set_local_error(message)
    except Exception:  # no session (yet): the log names it
        log.debug("no session to record %r", message)


def get_export_table(out: int, uuid: bytes) -> int | None:
    """Write the table with id `uuid` to `*out` and answer CUDA_SUCCESS; None when no table of
    that id is declared (the caller names it)."""
    found = table_by_id(uuid)
    if found is None:
        return None
    index, table = found
    ffi.cast("uintptr_t *", out)[0] = lib.cricket_export_table(index)
    if _TRACE:
        log.warning("cuGetExportTable %s %s -> %d pointers", table.name, table.guid, table.length)
    return SUCCESS


# -- the slots ------------------------------------------------------------------------------


def _signed(value: int, bits: int = 32) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _write_pointer(address: int, value: int) -> None:
    ffi.cast("uintptr_t *", address)[0] = value


def _load_fatbin(call: str, module: int, fatbin: int) -> int:
    """Load the fatbin at host address `fatbin` as cuModuleLoadFatBinary does; the module's
    handle to `*module`."""
    if not module or not fatbin:
        _local_error(f"{call}: NULL module pointer or image")
        return INVALID_VALUE
    err, handle = driver.cuModuleLoadFatBinary(fatbin)
    err = int(err)
    if not err:
        _write_pointer(module, as_int(handle))
    return err


def _wrapped_fatbin(call: str, wrapper: int) -> int | None:
    """The fatbin address a __fatBinC_Wrapper_t holds (version 1: the fatbin alone), or None
    (the reason recorded)."""
    if not wrapper:
        _local_error(f"{call}: NULL fat binary wrapper")
        return None
    try:
        return wrapped_fatbin(wrapper)
    except ImageError as exc:
        _local_error(f"{call}: {exc}")
        return None
    except NotSupportedRemotely as exc:
        raise NotSupportedRemotely(f"{call}: {exc}") from None


def module_from_wrapper(module: int, wrapper: int) -> int:
    call = "CUDART_INTERFACE slot 1 (module from a fat binary wrapper)"
    data = _wrapped_fatbin(call, wrapper)
    return INVALID_VALUE if data is None else _load_fatbin(call, module, data)


def _no_extras(call: str, arg3: int, arg4: int, arg5: int) -> None:
    if arg3 or arg4 or (arg5 & 0xFFFFFFFF):
        raise NotSupportedRemotely(
            f"{call}: arguments 3-5 ({arg3:#x}, {arg4:#x}, {arg5 & 0xFFFFFFFF}) have no known "
            "meaning; only NULL, NULL, 0 are supported remotely"
        )


def module_from_wrapper_ext1(module: int, wrapper: int, arg3: int, arg4: int, arg5: int) -> int:
    call = "CUDART_INTERFACE slot 6 (module from a fat binary wrapper)"
    _no_extras(call, arg3, arg4, arg5)
    data = _wrapped_fatbin(call, wrapper)
    return INVALID_VALUE if data is None else _load_fatbin(call, module, data)


def module_from_fatbin_ext2(fatbin: int, module: int, arg3: int, arg4: int, arg5: int) -> int:
    call = "CUDART_INTERFACE slot 8 (module from a fat binary)"
    _no_extras(call, arg3, arg4, arg5)
    return _load_fatbin(call, module, fatbin)


def primary_context(pctx: int, dev: int) -> int:
    if not pctx:
        return INVALID_VALUE
    err, ctx = driver.cuDevicePrimaryCtxRetain(_signed(dev))
    err = int(err)
    if not err:
        _write_pointer(pctx, as_int(ctx))
    return err


# Context-local storage: (context, key) -> (value, destructor), kept by the client. A NULL
# context means the calling thread's current one. The destructors are not run (the entries of a
# destroyed context stay until the program ends).
_storage: dict[tuple[int, int], tuple[int, int]] = {}


def _context(ctx: int) -> int | None:
    """`ctx`, or the current context (None: none); the answer is kept in C as the library's
    cuCtxGetCurrent keeps it (the storage's get with a NULL context is then answered there)."""
    if ctx:
        return ctx
    epoch = _known.epoch()
    err, current = driver.cuCtxGetCurrent()
    if int(err) or current is None or not as_int(current):
        return None
    _known.note(CONTEXT, as_int(current), epoch)
    return as_int(current)


def cls_put(ctx: int, key: int, value: int, destructor: int) -> int:
    target = _context(ctx)
    if target is None:
        return INVALID_HANDLE
    with _lock:
        _storage[(target, key)] = (value, destructor)
        lib.cricket_storage_put(target, key, value)  # gets are answered in C (context_storage)
    return SUCCESS


def cls_delete(ctx: int, key: int) -> int:
    target = _context(ctx)
    with _lock:
        found = _storage.pop((target, key), None) if target is not None else None
        if found is not None:
            lib.cricket_storage_delete(target, key)
    return SUCCESS if found is not None else INVALID_HANDLE


def cls_get(value: int, ctx: int, key: int) -> int:
    if not value:
        return INVALID_VALUE
    target = _context(ctx)
    with _lock:
        found = _storage.get((target, key)) if target is not None else None
    if found is None:
        return INVALID_HANDLE
    _write_pointer(value, found[0])
    return SUCCESS


# Tool callback areas: the runtime gets a driver-owned buffer and its size for each (the sizes
# the public notes give, 1024 and 14; read as counts of 32-bit words, the buffers hold that
# many). Zeroed: no tool (CUPTI) is subscribed through this driver.
_CALLBACK_SIZES = {2: 1024, 6: 14}
_CALLBACK_AREAS = {k: ffi.new("uint32_t[]", n) for k, n in _CALLBACK_SIZES.items()}


def _callback_area(which: int, ptr: int, size: int) -> int:
    if ptr:
        _write_pointer(ptr, int(ffi.cast("uintptr_t", _CALLBACK_AREAS[which])))
    if size:
        _write_pointer(size, _CALLBACK_SIZES[which])
    return SUCCESS


def callback_area_1(ptr: int, size: int) -> int:
    return _callback_area(2, ptr, size)


def callback_area_2(ptr: int, size: int) -> int:
    return _callback_area(6, ptr, size)


def thread_context(ctx_out: int, _id: int) -> int:
    """TOOLS_TLS slot 2: the calling thread's current context (0: none)."""
    if not ctx_out:
        return INVALID_VALUE
    _write_pointer(ctx_out, _context(0) or 0)
    return SUCCESS


def context_number(ctx: int, number: int) -> int:
    """RUNTIME_13_4 slot 4: the context's unique id (cuCtxGetId)."""
    if not number:
        return INVALID_VALUE
    target = _context(ctx)
    if target is None:
        return INVALID_CONTEXT
    err, value = driver.cuCtxGetId(target)
    if int(err):
        return int(err)
    ffi.cast("unsigned long long *", number)[0] = int(value or 0)
    return SUCCESS


# Stream objects (RUNTIME_13_4 slot 51): one per (context, stream handle), kept for the
# program's life like the driver's (a stream handle reused after cuStreamDestroy gets its old
# object back, which names the same handle: slot 39 asks the server for the id each time).
# Laid out as the real driver's begin (words 0, 2, 10: 1, the stream's context, the handle).
_STREAM_OBJECT_WORDS = 12
_DEFAULT_STREAMS = (0, 1, 2)  # NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
_stream_objects: dict[tuple[int, int], Any] = {}
_object_streams: dict[int, tuple[int, int]] = {}


def stream_object(ctx: int, stream: int, out: int) -> int:
    """RUNTIME_13_4 slot 51: the driver's object of `stream` (a default stream: `ctx`'s)."""
    if not out:
        return INVALID_VALUE
    if stream in _DEFAULT_STREAMS:
        if not ctx:
            return INVALID_HANDLE
        owner = ctx
    else:
        err, found = driver.cuStreamGetCtx(stream)
        if int(err):
            return int(err)
        owner = as_int(found)
    with _lock:
        obj = _stream_objects.get((owner, stream))
        if obj is None:
            obj = ffi.new("uint64_t[]", _STREAM_OBJECT_WORDS)
            obj[0], obj[2], obj[10] = 1, owner, stream
            _stream_objects[(owner, stream)] = obj
            _object_streams[int(ffi.cast("uintptr_t", obj))] = (owner, stream)
    _write_pointer(out, int(ffi.cast("uintptr_t", obj)))
    return SUCCESS


def stream_object_id(ctx: int, obj: int, out: int) -> int:
    """RUNTIME_13_4 slot 39: the id of a slot-51 object's stream (cuStreamGetId)."""
    if not out:
        return INVALID_VALUE
    with _lock:
        found = _object_streams.get(obj)
    if found is None:
        return INVALID_HANDLE
    owner, stream = found
    switch = stream in _DEFAULT_STREAMS and _context(0) != owner
    if switch and int(driver.cuCtxPushCurrent(owner)[0]):
        return INVALID_CONTEXT
    try:
        err, value = driver.cuStreamGetId(stream)
    finally:
        if switch:
            driver.cuCtxPopCurrent()
    if int(err):
        return int(err)
    ffi.cast("unsigned long long *", out)[0] = int(value or 0)
    return SUCCESS


def module_functions(ctx: int, module: int, callback: int, user: int, arg4: int, arg5: int) -> int:
    """TOOLS_MODULE slot 7: `callback(user, function, module)` for each function of `module`;
    their number (0, the callback not called, when the module is not the session's)."""
    if not module or not callback:
        return 0
    err, count = driver.cuModuleGetFunctionCount(module)
    functions: list[Any] | None = []
    if not int(err) and count:
        err, functions = driver.cuModuleEnumerateFunctions(count, module)
    if int(err):
        _local_error(f"TOOLS_MODULE slot 7: the functions of module {module:#x}: CUresult {int(err)}")
        return 0
    call = ffi.cast("void (*)(void *, uintptr_t, uintptr_t)", callback)
    found = [as_int(f) for f in functions or []]
    for function in found:
        call(ffi.cast("void *", user), function, module)
    return len(found)


def _table_address(name: str) -> int:
    index = next(i for i, table in enumerate(TABLES) if table.name == name)
    return int(lib.cricket_export_table(index))


class _SlotFailed(Exception):
    """A driver call a slot made failed: the slot answers its CUresult."""

    def __init__(self, err: int) -> None:
        super().__init__(err)
        self.err = err


def _ok(found: tuple[Any, ...]) -> Any:
    """The value of a driver call's (CUresult, value); _SlotFailed on a failure."""
    err = int(found[0])
    if err:
        raise _SlotFailed(err)
    return found[1]


def _hash_facts() -> HashFacts:
    """The facts the integrity answer covers, as the runtime sees them through this library."""
    attr = driver.CUdevice_attribute
    devices = []
    for dev in range(_ok(driver.cuDeviceGetCount())):
        uuid = _ok(driver.cuDeviceGetUuid(dev)).bytes
        domain, bus, device = (
            _ok(driver.cuDeviceGetAttribute(a, dev))
            for a in (attr.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, attr.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
                      attr.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)
        )  # fmt: skip
        devices.append(DeviceFacts(uuid, domain, bus, device))
    integrity_table = _table_address("INTEGRITY_CHECK")
    return HashFacts(
        driver_version=_ok(driver.cuDriverGetVersion()),
        process_id=os.getpid(),
        thread_id=threading.get_ident(),  # pthread_self(), the calling thread's
        cudart_table=_table_address("CUDART_INTERFACE"),
        integrity_table=integrity_table,
        check_function=int(ffi.cast("uintptr_t *", integrity_table)[1]),
        devices=devices,
    )


def integrity_check(version: int, unix_seconds: int, result: int) -> int:
    """The runtime's check that this driver is NVIDIA's (cricket_client.native.integrity)."""
    if not result:
        return INVALID_VALUE
    try:
        facts = None if version % 10 < 2 else _hash_facts()  # the fixed answers need none
    except _SlotFailed as failed:
        return failed.err
    answer = integrity_answer(version & 0xFFFFFFFF, unix_seconds, facts)
    ffi.memmove(ffi.cast("unsigned char *", result), answer, len(answer))
    return SUCCESS


def context_not_wrapped(ctx: int, wrapped: int, unwrapped: int) -> int:
    """No context made through this driver wraps another (see export_tables.py)."""
    if not wrapped:
        return INVALID_VALUE
    ffi.cast("unsigned int *", wrapped)[0] = 0
    return SUCCESS


IMPLEMENTATIONS: dict[str, Callable[..., int]] = {
    "context_not_wrapped": context_not_wrapped,
    "integrity_check": integrity_check,
    "callback_area_1": callback_area_1,
    "callback_area_2": callback_area_2,
    "thread_context": thread_context,
    "context_number": context_number,
    "stream_object": stream_object,
    "stream_object_id": stream_object_id,
    "module_functions": module_functions,
    "module_from_wrapper": module_from_wrapper,
    "module_from_wrapper_ext1": module_from_wrapper_ext1,
    "module_from_fatbin_ext2": module_from_fatbin_ext2,
    "primary_context": primary_context,
    "cls_put": cls_put,
    "cls_delete": cls_delete,
    "cls_get": cls_get,
}


# -- dispatch -------------------------------------------------------------------------------


def _describe(table: Table, slot: Slot, args: list[int]) -> str:
    shown = ", ".join(hex(a) for a in args)
    return f"table {table.name} {table.guid} slot {slot.index} ({slot.name}) called ({shown})"


def _unsupported(table: Table, slot: Slot, args: list[int]) -> int:
    message = (
        f"cuGetExportTable: {_describe(table, slot, args)}: not supported remotely by Cricket "
        "(native libcuda)"
    )
    with _lock:
        first = (id(table), slot.index) not in _warned
        _warned.add((id(table), slot.index))
    if first:
        log.log(logging.DEBUG if slot.quiet else logging.WARNING, "cricket: %s", message)
    _local_error(message)
    return NOT_SUPPORTED


def _failed(kind: Any, exc: BaseException, tb: Any) -> None:
    if isinstance(exc, NotSupportedRemotely | NotImplementedError):
        log.warning("cricket: %s", exc)
    else:
        log.error("a private table slot failed in the client", exc_info=(kind, exc, tb))
    _local_error(str(exc))


@ffi.def_extern(name="py_export_slot", error=UNKNOWN, onerror=_failed)
def _export_slot(t: int, s: int, raw: Any, n: int) -> int:
    table = TABLES[t]
    slot = table.slot(s)
    args = [int(raw[i]) for i in range(n)]
    if _TRACE:
        log.warning("cricket: %s", _describe(table, slot, args))
    impl = IMPLEMENTATIONS.get(slot.implementation or "")
    if impl is None:
        return _unsupported(table, slot, args)
    try:
        return impl(*args)
    except (NotSupportedRemotely, NotImplementedError) as exc:
        log.warning("cricket: %s", exc)
        _local_error(str(exc))
        return NOT_SUPPORTED
