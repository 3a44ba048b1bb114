"""The cuda backend's small queries (procedures 720-779): a module's functions and a
library's kernels by name, library globals, loading state, a context's API version and shared memory
bank size, events of a whole context and the 1D linear texture width, each asked of the driver in the session's current context."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from ... import stream_mem_ops as smo
from ..base import GlobalInfo
from ._driver import call, driver, enum_value

__all__ = ["CudaQueries", "texture_1d_linear_max_width"]


def _text(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    return bytes(raw).split(b"\0", 1)[0].decode()


_WAIT_WRITE = {
    smo.WAIT_32: driver.cuStreamWaitValue32,
    smo.WAIT_64: driver.cuStreamWaitValue64,
    smo.WRITE_32: driver.cuStreamWriteValue32,
    smo.WRITE_64: driver.cuStreamWriteValue64,
}


class CudaQueries:
    _state: Any  # CudaSession: makes the session's device current
    _stream: Any  # CudaSession: the driver's stream of a backend stream (None: legacy)
    forget_repeated_batches: Any  # CudaSession: drops the graphs of repeated launch batches

    def stream_mem_ops(self, stream: object | None, ops: Sequence[Any]) -> None:
        """Each operation as its own call on the stream, in order (waits and writes through
        cuStreamWaitValue/WriteValue, barriers and flushes through cuStreamBatchMemOp)."""
        self._state()
        s = self._stream(stream)
        for m in ops:
            fn = _WAIT_WRITE.get(m.op)
            if fn is not None:
                wide = m.op in (smo.WAIT_64, smo.WRITE_64)
                value = driver.cuuint64_t(m.value) if wide else driver.cuuint32_t(m.value)
                call(fn, s, driver.CUdeviceptr(m.address), value, m.flags)
                continue
            params = driver.CUstreamBatchMemOpParams()
            kind = driver.CUstreamBatchMemOpType(m.op)
            params.operation = kind
            arm = params.memoryBarrier if m.op == smo.BARRIER else params.flushRemoteWrites
            arm.operation = kind
            arm.flags = m.flags
            call(driver.cuStreamBatchMemOp, s, 1, [params], 0)

    def module_function_names(self, module: object) -> list[str]:
        self._state()
        count = int(call(driver.cuModuleGetFunctionCount, module))
        functions = call(driver.cuModuleEnumerateFunctions, count, module) if count else []
        return [_text(call(driver.cuFuncGetName, f)) for f in functions]

    def library_kernel_names(self, library: object) -> list[str]:
        self._state()
        count = int(call(driver.cuLibraryGetKernelCount, library))
        kernels = call(driver.cuLibraryEnumerateKernels, count, library) if count else []
        return [_text(call(driver.cuKernelGetName, k)) for k in kernels]

    def library_get_global(self, library: object, name: str) -> GlobalInfo:
        self._state()
        address, size = call(driver.cuLibraryGetGlobal, library, name.encode(), what=repr(name))
        return GlobalInfo(int(address), int(size))

    def func_is_loaded(self, func: object) -> int:
        self._state()
        return int(call(driver.cuFuncIsLoaded, func))

    def func_load(self, func: object) -> None:
        self._state()
        call(driver.cuFuncLoad, func)

    def module_loading_mode(self) -> int:
        self._state()
        return int(call(driver.cuModuleGetLoadingMode))

    def ctx_record_event(self, event: object) -> None:
        state = self._state()
        call(driver.cuCtxRecordEvent, state.context.handle, event)

    def ctx_wait_event(self, event: object) -> None:
        state = self._state()
        call(driver.cuCtxWaitEvent, state.context.handle, event)

    def profiler_start(self) -> None:
        self._state()
        call(driver.cuProfilerStart)

    def profiler_stop(self) -> None:
        self._state()
        call(driver.cuProfilerStop)

    def ctx_reset_persisting_l2_cache(self) -> None:
        self._state()
        call(driver.cuCtxResetPersistingL2Cache)

    def ctx_get_shared_mem_config(self) -> int:
        self._state()
        return int(call(driver.cuCtxGetSharedMemConfig))

    def ctx_set_shared_mem_config(self, config: int) -> None:
        self._state()
        self.forget_repeated_batches()
        value = enum_value(driver.CUsharedconfig, config, "cuCtxSetSharedMemConfig")
        call(driver.cuCtxSetSharedMemConfig, value)

    def func_set_shared_mem_config(self, func: object, config: int) -> None:
        self._state()
        self.forget_repeated_batches()
        value = enum_value(driver.CUsharedconfig, config, "cuFuncSetSharedMemConfig")
        call(driver.cuFuncSetSharedMemConfig, func, value)

    def tensor_map_encode(self, request: Any) -> bytes:
        self._state()
        r = request
        data_type = enum_value(driver.CUtensorMapDataType, r.data_type, r.call)
        dims = [driver.cuuint64_t(d) for d in r.global_dim]
        strides = [driver.cuuint64_t(s) for s in r.global_strides]
        elements = [driver.cuuint32_t(e) for e in r.element_strides]
        tail = (
            enum_value(driver.CUtensorMapInterleave, r.interleave, r.call),
            enum_value(driver.CUtensorMapSwizzle, r.swizzle, r.call),
            enum_value(driver.CUtensorMapL2promotion, r.l2_promotion, r.call),
            enum_value(driver.CUtensorMapFloatOOBfill, r.oob_fill, r.call),
        )
        if r.kind == 0:
            boxes = [driver.cuuint32_t(b) for b in r.box_dim]
            made = call(
                driver.cuTensorMapEncodeTiled,
                data_type, r.rank, r.address, dims, strides, boxes, elements, *tail,
            )  # fmt: skip
        else:
            made = call(
                driver.cuTensorMapEncodeIm2col,
                data_type, r.rank, r.address, dims, strides, list(r.lower_corner),
                list(r.upper_corner), r.channels_per_pixel, r.pixels_per_column, elements, *tail,
            )  # fmt: skip
        return _map_bytes(made)

    def tensor_map_replace_address(self, tensor_map: bytes, address: int) -> bytes:
        self._state()
        made = driver.CUtensorMap()
        made.opaque = [driver.cuuint64_t(v) for v in struct.unpack("<16Q", tensor_map)]
        call(driver.cuTensorMapReplaceAddress, made, address)
        return _map_bytes(made)

    def ctx_api_version(self) -> int:
        state = self._state()
        return int(call(driver.cuCtxGetApiVersion, state.context.handle))


def _map_bytes(made: Any) -> bytes:
    """The 128 bytes of a CUtensorMap (16 little-endian 64-bit words)."""
    return struct.pack("<16Q", *(int(v) for v in made.opaque))


def texture_1d_linear_max_width(device: Any, fmt: int, channels: int) -> int:
    """cuDeviceGetTexture1DLinearMaxWidth of the driver's device `device`."""
    pformat = enum_value(driver.CUarray_format, fmt, "cuDeviceGetTexture1DLinearMaxWidth")
    return int(call(driver.cuDeviceGetTexture1DLinearMaxWidth, pformat, channels, device))
