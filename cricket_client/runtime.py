"""`cuda.bindings.runtime` over the network: the same names, arguments and return tuples.

Use it in place of cuda-python's module: `from cricket_client import runtime as cudart`. Every
function returns a tuple whose first element is a cudaError_t, as cuda-python's do. It is built
on `cricket_client.driver` and the same connection: the runtime uses the primary context of the
thread's device, retained on first use and made current as the CUDA runtime does (see
`runtime_state`), so driver and runtime calls see each other's allocations, streams and events.

- Errors: a failing call also becomes the thread's last error, which stays until
  cudaGetLastError reads and resets it (cudaPeekAtLastError reads it only), whatever succeeds
  in between; errors of pipelined work (launches, asynchronous copies) arrive with the next
  synchronizing call (D6). A sticky error (illegal address, launch failure, ...: the context
  is unusable, the server fails every later call of the session) is never reset:
  cudaGetLastError keeps returning it while that session lasts, as a local process would
  until it exits. cudaGetErrorName/String answer locally.
- Memory: device pointers are ints, as in cuda-python. cudaMallocHost, cudaHostAlloc and
  cudaFreeHost allocate on this machine; what "pinned" means remotely is said in
  `cricket_client.runtime_host`: page-locked here with mlock where allowed, never mapped into
  the remote GPU; cudaHostAllocMapped gives a small range kept coherent with a device copy
  (`cricket_client.mapped_host`). cudaMemcpy2D moves the rows in one call
  each way (RT_MEMCPY_2D_*), the pitch gaps never travel.
- cudaLaunchKernel(func, gridDim, blockDim, args, sharedMem, stream), which cuda-python does not
  offer, launches a cudaKernel_t (or a CUfunction/CUkernel) with `args` in any form
  cuLaunchKernel's kernelParams takes.
- Any other name of cuda.bindings.runtime raises NotSupportedRemotely (an AttributeError) naming
  it.

The functions that only make the context current and call one driver mirror are declared one
line each in cricket_client/runtime.mirrors and generated (cricket_client._runtime_generated,
`make stubs`); the ones written here need more.
"""

from __future__ import annotations

from typing import Any

from . import _runtime_enums, driver
from ._args import c_int, size_t, uint
from ._enums import CUfunction_attribute, CUpointer_attribute
from ._runtime_base import (
    _INVALID_VALUE,
    _SUCCESS,
    _error,
    _fail,
    _ready,
    _ret,
    _stream,
    _with_context,
)
from ._runtime_base import _NOT_READY as _NOT_READY  # for the family modules
from ._runtime_base import _current as _current
from ._runtime_base import _record as _record
from ._runtime_enums import *  # noqa: F403  (the enums and constants of cuda.bindings.runtime)
from ._runtime_enums import (
    ERROR_STRINGS,
    RUNTIME_NAMES,
    cudaError_t,
    cudaFuncAttribute,
    cudaMemcpyKind,
    cudaMemoryType,
)
from ._runtime_generated import *  # noqa: F403  (the mirrors declared in runtime.mirrors)
from ._runtime_generated import cudaEventRecord
from ._types import CUdeviceptr, CUfunction, CUkernel, CUlibrary, as_int
from .connection import Connection, get_connection
from .errors import NotSupportedRemotely
from .host_buffers import HostBufferError, check_writable, read_host, write_host
from .host_functions import cudaHostFn_t, cudaStreamCallback_t
from .runtime_arrays import *  # noqa: F403  (arrays, 2D/3D copies, texture and surface objects)
from .runtime_host import PINNED
from .runtime_props import ATTRIBUTES, cudaDeviceProp, properties_from
from .runtime_state import activate, forget_functions, initialize, kernel_function
from .runtime_state import thread_state as _thread_state
from .runtime_types import (
    as_dim3,
    cudaEvent_t,
    cudaFuncAttributes,
    cudaKernel_t,
    cudaLibrary_t,
    cudaPointerAttributes,
    cudaStream_t,
    cudaUUID_t,
    dim3,
)
from .standins import STAND_IN_ATTRIBUTE

_COPY_CHUNK = driver.COPY_CHUNK
_INVALID_DEVICE_ID = -2  # cudaInvalidDeviceId


# -- errors (local) -------------------------------------------------------------------------


def cudaGetLastError() -> tuple[Any]:
    return (_error(_thread_state().take()),)


def cudaPeekAtLastError() -> tuple[Any]:
    return (_error(_thread_state().peek()),)


def cudaGetErrorName(error: Any) -> tuple[Any, bytes]:
    try:
        return (_SUCCESS, cudaError_t(int(error)).name.encode())
    except ValueError:
        return (_SUCCESS, b"unrecognized error code")


def cudaGetErrorString(error: Any) -> tuple[Any, bytes]:
    return (_SUCCESS, ERROR_STRINGS.get(int(error), "unrecognized error code").encode())


# -- devices --------------------------------------------------------------------------------


def cudaDriverGetVersion() -> tuple[Any, int | None]:
    err, version = driver.cuDriverGetVersion()
    return _ret(err, version)


def cudaRuntimeGetVersion() -> tuple[Any, int | None]:
    """The CUDA version of the server's backend (the runtime that does the work)."""
    return (_SUCCESS, get_connection().info.runtime_version)


def cudaGetDeviceCount() -> tuple[Any, int | None]:
    err = initialize(get_connection())
    if err:
        return _ret(err, None)
    err, count = driver.cuDeviceGetCount()
    return _ret(err, count)


def cudaGetDevice() -> tuple[Any, int | None]:
    err, _ = _ready()
    return _ret(err, _thread_state().device)


def cudaSetDevice(device: int) -> tuple[Any]:
    device = c_int(device, "cudaSetDevice: device")
    conn = get_connection()
    err = initialize(conn)
    if not err:
        err, count = driver.cuDeviceGetCount()
        if not err and not 0 <= device < (count or 0):
            return _fail(
                conn,
                cudaError_t.cudaErrorInvalidDevice,
                f"cudaSetDevice: device {device} does not exist (the server has {count})",
                0,
            )
    if not err:
        err = activate(conn, device)
    return _ret(err)


def cudaDeviceGetAttribute(attr: Any, device: int) -> tuple[Any, int | None]:
    device = c_int(device, "cudaDeviceGetAttribute: device")
    err = initialize(get_connection())
    if err:
        return _ret(err, None)
    err, value = driver.cuDeviceGetAttribute(int(attr), device)
    return _ret(err, value)


def cudaGetDeviceProperties(device: int) -> tuple[Any, cudaDeviceProp | None]:
    device = c_int(device, "cudaGetDeviceProperties: device")
    conn = get_connection()
    err = initialize(conn)
    if err:
        return _ret(err, None)
    err, r = conn.sync("RT_DEVICE_GET_PROPERTIES", device, list(ATTRIBUTES))
    if err:
        return _ret(err, None)
    props = r.value
    values = [v.value if not v.err else 0 for v in props.values]
    return _ret(0, properties_from(props.name, bytes(props.uuid), props.total_mem, values))


def cudaDeviceReset() -> tuple[Any]:
    """Free everything made in the device's primary context, which stays current."""
    err, conn = _ready()
    if err:
        return _ret(err)
    (err,) = driver.cuDevicePrimaryCtxReset(_thread_state().device)
    forget_functions(conn)
    return _ret(err)


# -- memory ---------------------------------------------------------------------------------


def cudaMalloc(size: int) -> tuple[Any, int | None]:
    size = size_t(size, "cudaMalloc: size")
    if size == 0:
        return _with_context(lambda: (0, 0), 1)
    return _with_context(lambda: _as_ptr(driver.cuMemAlloc(size)), 1)


def _as_ptr(result: tuple[Any, ...]) -> tuple[Any, ...]:
    err, *values = result
    return (err, *[int(v) if isinstance(v, CUdeviceptr) else v for v in values])


def cudaFree(devPtr: Any) -> tuple[Any]:
    if as_int(devPtr) == 0:
        return _with_context(lambda: (0,), 0)
    return _with_context(lambda: driver.cuMemFree(as_int(devPtr)), 0)


def cudaMallocHost(size: int) -> tuple[Any, int | None]:
    return cudaHostAlloc(size, cudaHostAllocDefault)  # noqa: F405


def cudaHostAlloc(size: int, flags: int) -> tuple[Any, int | None]:
    size = size_t(size, "cudaHostAlloc: size")
    flags = uint(flags, "cudaHostAlloc: flags")
    if size == 0:
        return (_SUCCESS, 0)
    if flags & cudaHostAllocMapped:  # noqa: F405  (small ranges: cricket_client.mapped_host)
        return _with_context(lambda: driver.cuMemHostAlloc(size, flags), 1)
    return _ret(*driver.cuMemHostAlloc(size, flags))  # page-locked here (runtime_host.PINNED)


def cudaFreeHost(ptr: Any) -> tuple[Any]:
    address = as_int(ptr)
    if address == 0 or driver.cuMemFreeHost(address)[0] == 0:
        return (_SUCCESS,)
    conn = get_connection()
    return _fail(
        conn,
        _INVALID_VALUE,
        f"cudaFreeHost: {address:#x} was not allocated by cudaMallocHost/cudaHostAlloc",
        0,
    )


def _is_buffer(obj: Any) -> bool:
    if isinstance(obj, int) or hasattr(obj, "getPtr") or obj is None:
        return False
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def _on_device(conn: Connection, obj: Any) -> bool:
    return not _is_buffer(obj) and conn.is_device_address(as_int(obj))


def _kind(conn: Connection, kind: Any, dst: Any, src: Any) -> int:
    """An explicit cudaMemcpyKind, or the one unified addressing gives for cudaMemcpyDefault."""
    kind = int(kind)
    if kind != cudaMemcpyKind.cudaMemcpyDefault:
        return kind
    dst_dev, src_dev = _on_device(conn, dst), _on_device(conn, src)
    return {
        (False, False): cudaMemcpyKind.cudaMemcpyHostToHost,
        (True, False): cudaMemcpyKind.cudaMemcpyHostToDevice,
        (False, True): cudaMemcpyKind.cudaMemcpyDeviceToHost,
        (True, True): cudaMemcpyKind.cudaMemcpyDeviceToDevice,
    }[(dst_dev, src_dev)]


def _host(obj: Any) -> Any:
    return obj if _is_buffer(obj) else as_int(obj)


def _memcpy(call: str, dst: Any, src: Any, count: int, kind: Any, stream: Any) -> tuple[Any]:
    err, conn = _ready()
    if err:
        return _ret(err)
    try:
        k = _kind(conn, kind, dst, src)
    except ValueError:
        return _fail(conn, cudaError_t.cudaErrorInvalidMemcpyDirection, f"{call}: kind {kind!r}", 0)
    asynchronous = stream is not None
    s = _stream(stream)
    if k == cudaMemcpyKind.cudaMemcpyHostToDevice:
        result = (
            driver.cuMemcpyHtoDAsync(as_int(dst), _host(src), count, s)
            if asynchronous
            else driver.cuMemcpyHtoD(as_int(dst), _host(src), count)
        )
    elif k == cudaMemcpyKind.cudaMemcpyDeviceToHost:
        result = (
            driver.cuMemcpyDtoHAsync(_host(dst), as_int(src), count, s)
            if asynchronous
            else driver.cuMemcpyDtoH(_host(dst), as_int(src), count)
        )
    elif k == cudaMemcpyKind.cudaMemcpyDeviceToDevice:
        result = (
            driver.cuMemcpyDtoDAsync(as_int(dst), as_int(src), count, s)
            if asynchronous
            else driver.cuMemcpyDtoD(as_int(dst), as_int(src), count)
        )
    elif k == cudaMemcpyKind.cudaMemcpyHostToHost:
        result = (
            driver.cuMemcpyAsync(_host(dst), _host(src), count, s)
            if asynchronous
            else driver.cuMemcpy(_host(dst), _host(src), count)
        )
    else:
        return _fail(
            conn,
            cudaError_t.cudaErrorInvalidMemcpyDirection,
            f"{call}: {k} is not a cudaMemcpyKind",
            0,
        )
    return _ret(result[0])


def cudaMemcpy(dst: Any, src: Any, count: int, kind: Any) -> tuple[Any]:
    return _memcpy("cudaMemcpy", dst, src, size_t(count, "cudaMemcpy: count"), kind, None)


def cudaMemcpyAsync(dst: Any, src: Any, count: int, kind: Any, stream: Any) -> tuple[Any]:
    count = size_t(count, "cudaMemcpyAsync: count")
    return _memcpy("cudaMemcpyAsync", dst, src, count, kind, _stream(stream))


def _rows(src: Any, spitch: int, width: int, height: int, what: str) -> bytes:
    """`height` host rows of `width` bytes, `spitch` apart, packed."""
    data = read_host(src, spitch * (height - 1) + width, what)
    if spitch == width:
        return bytes(data)
    view = memoryview(data)
    return b"".join(view[r * spitch : r * spitch + width] for r in range(height))


def _memcpy2d(
    call: str,
    dst: Any,
    dpitch: int,
    src: Any,
    spitch: int,
    width: int,
    height: int,
    kind: Any,
    stream: Any,
) -> tuple[Any]:
    err, conn = _ready()
    if err:
        return _ret(err)
    if height > 1 and (width > dpitch or width > spitch):
        return _fail(
            conn,
            cudaError_t.cudaErrorInvalidPitchValue,
            f"{call}: width {width} is larger than dpitch {dpitch} or spitch {spitch}",
            0,
        )
    if width == 0 or height == 0:
        return (_SUCCESS,)
    try:
        k = _kind(conn, kind, dst, src)
    except ValueError:
        k = -1
    wire_stream = driver._stream(stream) if stream is not None else 0
    rows_per_call = max(1, _COPY_CHUNK // width)
    spans = [(r, min(rows_per_call, height - r)) for r in range(0, height, rows_per_call)]
    try:
        if k == cudaMemcpyKind.cudaMemcpyHostToDevice:
            d = as_int(dst)
            for r, n in spans:
                rows = _rows(_offset(src, r * spitch), spitch, width, n, f"{call}: src")
                args = (d + r * dpitch, dpitch, rows, width, n, wire_stream)
                if stream is None:
                    err = conn.sync("RT_MEMCPY_2D_HTOD", *args)[0]
                    if err:
                        return _ret(err)
                else:
                    conn.post("RT_MEMCPY_2D_HTOD", *args)
            return (_SUCCESS,)
        if k == cudaMemcpyKind.cudaMemcpyDeviceToHost:
            check_writable(dst, dpitch * (height - 1) + width, f"{call}: dst")
            s = as_int(src)
            err, replies = conn.sync_many(
                "RT_MEMCPY_2D_DTOH", [(s + r * spitch, spitch, width, n, wire_stream) for r, n in spans]
            )
            if err:
                return _ret(err)
            for (r, n), reply in zip(spans, replies, strict=True):
                data = memoryview(reply.value)
                for i in range(n):
                    write_host(dst, data[i * width : (i + 1) * width], f"{call}: dst", (r + i) * dpitch)
            return (_SUCCESS,)
        if k == cudaMemcpyKind.cudaMemcpyDeviceToDevice:
            dtod = (as_int(dst), dpitch, as_int(src), spitch, width, height, wire_stream)
            if stream is None:
                return _ret(conn.sync("RT_MEMCPY_2D_DTOD", *dtod)[0])
            conn.post("RT_MEMCPY_2D_DTOD", *dtod)
            return (_SUCCESS,)
        if k == cudaMemcpyKind.cudaMemcpyHostToHost:
            if stream is not None:
                (err,) = driver.cuStreamSynchronize(stream)
                if err:
                    return _ret(err)
            for r in range(height):
                row = read_host(_offset(src, r * spitch), width, f"{call}: src")
                write_host(_host(dst), row, f"{call}: dst", r * dpitch)
            return (_SUCCESS,)
    except HostBufferError as exc:
        raise TypeError(str(exc)) from None
    return _fail(
        conn, cudaError_t.cudaErrorInvalidMemcpyDirection, f"{call}: {kind!r} is not a cudaMemcpyKind", 0
    )


def _offset(host: Any, offset: int) -> Any:
    """A host argument `offset` bytes further on (a buffer gets a view, an address a sum)."""
    if _is_buffer(host):
        view = memoryview(host)
        view = view.cast("B") if view.format != "B" or view.ndim != 1 else view
        return view[offset:]
    return as_int(host) + offset


def cudaMemcpy2D(
    dst: Any, dpitch: int, src: Any, spitch: int, width: int, height: int, kind: Any
) -> tuple[Any]:
    call = "cudaMemcpy2D"
    return _memcpy2d(
        call,
        dst,
        size_t(dpitch, f"{call}: dpitch"),
        src,
        size_t(spitch, f"{call}: spitch"),
        size_t(width, f"{call}: width"),
        size_t(height, f"{call}: height"),
        kind,
        None,
    )


def cudaMemcpy2DAsync(
    dst: Any, dpitch: int, src: Any, spitch: int, width: int, height: int, kind: Any, stream: Any
) -> tuple[Any]:
    return _memcpy2d(
        "cudaMemcpy2DAsync",
        dst,
        size_t(dpitch, "cudaMemcpy2DAsync: dpitch"),
        src,
        size_t(spitch, "cudaMemcpy2DAsync: spitch"),
        size_t(width, "cudaMemcpy2DAsync: width"),
        size_t(height, "cudaMemcpy2DAsync: height"),
        kind,
        _stream(stream),
    )


def _memset2d(devPtr: Any, pitch: int, value: int, width: int, height: int, stream: Any) -> tuple[Any]:
    err, conn = _ready()
    if err:
        return _ret(err)
    call = "cudaMemset2D" if stream is None else "cudaMemset2DAsync"
    args = (
        as_int(devPtr),
        size_t(pitch, f"{call}: pitch"),
        c_int(value, f"{call}: value") & 0xFF,
        size_t(width, f"{call}: width"),
        size_t(height, f"{call}: height"),
    )
    if stream is None:
        return _ret(conn.sync("RT_MEMSET_2D", *args, 0)[0])
    conn.post("RT_MEMSET_2D", *args, driver._stream(stream))
    return (_SUCCESS,)


def cudaMemset2D(devPtr: Any, pitch: int, value: int, width: int, height: int) -> tuple[Any]:
    return _memset2d(devPtr, pitch, value, width, height, None)


def cudaMemset2DAsync(
    devPtr: Any, pitch: int, value: int, width: int, height: int, stream: Any
) -> tuple[Any]:
    return _memset2d(devPtr, pitch, value, width, height, _stream(stream))


_POINTER_QUERY = [
    CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
    CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
]


def cudaPointerGetAttributes(ptr: Any) -> tuple[Any, cudaPointerAttributes | None]:
    err, conn = _ready()
    if err:
        return _ret(err, None)
    address = as_int(ptr)
    if not conn.is_device_address(address):
        pinned = PINNED.find(address)
        kind = cudaMemoryType.cudaMemoryTypeHost if pinned else cudaMemoryType.cudaMemoryTypeUnregistered
        device = _thread_state().device if pinned else _INVALID_DEVICE_ID
        return (_SUCCESS, cudaPointerAttributes(type=kind, device=device, hostPointer=address))
    err, values = driver.cuPointerGetAttributes(len(_POINTER_QUERY), _POINTER_QUERY, address)
    if err or values is None:
        return _ret(err, None)
    if values[0] is None:
        return _fail(conn, _INVALID_VALUE, f"cudaPointerGetAttributes: {address:#x} is not allocated", 1)
    return (
        _SUCCESS,
        cudaPointerAttributes(
            type=cudaMemoryType(int(values[0])), device=int(values[1] or 0), devicePointer=address
        ),
    )


# -- streams and events ---------------------------------------------------------------------


def _wrap(kind: type, result: tuple[Any, ...]) -> tuple[Any, ...]:
    err, value = result
    return (err, kind(int(value)) if not err else None)


def cudaEventRecordWithFlags(event: Any, stream: Any, flags: int) -> tuple[Any]:
    """cudaEventRecordExternal only matters during stream capture, which is not offered."""
    if uint(flags, "cudaEventRecordWithFlags: flags") & ~cudaEventRecordExternal:  # noqa: F405
        return _fail(get_connection(), _INVALID_VALUE, f"cudaEventRecordWithFlags: flags {flags}", 0)
    return cudaEventRecord(event, stream)


# -- libraries, kernels, launches -----------------------------------------------------------


def cudaLibraryUnload(library: Any) -> tuple[Any]:
    err, conn = _ready()
    if err:
        return _ret(err)
    forget_functions(conn)
    return _ret(driver.cuLibraryUnload(CUlibrary(as_int(library)))[0])


def _function(conn: Connection, func: Any) -> tuple[int, int]:
    """(CUresult, CUfunction handle) of a cudaKernel_t, CUkernel or CUfunction."""
    if isinstance(func, cudaKernel_t | CUkernel):
        return kernel_function(conn, as_int(func))
    return 0, as_int(func)


def _launch_kernel(
    call: str, launch: Any, tail: tuple[Any, ...],
    func: Any, gridDim: Any, blockDim: Any, args: Any, sharedMem: int, stream: Any,
) -> tuple[Any]:
    """A runtime launch (`call`) through the driver's `launch` (cuLaunchKernel and its
    variants), whose arguments after the kernel parameters are `tail`."""
    sharedMem = size_t(sharedMem, f"{call}: sharedMem")
    err, conn = _ready()
    if err:
        return _ret(err)
    grid = as_dim3(gridDim, f"{call}: gridDim")
    block = as_dim3(blockDim, f"{call}: blockDim")
    err, fn = _function(conn, func)
    if err:
        return _ret(err)
    return _ret(launch(CUfunction(fn), *grid, *block, sharedMem, _stream(stream), args, *tail)[0])


def cudaLaunchKernel(
    func: Any, gridDim: Any, blockDim: Any, args: Any, sharedMem: int, stream: Any
) -> tuple[Any]:
    return _launch_kernel(
        "cudaLaunchKernel", driver.cuLaunchKernel, (0,),
        func, gridDim, blockDim, args, sharedMem, stream,
    )  # fmt: skip


_FUNC_ATTRIBUTES: dict[str, CUfunction_attribute] = {
    "sharedSizeBytes": CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
    "constSizeBytes": CUfunction_attribute.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
    "localSizeBytes": CUfunction_attribute.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
    "maxThreadsPerBlock": CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
    "numRegs": CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS,
    "ptxVersion": CUfunction_attribute.CU_FUNC_ATTRIBUTE_PTX_VERSION,
    "binaryVersion": CUfunction_attribute.CU_FUNC_ATTRIBUTE_BINARY_VERSION,
    "cacheModeCA": CUfunction_attribute.CU_FUNC_ATTRIBUTE_CACHE_MODE_CA,
    "maxDynamicSharedSizeBytes": CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
    "preferredShmemCarveout": CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
    "clusterDimMustBeSet": CUfunction_attribute.CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
    "requiredClusterWidth": CUfunction_attribute.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
    "requiredClusterHeight": CUfunction_attribute.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
    "requiredClusterDepth": CUfunction_attribute.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
    "clusterSchedulingPolicyPreference": (
        CUfunction_attribute.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
    ),
    "nonPortableClusterSizeAllowed": (
        CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
    ),
}

# cudaFuncAttribute -> CUfunction_attribute (by meaning: the numbers differ from 16 on).
_SETTABLE: dict[int, CUfunction_attribute] = {
    cudaFuncAttribute.cudaFuncAttributeMaxDynamicSharedMemorySize: (
        CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    ),
    cudaFuncAttribute.cudaFuncAttributePreferredSharedMemoryCarveout: (
        CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
    ),
    cudaFuncAttribute.cudaFuncAttributeClusterDimMustBeSet: (
        CUfunction_attribute.CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET
    ),
    cudaFuncAttribute.cudaFuncAttributeRequiredClusterWidth: (
        CUfunction_attribute.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH
    ),
    cudaFuncAttribute.cudaFuncAttributeRequiredClusterHeight: (
        CUfunction_attribute.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT
    ),
    cudaFuncAttribute.cudaFuncAttributeRequiredClusterDepth: (
        CUfunction_attribute.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH
    ),
    cudaFuncAttribute.cudaFuncAttributeNonPortableClusterSizeAllowed: (
        CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
    ),
    cudaFuncAttribute.cudaFuncAttributeClusterSchedulingPolicyPreference: (
        CUfunction_attribute.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
    ),
    cudaFuncAttribute.cudaFuncAttributeSharedMemoryMode: (
        CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE
    ),
}


def cudaFuncGetAttributes(func: Any) -> tuple[Any, cudaFuncAttributes | None]:
    """Every attribute in one pipelined batch; one the server does not know reads as 0."""
    err, conn = _ready()
    if err:
        return _ret(err, None)
    err, fn = _function(conn, func)
    if err:
        return _ret(err, None)
    _err, replies = conn.sync_many(
        "CU_FUNC_GET_ATTRIBUTE", [(int(a), fn) for a in _FUNC_ATTRIBUTES.values()]
    )
    codes = [int(r.err) for r in replies]
    if all(codes):
        return _ret(codes[0], None)
    values = {
        name: (r.value if not r.err else 0)
        for name, r in zip(_FUNC_ATTRIBUTES, replies, strict=True)
    }
    return (_SUCCESS, cudaFuncAttributes(**values))


def cudaFuncSetAttribute(func: Any, attr: Any, value: int) -> tuple[Any]:
    value = c_int(value, "cudaFuncSetAttribute: value")
    err, conn = _ready()
    if err:
        return _ret(err)
    target = _SETTABLE.get(int(attr))
    if target is None:
        return _fail(conn, _INVALID_VALUE, f"cudaFuncSetAttribute: {attr!r} cannot be set", 0)
    err, fn = _function(conn, func)
    if err:
        return _ret(err)
    return _ret(driver.cuFuncSetAttribute(CUfunction(fn), target, value)[0])


def cudaOccupancyMaxActiveBlocksPerMultiprocessor(
    func: Any, blockSize: int, dynamicSMemSize: int
) -> tuple[Any, int | None]:
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        func, blockSize, dynamicSMemSize, 0
    )


def cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    func: Any, blockSize: int, dynamicSMemSize: int, flags: int
) -> tuple[Any, int | None]:
    call = "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags"
    blockSize = c_int(blockSize, f"{call}: blockSize")
    dynamicSMemSize = size_t(dynamicSMemSize, f"{call}: dynamicSMemSize")
    flags = uint(flags, f"{call}: flags")
    err, conn = _ready()
    if err:
        return _ret(err, None)
    err, fn = _function(conn, func)
    if err:
        return _ret(err, None)
    result = driver.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        CUfunction(fn), blockSize, dynamicSMemSize, flags
    )
    return _ret(*result)


# -- CUDA graphs and stream capture (cricket_client.runtime_graphs) ---------------------------
from . import runtime_graphs as _graphs  # noqa: E402
from .batch_copies import (  # noqa: E402, F401
    cudaMemcpyAttributes,
    cudaMemcpyBatchAsync,
    cudaMemcpyWithAttributesAsync,
)
from .batch_copies_3d import (  # noqa: E402, F401  (batched 3D copies)
    cudaMemcpy3DBatchAsync,
    cudaMemcpy3DBatchOp,
    cudaMemcpy3DOperand,
    cudaMemcpy3DWithAttributesAsync,
    cudaOffset3D,
)
from .capture_modes import cudaThreadExchangeStreamCaptureMode  # noqa: E402, F401
from .driver_recapture import cudaGraphRecaptureCallbackData, cudaStreamBeginRecaptureToGraph  # noqa: E402, F401
from .plain_types import (  # noqa: E402, F401  (value types that hold no GPU state)
    cudaEglFrame,
    cudaExecutionContext_t,
    cudaExternalMemoryMipmappedArrayDesc,
    cudaExternalSemaphore_t,
    cudaExternalSemaphoreSignalNodeParams,
    cudaExternalSemaphoreSignalParams,
    cudaMemcpy3DPeerParms,
    sizeof,
)
from .runtime_compat import *  # noqa: E402, F403  (calls built from remoted calls)
from .runtime_device_facts import *  # noqa: E402, F403  (device facts, array planes)
from .runtime_exec_ctx import *  # noqa: E402, F403  (green and execution contexts)
from .runtime_flags import *  # noqa: E402, F403  (flags, launch variants, devices, shared memory)
from .runtime_graph_access import *  # noqa: E402, F403  (reading and changing graphs, execs)
from .runtime_graph_attrs import *  # noqa: E402, F403  (kernel-node launch attributes)
from .runtime_graph_mem_cond import *  # noqa: E402, F403  (graph memory, conditional nodes)
from .runtime_graphs import *  # noqa: E402, F403
from .runtime_mempool import *  # noqa: E402, F403  (memory pools)
from .runtime_resources import *  # noqa: E402, F403  (mipmapped arrays, device resources)
from .runtime_tail import *  # noqa: E402, F403  (small library, kernel, stream and device calls)

# -- everything else ------------------------------------------------------------------------

SUPPORTED = frozenset(
    name for name, value in list(globals().items()) if name.startswith("cuda") and callable(value)
    and not isinstance(value, type)
    and not hasattr(value, STAND_IN_ATTRIBUTE)  # it only refuses (cricket_client.standins)
)
STAND_INS = sorted(
    name for name, value in list(globals().items())
    if name.startswith("cuda") and hasattr(value, STAND_IN_ATTRIBUTE)
)


def __getattr__(name: str) -> Any:
    if name in RUNTIME_NAMES:
        raise NotSupportedRemotely(
            f"cricket_client.runtime.{name}: cuda.bindings.runtime.{name} is not supported "
            f"remotely by Cricket (supported: the {len(SUPPORTED)} functions in "
            f"cricket_client.runtime.SUPPORTED)"
        )
    raise AttributeError(f"module 'cricket_client.runtime' has no attribute {name!r}")


__all__ = sorted(SUPPORTED) + STAND_INS + list(_runtime_enums.__all__) + list(_graphs.__all__) + [
    "cudaDeviceProp",
    "cudaEvent_t",
    "cudaFuncAttributes",
    "cudaKernel_t",
    "cudaLibrary_t",
    "cudaPointerAttributes",
    "cudaStream_t",
    "cudaUUID_t",
    "cudaHostFn_t",
    "cudaStreamCallback_t",
    "cudaMemcpyAttributes",
    "dim3",
    "SUPPORTED",
]

