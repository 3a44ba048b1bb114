"""`cuda.bindings.driver` over the network: the same names, arguments and return tuples.

Use it in place of cuda-python's module: `from cricket_client import driver as cuda`. Every
function returns a tuple whose first element is the CUresult, as cuda-python's do; calls run on
the session of `cricket_client.get_connection()` (the default connection, opened from
REMOTE_GPU_ADDRESS on first use). Launches, asynchronous copies and memsets, event records and
stream waits are pipelined: their errors come back from the next synchronizing call (D6).
A small cuMemcpyHtoD that the client can prove would succeed returns once sent, as CUDA
returns once the source is staged (cricket_client.early_copies).
cuGetErrorName and cuGetErrorString answer locally. Any other name of cuda.bindings.driver
raises NotSupportedRemotely (an AttributeError) naming it.

The functions that only convert their arguments, send one procedure and wrap its reply are
declared one line each in cricket_client/driver.mirrors and generated
(cricket_client._driver_generated, `make stubs`); the ones written here need more.
"""

from __future__ import annotations

import copy
import struct
from collections.abc import Sequence
from typing import Any

from . import _enums
from ._args import c_int, size_t, uint, unsigned
from ._driver_base import _SUCCESS, _conn, _fail, _handle, _out, _stream
from ._driver_base import _WIRE_PER_THREAD as _WIRE_PER_THREAD  # for the family modules
from ._driver_base import _name as _name
from ._driver_generated import *  # noqa: F403  (the mirrors declared in driver.mirrors)
from ._driver_generated import cuMemcpyDtoD, cuMemcpyDtoDAsync
from ._enums import *  # noqa: F403  (the enums and constants of cuda.bindings.driver)
from ._enums import (
    DRIVER_NAMES,
    CUjit_option,
    CUlibraryOption,
    CUmemorytype,
    CUpointer_attribute,
    CUresult,
)
from ._types import (
    CUcontext,
    CUdevice,
    CUdeviceptr,
    CUevent,
    CUfunction,
    CUkernel,
    CUlibrary,
    CUmodule,
    CUstream,
    CUuuid,
    as_int,
)
from .connection import Connection
from .datapath import DataPaths
from .datapath.select import Mode, Path
from .driver_arrays import *  # noqa: F403  (arrays, 2D/3D copies, texture and surface objects)
from .early_copies import copy_early, returns_early
from .errors import NotSupportedRemotely, error_string
from .host_buffers import HostBufferError, host_address, read_host, writable_view, write_host
from .host_functions import CUhostFn, CUstreamCallback
from .kernel_args import LaunchArgumentError, LaunchName, pack_kernel_params
from .known_answers import stream_settled
from .launch_templates import launch_key
from .modules import ImageError, image_bytes
from .standins import STAND_IN_ATTRIBUTE

_INVALID_VALUE = CUresult.CUDA_ERROR_INVALID_VALUE
_NOT_SUPPORTED = CUresult.CUDA_ERROR_NOT_SUPPORTED

# Copies larger than this travel as several calls, all in flight together (bounded records and
# memory on both sides; the server's device copy of one chunk overlaps the transfer of the next).
COPY_CHUNK = 4 << 20


def _padded(text: str, length: int) -> bytes:
    raw = text.encode()[: max(length - 1, 0)]
    return raw + b"\0" * (length - len(raw))


# -- errors (local) -------------------------------------------------------------------------


def cuGetErrorName(error: Any) -> tuple[Any, bytes | None]:
    try:
        return (_SUCCESS, CUresult(int(error)).name.encode())
    except ValueError:
        return (_INVALID_VALUE, None)


def cuGetErrorString(error: Any) -> tuple[Any, bytes | None]:
    text = error_string(int(error))
    if text is None:
        return (_INVALID_VALUE, None)
    return (_SUCCESS, text.encode())


# -- initialization, devices ----------------------------------------------------------------


def cuDeviceGetName(length: int, dev: Any) -> tuple[Any, bytes | None]:
    length = c_int(length, "cuDeviceGetName: length")
    err, r = _conn().sync("CU_DEVICE_GET_NAME", as_int(dev))
    return _out(err, _padded(r.value, length) if not err else None)


def cuDeviceGetPCIBusId(length: int, dev: Any) -> tuple[Any, bytes | None]:
    length = c_int(length, "cuDeviceGetPCIBusId: length")
    err, r = _conn().sync("CU_DEVICE_GET_PCI_BUS_ID", as_int(dev))
    return _out(err, _padded(r.value, length) if not err else None)


# -- contexts -------------------------------------------------------------------------------


def cuCtxCreate(ctxCreateParams: Any, flags: int, dev: Any) -> tuple[Any, CUcontext | None]:
    conn = _conn()
    if ctxCreateParams is not None:
        return _fail(
            conn,
            _NOT_SUPPORTED,
            "cuCtxCreate: ctxCreateParams (execution affinity, CIG) is not supported remotely; "
            "pass None",
            1,
        )
    err, r = conn.sync("CU_CTX_CREATE", uint(flags, "cuCtxCreate: flags"), as_int(dev))
    return _out(err, CUcontext(r.value) if not err else None)


# -- memory ---------------------------------------------------------------------------------


def _bulk(conn: Connection) -> DataPaths:
    """The connection's copy routing (cricket_client.datapath), made on first use."""
    paths = conn.datapaths
    if paths is None:
        paths = conn.datapaths = DataPaths(conn)
    return paths


def _inline(conn: Connection, n: int, *, dtoh: bool = False) -> bool:
    """A copy small enough to travel inline in its call record whatever the bulk paths are
    (CRICKET_DATA_PATH=auto): no routing to do."""
    paths = _bulk(conn)
    limit = paths.limits.dtoh_small if dtoh else paths.limits.small
    if n < limit and paths.mode is Mode.AUTO:
        paths.last_path = Path.RPC
        return True
    return False


def _chunks(n: int) -> list[tuple[int, int]]:
    return [(off, min(COPY_CHUNK, n - off)) for off in range(0, n, COPY_CHUNK)]


def _htod(call: str, dst: int, src: Any, n: int, stream: int | None) -> tuple[Any]:
    conn = _conn()
    try:
        data = read_host(src, n, f"{call}: srcHost")
    except HostBufferError as exc:
        raise TypeError(str(exc)) from None
    if stream is not None and _graphs.capturing(conn, stream):
        return _graphs.capture_host_copy(conn, call, True, dst, src, n, stream)
    # as CUDA returns from a pageable copy once the source is staged
    if (
        stream is None
        and returns_early(conn, dst, n, _graphs.capturing_any(conn))
        and copy_early(conn, _bulk(conn), dst, data)
    ):
        return (_SUCCESS,)
    if stream is None and _inline(conn, n):  # the direct synchronous path: one record each way
        return _out(conn.call("CU_MEMCPY_HTOD", dst, data)[0])
    routed = _bulk(conn).htod(dst, data, stream) if n else None
    if routed is not None:
        return _out(routed)
    if stream is None:
        if n <= COPY_CHUNK:
            return _out(conn.sync("CU_MEMCPY_HTOD", dst, data)[0])
        err, _ = conn.sync_many(
            "CU_MEMCPY_HTOD", [(dst + off, data[off : off + m]) for off, m in _chunks(n)]
        )
        return _out(err)
    # Pipelined: the caller may reuse its buffer at once, so the bytes are taken now.
    for off, m in _chunks(n) or [(0, 0)]:
        conn.post("CU_MEMCPY_HTOD_ASYNC", dst + off, bytes(data[off : off + m]), stream)
    return (_SUCCESS,)


def _dtoh(call: str, dst: Any, src: int, n: int, stream: int | None) -> tuple[Any]:
    """Chunks in flight together, each received straight into its part of `dst`."""
    conn = _conn()
    if stream is not None and _graphs.capturing(conn, stream):
        return _graphs.capture_host_copy(conn, call, False, src, dst, n, stream)
    try:
        view = writable_view(dst, n, f"{call}: dstHost")
    except HostBufferError as exc:
        raise TypeError(str(exc)) from None
    mapped = conn.mapped if conn.mapped is not None and conn.mapped.ranges else None
    if mapped is not None:  # mapped host memory comes back with the read (mapped_host)
        address = host_address(dst)
        if address is not None and mapped.overlaps(address, n, device=False):
            err = mapped.pull(conn, stream)  # a read into mapped memory lands after
            mapped = None
        else:
            err = mapped.push(conn)
        if err:
            return _out(err)
    routed = _bulk(conn).dtoh(view, src, stream) if n and not _inline(conn, n, dtoh=True) else None
    if routed is not None:
        err = routed or (mapped.pull(conn, stream) if mapped is not None else 0)
    else:
        proc, on = ("CU_MEMCPY_DTOH", ()) if stream is None else ("CU_MEMCPY_DTOH_ASYNC", (stream,))
        if n <= COPY_CHUNK:  # one call (a small read: a loop's hot path)
            calls = [((src, n, *on), view)]
        else:
            calls = [((src + off, m, *on), view[off : off + m]) for off, m in _chunks(n)]
        if mapped is not None:
            calls = mapped.read_calls(stream) + calls
        err = conn.sync_into(proc, calls)
        if mapped is not None and not err:
            mapped.settle()
    if stream is not None and err == 0:
        stream_settled(conn, stream)  # the server waited for the stream to copy its bytes
    return _out(err)


def cuMemcpyHtoD(dstDevice: Any, srcHost: Any, ByteCount: int) -> tuple[Any]:
    ByteCount = size_t(ByteCount, "cuMemcpyHtoD: ByteCount")
    return _htod("cuMemcpyHtoD", _handle(dstDevice, "dstDevice"), srcHost, ByteCount, None)


def cuMemcpyHtoDAsync(dstDevice: Any, srcHost: Any, ByteCount: int, hStream: Any) -> tuple[Any]:
    ByteCount = size_t(ByteCount, "cuMemcpyHtoDAsync: ByteCount")
    dst = _handle(dstDevice, "dstDevice")
    return _htod("cuMemcpyHtoDAsync", dst, srcHost, ByteCount, _stream(hStream))


def cuMemcpyDtoH(dstHost: Any, srcDevice: Any, ByteCount: int) -> tuple[Any]:
    ByteCount = size_t(ByteCount, "cuMemcpyDtoH: ByteCount")
    return _dtoh("cuMemcpyDtoH", dstHost, _handle(srcDevice, "srcDevice"), ByteCount, None)


def cuMemcpyDtoHAsync(dstHost: Any, srcDevice: Any, ByteCount: int, hStream: Any) -> tuple[Any]:
    ByteCount = size_t(ByteCount, "cuMemcpyDtoHAsync: ByteCount")
    src = _handle(srcDevice, "srcDevice")
    return _dtoh("cuMemcpyDtoHAsync", dstHost, src, ByteCount, _stream(hStream))


def _memcpy(call: str, dst: Any, src: Any, n: int, stream: int | None) -> tuple[Any]:
    """Unified addressing: an address in the server's device range is device memory."""
    conn = _conn()
    dst_dev = not _is_buffer(dst) and conn.is_device_address(_handle(dst, "dst"))
    src_dev = not _is_buffer(src) and conn.is_device_address(_handle(src, "src"))
    if dst_dev and src_dev:
        if stream is None:  # mapped host memory goes and comes back in Connection.call
            return cuMemcpyDtoD(dst, src, n)
        if conn.mapped is not None:  # the program's writes to mapped host memory go first
            err = conn.mapped.push(conn)
            if err:
                return _out(err)
        return cuMemcpyDtoDAsync(dst, src, n, stream)
    if dst_dev:
        return _htod(call, _handle(dst, "dst"), _host(src), n, stream)
    if src_dev:
        return _dtoh(call, _host(dst), _handle(src, "src"), n, stream)
    # host to host: done here, after the stream's earlier work when asked for one
    if stream is not None:
        err = conn.sync("CU_STREAM_SYNCHRONIZE", stream)[0]
        if err:
            return _out(err)
    try:
        write_host(_host(dst), read_host(_host(src), n, f"{call}: src"), f"{call}: dst")
    except HostBufferError as exc:
        raise TypeError(str(exc)) from None
    return (_SUCCESS,)


def _is_buffer(obj: Any) -> bool:
    if isinstance(obj, int) or hasattr(obj, "getPtr"):
        return False
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def _host(obj: Any) -> Any:
    return obj if _is_buffer(obj) else _handle(obj, "host pointer")


def cuMemcpy(dst: Any, src: Any, ByteCount: int) -> tuple[Any]:
    return _memcpy("cuMemcpy", dst, src, size_t(ByteCount, "cuMemcpy: ByteCount"), None)


def cuMemcpyAsync(dst: Any, src: Any, ByteCount: int, hStream: Any) -> tuple[Any]:
    ByteCount = size_t(ByteCount, "cuMemcpyAsync: ByteCount")
    return _memcpy("cuMemcpyAsync", dst, src, ByteCount, _stream(hStream))


def _memset(dst: Any, value: int, width: int, n: int, stream: Any = None, *, asynchronous: bool) -> tuple[Any]:
    call = f"cuMemsetD{8 * width}{'Async' if asynchronous else ''}"
    value = unsigned(value, width, f"{call}: value")
    n = size_t(n, f"{call}: N")
    if asynchronous:
        _conn().post("CU_MEMSET_ASYNC", _handle(dst, "dst"), value, width, n, _stream(stream))
        return (_SUCCESS,)
    conn = _conn()
    address = _handle(dst, "dst")
    err = conn.sync("CU_MEMSET", address, value, width, n)[0]
    mapped = conn.mapped
    if not err and mapped is not None and mapped.overlaps(address, n * width, device=True):
        err = mapped.pull(conn, None)  # mapped host memory shows the bytes on return
    return _out(err)


def cuMemsetD8(dstDevice: Any, uc: int, N: int) -> tuple[Any]:
    return _memset(dstDevice, uc, 1, N, asynchronous=False)


def cuMemsetD16(dstDevice: Any, us: int, N: int) -> tuple[Any]:
    return _memset(dstDevice, us, 2, N, asynchronous=False)


def cuMemsetD32(dstDevice: Any, ui: int, N: int) -> tuple[Any]:
    return _memset(dstDevice, ui, 4, N, asynchronous=False)


def cuMemsetD8Async(dstDevice: Any, uc: int, N: int, hStream: Any) -> tuple[Any]:
    return _memset(dstDevice, uc, 1, N, hStream, asynchronous=True)


def cuMemsetD16Async(dstDevice: Any, us: int, N: int, hStream: Any) -> tuple[Any]:
    return _memset(dstDevice, us, 2, N, hStream, asynchronous=True)


def cuMemsetD32Async(dstDevice: Any, ui: int, N: int, hStream: Any) -> tuple[Any]:
    return _memset(dstDevice, ui, 4, N, hStream, asynchronous=True)


_PTR_BOOL_ATTRS = {
    CUpointer_attribute.CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
    CUpointer_attribute.CU_POINTER_ATTRIBUTE_IS_MANAGED,
    CUpointer_attribute.CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
    CUpointer_attribute.CU_POINTER_ATTRIBUTE_MAPPED,
}
_PTR_DEVPTR_ATTRS = {
    CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
    CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
    CUpointer_attribute.CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
}


def _pointer_value(attribute: int, value: int) -> Any:
    if attribute == CUpointer_attribute.CU_POINTER_ATTRIBUTE_CONTEXT:
        return CUcontext(value)
    if attribute in _PTR_DEVPTR_ATTRS:
        return CUdeviceptr(value)
    if attribute in _PTR_BOOL_ATTRS:
        return bool(value)
    if attribute == CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        return value - (1 << 64) if value >= 1 << 63 else value
    return value


_PA_MEMORY_TYPE = int(CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE)


def cuPointerGetAttribute(attribute: Any, ptr: Any) -> tuple[Any, Any]:
    """Unlike cuPointerGetAttributes, an address that is no allocation of this session (never
    allocated, freed, or another session's) fails with CUDA_ERROR_INVALID_VALUE, as the
    driver fails a pointer it does not know: the memory type, asked for with it, tells."""
    conn = _conn()
    attribute, address = int(attribute), _handle(ptr, "ptr")
    attrs = [attribute] if attribute == _PA_MEMORY_TYPE else [attribute, _PA_MEMORY_TYPE]
    err, items = _pointer_attributes(conn, attrs, address)
    if err:
        return _out(err, None)
    item, kind = items[0], items[-1]
    if item.err:
        return _out(item.err, None)
    if not kind.err and kind.value == 0:
        return _fail(
            conn, _INVALID_VALUE, f"cuPointerGetAttribute: {address:#x} is not a device pointer", 1
        )
    return (_SUCCESS, _pointer_value(attribute, item.value))


def cuPointerGetAttributes(
    numAttributes: int, attributes: Sequence[Any] | None, ptr: Any
) -> tuple[Any, list[Any] | None]:
    attrs = [int(a) for a in (attributes or [])][: int(numAttributes)]
    if len(attrs) != int(numAttributes):
        raise RuntimeError(f"List is too small: {len(attrs)} < {int(numAttributes)}")
    err, items = _pointer_attributes(_conn(), attrs, _handle(ptr, "ptr"))
    if err:
        return _out(err, None)
    # Attributes the pointer does not have read as 0/None, as the driver leaves them.
    return (_SUCCESS, [_pointer_value(v.attribute, v.value) if not v.err else None for v in items])


def _pointer_attributes(conn: Connection, attrs: list[int], address: int) -> tuple[int, list[Any]]:
    """The server's answers for `address`; mapped host memory (mapped_host) answers as the
    host memory it is, its device copy asked for the rest."""
    mapped = conn.mapped.find(address) if conn.mapped is not None else None
    if mapped is None:
        err, r = conn.sync("CU_POINTER_GET_ATTRIBUTES", attrs, address)
        return err, (r.value if not err else [])
    offset = address - mapped.host
    err, r = conn.sync("CU_POINTER_GET_ATTRIBUTES", attrs, mapped.device + offset)
    if err:
        return err, []
    host_answers = {
        _PA_MEMORY_TYPE: int(CUmemorytype.CU_MEMORYTYPE_HOST),
        int(CUpointer_attribute.CU_POINTER_ATTRIBUTE_HOST_POINTER): address,
        int(CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR): mapped.host,
        int(CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_SIZE): mapped.size,
    }
    items = [copy.copy(item) for item in r.value]  # the kept answer of the device copy stays
    for item in items:
        if item.attribute in host_answers:  # a device allocation has no host pointer
            item.err, item.value = 0, host_answers[item.attribute]
    return 0, items


# -- modules, libraries, functions ----------------------------------------------------------

_LOG_BUFFERS: dict[int, str] = {
    CUjit_option.CU_JIT_INFO_LOG_BUFFER: "info",
    CUjit_option.CU_JIT_ERROR_LOG_BUFFER: "error",
}
_LOG_SIZES: dict[int, str] = {
    CUjit_option.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: "info",
    CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: "error",
}
_UNSUPPORTED_JIT = {
    CUjit_option.CU_JIT_GLOBAL_SYMBOL_NAMES,
    CUjit_option.CU_JIT_GLOBAL_SYMBOL_ADDRESSES,
    CUjit_option.CU_JIT_GLOBAL_SYMBOL_COUNT,
    CUjit_option.CU_JIT_REFERENCED_KERNEL_NAMES,
    CUjit_option.CU_JIT_REFERENCED_VARIABLE_NAMES,
}


class _JitOptions:
    """JIT options as (option, integer value) pairs for the wire, plus the caller's log
    buffers, filled from the reply's logs. The buffer options themselves do not travel (they
    are host pointers); their size options do, so the server knows a log is wanted."""

    def __init__(self, call: str, options: Sequence[Any], values: Sequence[Any]) -> None:
        self.wire: list[tuple[int, int]] = []
        self.buffers: dict[str, Any] = {}
        self.sizes: dict[str, int] = {}
        if len(options) != len(values):
            raise RuntimeError(f"{call}: {len(options)} options but {len(values)} values")
        for opt, val in zip(options, values, strict=True):
            opt = int(opt)
            if opt in _UNSUPPORTED_JIT:
                raise NotImplementedError(
                    f"{call}: JIT option {CUjit_option(opt).name} is not supported remotely"
                )
            if opt in _LOG_BUFFERS:
                # A host pointer: it stays here; the reply's logs are written into it.
                self.buffers[_LOG_BUFFERS[opt]] = val
                continue
            if opt in _LOG_SIZES:
                self.sizes[_LOG_SIZES[opt]] = int(val)
            if opt == CUjit_option.CU_JIT_WALL_TIME:
                self.wire.append((opt, 0))
                continue
            self.wire.append((opt, as_int(getattr(val, "value", val))))

    def fill(self, which: str, text: str) -> None:
        buf = self.buffers.get(which)
        if buf is None:
            return
        size = self.sizes.get(which, 0)
        if size <= 0:
            return
        raw = text.encode()[: size - 1] + b"\0"
        write_host(buf, raw, f"JIT {which} log buffer")


def _option_list(conn: Connection, pairs: list[tuple[int, int]]) -> list[Any]:
    return [conn.proto.option_value(option=o, value=v) for o, v in pairs]


def _load_reply(conn: Connection, err: int, r: Any, jit: _JitOptions | None, kind: type) -> tuple[Any, Any]:
    if err:
        if jit is not None and r is not None and not isinstance(r, int) and r.err:
            jit.fill("error", r.value or "")
        return _out(err, None)
    if jit is not None:
        jit.fill("info", r.value.info_log)
        jit.fill("error", r.value.error_log)
    return (_SUCCESS, kind(r.value.handle))


def _image(conn: Connection, call: str, image: Any) -> bytes | memoryview | None:
    try:
        return image_bytes(image)
    except ImageError as exc:
        conn.set_local_error(f"{call}: {exc}")
        return None


def cuModuleLoadData(image: Any) -> tuple[Any, CUmodule | None]:
    return cuModuleLoadDataEx(image, 0, None, None)


def cuModuleLoadDataEx(
    image: Any, numOptions: int, options: Sequence[Any] | None, optionValues: Sequence[Any] | None
) -> tuple[Any, CUmodule | None]:
    conn = _conn()
    n = int(numOptions)
    jit = _JitOptions("cuModuleLoadDataEx", list(options or [])[:n], list(optionValues or [])[:n])
    data = _image(conn, "cuModuleLoadDataEx", image)
    if data is None:
        return (_INVALID_VALUE, None)
    err, r = conn.sync("CU_MODULE_LOAD_DATA", data, _option_list(conn, jit.wire))
    return _load_reply(conn, err, r, jit, CUmodule)


def cuModuleLoadFatBinary(fatCubin: Any) -> tuple[Any, CUmodule | None]:
    conn = _conn()
    data = _image(conn, "cuModuleLoadFatBinary", fatCubin)
    if data is None:
        return (_INVALID_VALUE, None)
    err, r = conn.sync("CU_MODULE_LOAD_FAT_BINARY", data)
    return _load_reply(conn, err, r, None, CUmodule)


def cuLibraryLoadData(
    code: Any,
    jitOptions: Sequence[Any] | None,
    jitOptionsValues: Sequence[Any] | None,
    numJitOptions: int,
    libraryOptions: Sequence[Any] | None,
    libraryOptionValues: Sequence[Any] | None,
    numLibraryOptions: int,
) -> tuple[Any, CUlibrary | None]:
    conn = _conn()
    nj, nl = int(numJitOptions), int(numLibraryOptions)
    jit = _JitOptions("cuLibraryLoadData", list(jitOptions or [])[:nj], list(jitOptionsValues or [])[:nj])
    lib_opts = list(libraryOptions or [])[:nl]
    lib_vals = list(libraryOptionValues or [])[:nl]
    # a NULL values array (the CUDA 13 runtime's: CU_LIBRARY_BINARY_IS_PRESERVED takes none)
    lib_vals += [0] * (len(lib_opts) - len(lib_vals))
    lib_pairs = []
    for opt, val in zip(lib_opts, lib_vals, strict=True):
        if int(opt) == CUlibraryOption.CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE:
            raise NotImplementedError(
                "cuLibraryLoadData: CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE is not "
                "supported remotely"
            )
        lib_pairs.append((int(opt), as_int(getattr(val, "value", val))))
    data = _image(conn, "cuLibraryLoadData", code)
    if data is None:
        return (_INVALID_VALUE, None)
    err, r = conn.sync(
        "CU_LIBRARY_LOAD_DATA", data, _option_list(conn, jit.wire), _option_list(conn, lib_pairs)
    )
    return _load_reply(conn, err, r, jit, CUlibrary)


def _function_id(conn: Connection, f: Any) -> tuple[int, int]:
    """(CUresult, function handle) for a CUfunction, or a CUkernel (in the current context)."""
    if isinstance(f, CUkernel):
        err, r = conn.sync("CU_KERNEL_GET_FUNCTION", f.value)
        return (err, 0) if err else (0, int(r.value))
    return 0, _handle(f, "f")


def cuFuncGetParamInfo(func: Any, paramIndex: int) -> tuple[Any, int | None, int | None]:
    return _param_info("cuFuncGetParamInfo", "function", func, paramIndex)


def _param_info(call: str, what: str, func: Any, paramIndex: int) -> tuple[Any, int | None, int | None]:
    """(offset, size) of parameter `paramIndex` of a function or kernel (`what`)."""
    conn = _conn()
    err, layout = conn.param_layout(_handle(func, "func"))
    if err:
        return _out(err, None, None)
    index = size_t(paramIndex, f"{call}: paramIndex")
    if not 0 <= index < len(layout):
        return _fail(
            conn,
            _INVALID_VALUE,
            f"{call}: {what} {as_int(func):#x} has {len(layout)} parameters, "
            f"index {index} asked for",
            2,
        )
    offset, size = layout[index]
    return (_SUCCESS, offset, size)


# -- launches -------------------------------------------------------------------------------


# launch_args of rpc_spec/cricket.x up to the params' length: function, grid, block, shared
# memory bytes, stream, then the opaque's length (XDR, big-endian)
_LAUNCH_HEAD = struct.Struct(">Q7IQI")


def _launch_body(
    func: int,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    shared: int,
    stream: Any,
    params: bytes,
) -> bytes | None:
    """launch_args XDR-encoded by one struct, or None where the codec must (and will name
    what is wrong: values out of range, not integers)."""
    try:
        head = _LAUNCH_HEAD.pack(func, *grid, *block, shared, _stream(stream), len(params))
    except (struct.error, TypeError):
        return None
    return head + params + b"\0" * (-len(params) & 3)


def _launch(
    call: str,
    proc: str,
    f: Any,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    shared: int,
    stream: Any,
    kernel_params: Any,
    extra: Any,
) -> tuple[Any]:
    conn = _conn()
    if conn.mapped is not None:  # the program's writes to mapped host memory go first
        conn.mapped.push(conn)
    err, func = _function_id(conn, f)
    if err:
        return _out(err)
    err, layout = conn.param_layout(func)
    if err:
        return _out(err)
    try:
        params = pack_kernel_params(LaunchName(call, func), layout, kernel_params, extra)
    except LaunchArgumentError as exc:
        return _fail(conn, _INVALID_VALUE, str(exc), 0)
    body = _launch_body(func, grid, block, shared, stream, params)
    if body is not None and not conn.replay_log.logging:
        if proc == "CU_LAUNCH_KERNEL":
            if extra is None or (type(extra) is int and extra == 0):
                key = launch_key(f, kernel_params)
                if key is not None:  # the next launch like this one packs by a template
                    conn.launch_templates.add(key, layout, kernel_params[1] if len(key) > 1 else ())
            conn.post_launch(body)  # may share one CU_LAUNCH_KERNEL_BATCH with later ones
        else:
            conn.post_encoded(proc, body)
        return (_SUCCESS,)
    args = conn.proto.launch_args(
        function=func,
        grid_x=uint(grid[0], f"{call}: gridDimX"),
        grid_y=uint(grid[1], f"{call}: gridDimY"),
        grid_z=uint(grid[2], f"{call}: gridDimZ"),
        block_x=uint(block[0], f"{call}: blockDimX"),
        block_y=uint(block[1], f"{call}: blockDimY"),
        block_z=uint(block[2], f"{call}: blockDimZ"),
        shared_mem_bytes=uint(shared, f"{call}: sharedMemBytes"),
        stream=_stream(stream),
        params=params,
    )
    conn.post(proc, args)
    return (_SUCCESS,)


def cuLaunchKernel(
    f: Any,
    gridDimX: int,
    gridDimY: int,
    gridDimZ: int,
    blockDimX: int,
    blockDimY: int,
    blockDimZ: int,
    sharedMemBytes: int,
    hStream: Any,
    kernelParams: Any,
    extra: Any,
) -> tuple[Any]:
    conn = _conn()
    if not conn.replay_log.enabled and (extra is None or (type(extra) is int and extra == 0)):
        key = launch_key(f, kernelParams)  # a launch like an earlier one: by its template
        if key is not None:
            body = conn.launch_templates.body(
                key, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                sharedMemBytes, hStream, kernelParams[0] if len(key) > 1 else (),
            )  # fmt: skip
            if body is not None:
                conn.post_launch(body)
                return (_SUCCESS,)
    return _launch(
        "cuLaunchKernel",
        "CU_LAUNCH_KERNEL",
        f,
        (gridDimX, gridDimY, gridDimZ),
        (blockDimX, blockDimY, blockDimZ),
        sharedMemBytes,
        hStream,
        kernelParams,
        extra,
    )


def cuLaunchCooperativeKernel(
    f: Any,
    gridDimX: int,
    gridDimY: int,
    gridDimZ: int,
    blockDimX: int,
    blockDimY: int,
    blockDimZ: int,
    sharedMemBytes: int,
    hStream: Any,
    kernelParams: Any,
) -> tuple[Any]:
    return _launch(
        "cuLaunchCooperativeKernel",
        "CU_LAUNCH_COOPERATIVE_KERNEL",
        f,
        (gridDimX, gridDimY, gridDimZ),
        (blockDimX, blockDimY, blockDimZ),
        sharedMemBytes,
        hStream,
        kernelParams,
        None,
    )


# -- occupancy ------------------------------------------------------------------------------


def cuOccupancyMaxPotentialBlockSize(
    func: Any, blockSizeToDynamicSMemSize: Any, dynamicSMemSize: int, blockSizeLimit: int
) -> tuple[Any, int | None, int | None]:
    dynamicSMemSize = size_t(dynamicSMemSize, "cuOccupancyMaxPotentialBlockSize: dynamicSMemSize")
    blockSizeLimit = c_int(blockSizeLimit, "cuOccupancyMaxPotentialBlockSize: blockSizeLimit")
    conn = _conn()
    if blockSizeToDynamicSMemSize not in (None, 0):
        return _fail(
            conn,
            _NOT_SUPPORTED,
            "cuOccupancyMaxPotentialBlockSize: blockSizeToDynamicSMemSize callbacks are not "
            "supported remotely; pass None and a fixed dynamicSMemSize",
            2,
        )
    err, r = conn.sync(
        "CU_OCCUPANCY_MAX_POTENTIAL_BLOCK_SIZE",
        _handle(func, "func"),
        dynamicSMemSize,
        blockSizeLimit,
        0,
    )
    if err:
        return _out(err, None, None)
    return (_SUCCESS, r.value.first, r.value.second)


# -- CUDA graphs and stream capture (cricket_client.driver_graphs) ----------------------------
from . import driver_graphs as _graphs  # noqa: E402
from .batch_copies import CUmemcpyAttributes, cuMemcpyBatchAsync, cuMemcpyWithAttributesAsync  # noqa: E402, F401
from .batch_copies_3d import (  # noqa: E402, F401
    CUDA_MEMCPY3D_BATCH_OP,
    CUextent3D,
    CUmemcpy3DOperand,
    CUoffset3D,
    cuMemcpy3DBatchAsync,
    cuMemcpy3DWithAttributesAsync,
)
from .capture_modes import *  # noqa: E402, F403  (capture modes; unsafe calls they govern)
from .driver_device_facts import *  # noqa: E402, F403  (device facts, planes, pointer attributes)
from .driver_flags import *  # noqa: E402, F403  (flags, attributes, launch variants)
from .driver_graph_access import *  # noqa: E402, F403  (reading and changing graphs, execs)
from .driver_graph_attrs import *  # noqa: E402, F403  (kernel-node launch attributes)
from .driver_graph_mem_cond import *  # noqa: E402, F403  (graph memory, conditional nodes)
from .driver_graph_mem_ops import *  # noqa: E402, F403  (batch memory operation nodes)
from .driver_graph_nodes import *  # noqa: E402, F403  (polymorphic graph node calls)
from .driver_graphs import *  # noqa: E402, F403
from .driver_green_ctx import *  # noqa: E402, F403  (device resources, green contexts)
from .driver_link import *  # noqa: E402, F403  (the linker: links on the server)
from .driver_mipmaps import *  # noqa: E402, F403  (mipmapped and sparse arrays)
from .driver_names import *  # noqa: E402, F403  (cuFuncGetName, cuKernelGetName)
from .driver_peers import *  # noqa: E402, F403  (several devices)
from .driver_recapture import cuStreamBeginRecaptureToGraph  # noqa: E402, F401
from .driver_sm_groups import *  # noqa: E402, F403  (stream resources, SM groups, tensor maps)
from .driver_tail import *  # noqa: E402, F403  (small module, kernel, stream and memset calls)
from .driver_unshared import *  # noqa: E402, F403  (memory a remote client cannot share)
from .driver_vmm import *  # noqa: E402, F403  (virtual memory management, memory pools)
from .plain_types import *  # noqa: E402, F403  (value types that hold no GPU state)
from .resource_types import (  # noqa: E402, F401
    CUDA_ARRAY_MEMORY_REQUIREMENTS,
    CUDA_ARRAY_SPARSE_PROPERTIES,
    CUdevResource,
    CUdevResourceDesc,
    CUdevSmResource,
    CUgreenCtx,
    CUmipmappedArray,
)  # fmt: skip

# -- everything else ------------------------------------------------------------------------

SUPPORTED = frozenset(
    name for name, value in list(globals().items()) if name.startswith("cu") and callable(value)
    and not isinstance(value, type)  # cuuint64_t is a type
    and not hasattr(value, STAND_IN_ATTRIBUTE)  # it only refuses (cricket_client.standins)
)
STAND_INS = sorted(
    name for name, value in list(globals().items())
    if name.startswith("cu") and hasattr(value, STAND_IN_ATTRIBUTE)
)


def __getattr__(name: str) -> Any:
    if name in DRIVER_NAMES:
        raise NotSupportedRemotely(
            f"cricket_client.driver.{name}: cuda.bindings.driver.{name} is not supported "
            f"remotely by Cricket (supported: the {len(SUPPORTED)} functions in "
            f"cricket_client.driver.SUPPORTED)"
        )
    raise AttributeError(f"module 'cricket_client.driver' has no attribute {name!r}")


__all__ = sorted(SUPPORTED) + STAND_INS + list(_enums.__all__) + list(_graphs.__all__) + [
    "CUcontext",
    "CUdevice",
    "CUdeviceptr",
    "CUevent",
    "CUfunction",
    "CUkernel",
    "CUlibrary",
    "CUmodule",
    "CUstream",
    "CUuuid",
    "CUhostFn",
    "CUstreamCallback",
    "CUmemcpyAttributes",
    "SUPPORTED",
    "COPY_CHUNK",
]
