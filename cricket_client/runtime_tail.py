"""Small runtime calls written by hand, through the driver's: libraries from the client's files,
listing a library's kernels, parameter counts, kernel attributes for a device, a stream's
device, device choice and PCI bus ids, cudaInitDevice and the 1D linear texture width.

cudaChooseDevice answers the device whose compute capability equals the one asked for, else
the thread's current device (all devices of a server are alike in everything else a
cudaDeviceProp compares here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import driver
from . import driver_arrays as da
from ._args import c_int, size_t, uint
from ._enums import CUarray_format
from ._runtime_enums import cudaChannelFormatKind, cudaError_t, cudaSharedMemConfig
from ._types import CUdevice, CUfunction, CUkernel, CUlibrary, as_int
from .runtime import _SUCCESS, _fail, _function, _ready, _ret, _stream, get_connection
from .runtime_arrays import _linear
from .runtime_state import connection_state, initialize
from .runtime_state import thread_state as _thread_state
from .runtime_types import cudaKernel_t, cudaLibrary_t

__all__ = [
    "cudaChooseDevice",
    "cudaDeviceGetByPCIBusId",
    "cudaDeviceGetPCIBusId",
    "cudaDeviceGetSharedMemConfig",
    "cudaDeviceGetTexture1DLinearMaxWidth",
    "cudaFuncGetParamCount",
    "cudaFuncSetSharedMemConfig",
    "cudaInitDevice",
    "cudaKernelSetAttributeForDevice",
    "cudaLibraryEnumerateKernels",
    "cudaLibraryGetKernelCount",
    "cudaLibraryLoadFromFile",
    "cudaMemcpyFromArrayAsync",
    "cudaMemcpyToArrayAsync",
    "cudaStreamGetDevice",
]

_INVALID_DEVICE = cudaError_t.cudaErrorInvalidDevice
_INVALID_VALUE = cudaError_t.cudaErrorInvalidValue
_COMPUTE_MAJOR, _COMPUTE_MINOR = 75, 76  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*
_INIT_DEVICE_FLAGS_ARE_VALID = 0x01  # cudaInitDeviceFlagsAreValid


# -- libraries and kernels -------------------------------------------------------------------


def cudaLibraryLoadFromFile(
    fileName: Any,
    jitOptions: Sequence[Any] | None,
    jitOptionsValues: Sequence[Any] | None,
    numJitOptions: int,
    libraryOptions: Sequence[Any] | None,
    libraryOptionValues: Sequence[Any] | None,
    numLibraryOptions: int,
) -> tuple[Any, cudaLibrary_t | None]:
    err = _ready()[0]
    if err:
        return _ret(err, None)
    err, lib = driver.cuLibraryLoadFromFile(
        fileName, jitOptions, jitOptionsValues, numJitOptions,
        libraryOptions, libraryOptionValues, numLibraryOptions,
    )
    return _ret(err, cudaLibrary_t(as_int(lib)) if not err else None)


def cudaLibraryGetKernelCount(lib: Any) -> tuple[Any, int | None]:
    err = _ready()[0]
    if err:
        return _ret(err, None)
    return _ret(*driver.cuLibraryGetKernelCount(CUlibrary(as_int(lib))))


def cudaLibraryEnumerateKernels(numKernels: int, lib: Any) -> tuple[Any, list[cudaKernel_t] | None]:
    err = _ready()[0]
    if err:
        return _ret(err, None)
    err, kernels = driver.cuLibraryEnumerateKernels(numKernels, CUlibrary(as_int(lib)))
    if err or kernels is None:
        return _ret(err, None)
    return (_SUCCESS, [cudaKernel_t(as_int(k)) for k in kernels])


def _on_function(func: Any, call: Any) -> tuple[Any, ...]:
    """`call(CUfunction)` of a runtime kernel or function, with the runtime's context ready."""
    err, conn = _ready()
    if err:
        return _ret(err, None)
    err, fn = _function(conn, func)
    if err:
        return _ret(err, None)
    return _ret(*call(CUfunction(fn)))  # type: ignore[no-any-return]


def cudaFuncGetParamCount(func: Any) -> tuple[Any, int | None]:
    return _on_function(func, driver.cuFuncGetParamCount)  # type: ignore[return-value]


def cudaFuncSetSharedMemConfig(func: Any, config: Any) -> tuple[Any]:
    result = _on_function(func, lambda f: driver.cuFuncSetSharedMemConfig(f, int(config)))
    return result[:1]


def cudaKernelSetAttributeForDevice(kernel: Any, attr: Any, value: int, device: int) -> tuple[Any]:
    """The attribute of the kernel's function on `device` (made current for the call, as
    the runtime's context of that device)."""
    value = c_int(value, "cudaKernelSetAttributeForDevice: value")
    device = c_int(device, "cudaKernelSetAttributeForDevice: device")
    err = _ready()[0]
    if err:
        return _ret(err)
    err, current = driver.cuCtxGetDevice()
    if err or current is None:
        return _ret(err)
    if as_int(current) != device:
        return _fail(
            get_connection(),
            _INVALID_DEVICE,
            f"cudaKernelSetAttributeForDevice: device {device} is not the current device "
            f"{as_int(current)} (cudaSetDevice({device}) first)",
            0,
        )
    return _ret(driver.cuKernelSetAttribute(int(attr), value, CUkernel(as_int(kernel)), current)[0])


# -- streams and devices ---------------------------------------------------------------------


def cudaStreamGetDevice(hStream: Any) -> tuple[Any, int | None]:
    err = _ready()[0]
    if err:
        return _ret(err, None)
    err, dev = driver.cuStreamGetDevice(_stream(hStream))
    return _ret(err, as_int(dev) if not err else None)


def cudaDeviceGetSharedMemConfig() -> tuple[Any, cudaSharedMemConfig | None]:
    err = _ready()[0]
    if err:
        return _ret(err, None)
    err, config = driver.cuCtxGetSharedMemConfig()
    if err or config is None:
        return _ret(err, None)
    return (_SUCCESS, cudaSharedMemConfig(int(config)))


def _device_count(call: str) -> tuple[Any, int]:
    conn = get_connection()
    err = initialize(conn)
    if err:
        return err, 0
    err, count = driver.cuDeviceGetCount()
    return err, int(count or 0)


def cudaInitDevice(device: int, deviceFlags: int, flags: int) -> tuple[Any]:
    """Retains the device's primary context for the runtime without making it current;
    with cudaInitDeviceFlagsAreValid, sets its flags first (cudaSetDeviceFlags' values)."""
    call = "cudaInitDevice"
    device = c_int(device, f"{call}: device")
    deviceFlags = uint(deviceFlags, f"{call}: deviceFlags")
    flags = uint(flags, f"{call}: flags")
    conn = get_connection()
    if flags & ~_INIT_DEVICE_FLAGS_ARE_VALID:
        return _fail(conn, _INVALID_VALUE, f"{call}: unknown flags {flags:#x}", 0)
    err, count = _device_count(call)
    if err:
        return _ret(err)
    if not 0 <= device < count:
        return _fail(
            conn, _INVALID_DEVICE, f"{call}: device {device} does not exist (the server has {count})", 0
        )
    if flags & _INIT_DEVICE_FLAGS_ARE_VALID:
        (err,) = driver.cuDevicePrimaryCtxSetFlags(CUdevice(device), deviceFlags)
        if err:
            return _ret(err)
    state = connection_state(conn)
    with state.lock:
        if state.primary.get(device) is None:
            err, ctx = driver.cuDevicePrimaryCtxRetain(CUdevice(device))
            if err or ctx is None:
                return _ret(err)
            state.primary[device] = ctx
    return (_SUCCESS,)


def cudaChooseDevice(prop: Any) -> tuple[Any, int | None]:
    conn = get_connection()
    if prop is None:
        return _fail(conn, _INVALID_VALUE, "cudaChooseDevice: prop is NULL", 1)
    err, count = _device_count("cudaChooseDevice")
    if err:
        return _ret(err, None)
    want = (int(getattr(prop, "major", 0)), int(getattr(prop, "minor", 0)))
    for dev in range(count):
        err, major = driver.cuDeviceGetAttribute(_COMPUTE_MAJOR, CUdevice(dev))
        if not err:
            err, minor = driver.cuDeviceGetAttribute(_COMPUTE_MINOR, CUdevice(dev))
        if err:
            return _ret(err, None)
        if (major, minor) == want:
            return (_SUCCESS, dev)
    return (_SUCCESS, _thread_state().device)


def cudaDeviceGetByPCIBusId(pciBusId: Any) -> tuple[Any, int | None]:
    err = initialize(get_connection())
    if err:
        return _ret(err, None)
    err, dev = driver.cuDeviceGetByPCIBusId(pciBusId)
    return _ret(err, as_int(dev) if not err else None)


def cudaDeviceGetPCIBusId(length: int, device: int) -> tuple[Any, bytes | None]:
    device = c_int(device, "cudaDeviceGetPCIBusId: device")
    err = initialize(get_connection())
    if err:
        return _ret(err, None)
    return _ret(*driver.cuDeviceGetPCIBusId(length, CUdevice(device)))


# -- textures --------------------------------------------------------------------------------

_FORMATS = {
    (int(cudaChannelFormatKind.cudaChannelFormatKindUnsigned), 8): CUarray_format.CU_AD_FORMAT_UNSIGNED_INT8,
    (int(cudaChannelFormatKind.cudaChannelFormatKindUnsigned), 16): CUarray_format.CU_AD_FORMAT_UNSIGNED_INT16,
    (int(cudaChannelFormatKind.cudaChannelFormatKindUnsigned), 32): CUarray_format.CU_AD_FORMAT_UNSIGNED_INT32,
    (int(cudaChannelFormatKind.cudaChannelFormatKindSigned), 8): CUarray_format.CU_AD_FORMAT_SIGNED_INT8,
    (int(cudaChannelFormatKind.cudaChannelFormatKindSigned), 16): CUarray_format.CU_AD_FORMAT_SIGNED_INT16,
    (int(cudaChannelFormatKind.cudaChannelFormatKindSigned), 32): CUarray_format.CU_AD_FORMAT_SIGNED_INT32,
    (int(cudaChannelFormatKind.cudaChannelFormatKindFloat), 16): CUarray_format.CU_AD_FORMAT_HALF,
    (int(cudaChannelFormatKind.cudaChannelFormatKindFloat), 32): CUarray_format.CU_AD_FORMAT_FLOAT,
}


def cudaDeviceGetTexture1DLinearMaxWidth(fmtDesc: Any, device: int) -> tuple[Any, int | None]:
    """The driver's answer for the descriptor's format (every channel as wide as x)."""
    call = "cudaDeviceGetTexture1DLinearMaxWidth"
    device = c_int(device, f"{call}: device")
    conn = get_connection()
    if fmtDesc is None:
        return _fail(conn, _INVALID_VALUE, f"{call}: fmtDesc is NULL", 1)
    bits = [int(getattr(fmtDesc, c)) for c in "xyzw"]
    channels = sum(1 for b in bits if b)
    fmt = _FORMATS.get((int(fmtDesc.f), bits[0]))
    if fmt is None or any(b not in (0, bits[0]) for b in bits) or channels not in (1, 2, 4):
        return _fail(conn, _INVALID_VALUE, f"{call}: no texture format for {fmtDesc!r}", 1)
    err = initialize(conn)
    if err:
        return _ret(err, None)
    return _ret(*driver.cuDeviceGetTexture1DLinearMaxWidth(fmt, channels, CUdevice(device)))


# -- array copies ----------------------------------------------------------------------------


def cudaMemcpyToArrayAsync(
    dst: Any, wOffset: int, hOffset: int, src: Any, count: int, kind: Any, stream: Any
) -> tuple[Any]:
    """As cudaMemcpyToArray, ordered on `stream` (answered when done: host memory is the
    client's)."""
    c = "cudaMemcpyToArrayAsync"
    return _linear(c, dst, size_t(wOffset, f"{c}: wOffset"), size_t(hOffset, f"{c}: hOffset"), src,
                   size_t(count, f"{c}: count"), kind, True, da.wire_stream(_stream(stream)))  # fmt: skip


def cudaMemcpyFromArrayAsync(
    dst: Any, src: Any, wOffset: int, hOffset: int, count: int, kind: Any, stream: Any
) -> tuple[Any]:
    c = "cudaMemcpyFromArrayAsync"
    return _linear(c, src, size_t(wOffset, f"{c}: wOffset"), size_t(hOffset, f"{c}: hOffset"), dst,
                   size_t(count, f"{c}: count"), kind, False, da.wire_stream(_stream(stream)))  # fmt: skip
