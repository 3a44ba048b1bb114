"""Flags, attributes and launch variants of `cricket_client.driver` (re-exported there):
context flags and cache configuration, cuLaunchKernelEx with launch attributes (one pipelined
call), occupancy of dynamic shared memory and clusters, stream priorities, flags and
attributes. Import it through `cricket_client.driver`."""

from __future__ import annotations

from typing import Any

from ._args import c_int, size_t, uint
from ._enums import CUfunc_cache, CUresult, CUstreamAttrID
from .driver import (
    _INVALID_VALUE,
    _NOT_SUPPORTED,
    _SUCCESS,
    _conn,
    _fail,
    _function_id,
    _handle,
    _out,
    _stream,
    cuOccupancyMaxPotentialBlockSize,
)
from .kernel_args import LaunchArgumentError, LaunchName, pack_kernel_params
from .launch_types import (
    CUlaunchAttribute,
    CUlaunchAttributeValue,
    CUlaunchConfig,
    CUstreamAttrValue,
    LaunchAttributeError,
    attribute_values,
)

__all__ = [
    "CUlaunchAttribute",
    "CUlaunchAttributeValue",
    "CUlaunchConfig",
    "CUstreamAttrValue",
    "cuCtxGetCacheConfig",
    "cuCtxGetFlags",
    "cuCtxSetCacheConfig",
    "cuCtxSetFlags",
    "cuLaunchKernelEx",
    "cuOccupancyAvailableDynamicSMemPerBlock",
    "cuOccupancyMaxActiveClusters",
    "cuOccupancyMaxPotentialClusterSize",
    "cuOccupancyMaxPotentialBlockSizeWithFlags",
    "cuStreamGetAttribute",
    "cuStreamGetFlags",
    "cuStreamGetPriority",
    "cuStreamSetAttribute",
]

_STREAM_FIELDS = {3: "syncPolicy", 8: "priority", 10: "memSyncDomain"}


# -- contexts -------------------------------------------------------------------------------


def cuCtxGetFlags() -> tuple[Any, int | None]:
    err, value = _conn().call("CU_CTX_GET_FLAGS")
    return _out(err, value)


def cuCtxSetFlags(flags: int) -> tuple[Any]:
    return _out(_conn().call("CU_CTX_SET_FLAGS", uint(flags, "cuCtxSetFlags: flags"))[0])


def cuCtxGetCacheConfig() -> tuple[Any, Any]:
    err, value = _conn().call("CU_CTX_GET_CACHE_CONFIG")
    return _out(err, CUfunc_cache(value) if not err else None)


def cuCtxSetCacheConfig(config: Any) -> tuple[Any]:
    return _out(_conn().call("CU_CTX_SET_CACHE_CONFIG", int(config))[0])


# -- occupancy ------------------------------------------------------------------------------


def cuOccupancyAvailableDynamicSMemPerBlock(
    func: Any, numBlocks: int, blockSize: int
) -> tuple[Any, int | None]:
    call = "cuOccupancyAvailableDynamicSMemPerBlock"
    numBlocks = c_int(numBlocks, f"{call}: numBlocks")
    blockSize = c_int(blockSize, f"{call}: blockSize")
    conn = _conn()
    err, fn = _function_id(conn, func)
    if err:
        return _out(err, None)
    err, value = conn.call("CU_OCCUPANCY_AVAILABLE_DYNAMIC_SMEM_PER_BLOCK", fn, numBlocks, blockSize)
    return _out(err, value)


def cuOccupancyMaxPotentialBlockSizeWithFlags(
    func: Any,
    blockSizeToDynamicSMemSize: Any,
    dynamicSMemSize: int,
    blockSizeLimit: int,
    flags: int,
) -> tuple[Any, int | None, int | None]:
    call = "cuOccupancyMaxPotentialBlockSizeWithFlags"
    flags = uint(flags, f"{call}: flags")
    if not flags:
        return cuOccupancyMaxPotentialBlockSize(
            func, blockSizeToDynamicSMemSize, dynamicSMemSize, blockSizeLimit
        )
    conn = _conn()
    if blockSizeToDynamicSMemSize not in (None, 0):
        return _fail(conn, _NOT_SUPPORTED, f"{call}: callbacks are not supported remotely", 2)
    err, r = conn.sync(
        "CU_OCCUPANCY_MAX_POTENTIAL_BLOCK_SIZE",
        _handle(func, "func"),
        size_t(dynamicSMemSize, f"{call}: dynamicSMemSize"),
        c_int(blockSizeLimit, f"{call}: blockSizeLimit"),
        flags,
    )
    if err:
        return _out(err, None, None)
    return (_SUCCESS, r.value.first, r.value.second)


def _wire_attrs(conn: Any, call: str, config: Any) -> list[Any]:
    """The config's first numAttrs attributes as launch_attribute structs."""
    attrs = list(config.attrs or [])[: int(config.numAttrs)]
    if len(attrs) < int(config.numAttrs):
        raise LaunchAttributeError(
            f"{call}: numAttrs is {config.numAttrs} but attrs has {len(attrs)}"
        )
    wire = []
    for attr in attrs:
        attr_id = int(attr.id)
        try:
            x, y, z = attribute_values(attr_id, attr.value)
        except LaunchAttributeError as exc:
            raise LaunchAttributeError(f"{call}: {exc}") from None
        wire.append(conn.proto.launch_attribute(id=attr_id, x=x, y=y, z=z))
    return wire


def cuOccupancyMaxActiveClusters(func: Any, config: Any) -> tuple[Any, int | None]:
    return _cluster_query("cuOccupancyMaxActiveClusters", "CU_OCCUPANCY_MAX_ACTIVE_CLUSTERS", func, config)


def cuOccupancyMaxPotentialClusterSize(func: Any, config: Any) -> tuple[Any, int | None]:
    return _cluster_query(
        "cuOccupancyMaxPotentialClusterSize", "CU_OCCUPANCY_MAX_POTENTIAL_CLUSTER_SIZE", func, config
    )


def _cluster_query(call: str, proc: str, func: Any, config: Any) -> tuple[Any, int | None]:
    conn = _conn()
    if not hasattr(config, "gridDimX"):
        return _fail(conn, _INVALID_VALUE, f"{call}: config is not a CUlaunchConfig", 1)
    try:
        attrs = _wire_attrs(conn, call, config)
    except LaunchAttributeError as exc:
        return _fail(conn, _NOT_SUPPORTED, str(exc), 1)
    err, fn = _function_id(conn, func)
    if err:
        return _out(err, None)
    cfg = conn.proto.cluster_config(
        grid_x=uint(config.gridDimX, f"{call}: gridDimX"),
        grid_y=uint(config.gridDimY, f"{call}: gridDimY"),
        grid_z=uint(config.gridDimZ, f"{call}: gridDimZ"),
        block_x=uint(config.blockDimX, f"{call}: blockDimX"),
        block_y=uint(config.blockDimY, f"{call}: blockDimY"),
        block_z=uint(config.blockDimZ, f"{call}: blockDimZ"),
        shared_mem_bytes=uint(config.sharedMemBytes, f"{call}: sharedMemBytes"),
        attrs=attrs,
    )
    err, r = conn.sync(proc, fn, cfg)
    return _out(err, r.value if not err else None)


# -- launches -------------------------------------------------------------------------------


def cuLaunchKernelEx(config: Any, f: Any, kernelParams: Any, extra: Any) -> tuple[Any]:
    """One pipelined call (CU_LAUNCH_KERNEL_EX) carrying the launch and its attributes."""
    call = "cuLaunchKernelEx"
    conn = _conn()
    if conn.mapped is not None:  # the program's writes to mapped host memory go first
        conn.mapped.push(conn)
    if not hasattr(config, "gridDimX"):
        return _fail(conn, _INVALID_VALUE, f"{call}: config is not a CUlaunchConfig", 0)
    try:
        attrs = _wire_attrs(conn, call, config)
    except LaunchAttributeError as exc:
        return _fail(conn, _NOT_SUPPORTED, str(exc), 0)
    err, func = _function_id(conn, f)
    if err:
        return _out(err)
    err, layout = conn.param_layout(func)
    if err:
        return _out(err)
    try:
        params = pack_kernel_params(LaunchName(call, func), layout, kernelParams, extra)
    except LaunchArgumentError as exc:
        return _fail(conn, _INVALID_VALUE, str(exc), 0)
    launch = conn.proto.launch_args(
        function=func,
        grid_x=uint(config.gridDimX, f"{call}: gridDimX"),
        grid_y=uint(config.gridDimY, f"{call}: gridDimY"),
        grid_z=uint(config.gridDimZ, f"{call}: gridDimZ"),
        block_x=uint(config.blockDimX, f"{call}: blockDimX"),
        block_y=uint(config.blockDimY, f"{call}: blockDimY"),
        block_z=uint(config.blockDimZ, f"{call}: blockDimZ"),
        shared_mem_bytes=uint(config.sharedMemBytes, f"{call}: sharedMemBytes"),
        stream=_stream(config.hStream),
        params=params,
    )
    conn.post("CU_LAUNCH_KERNEL_EX", conn.proto.launch_ex_args(launch=launch, attrs=attrs))
    return (_SUCCESS,)


# -- streams --------------------------------------------------------------------------------


def cuStreamGetPriority(hStream: Any) -> tuple[Any, int | None]:
    err, value = _conn().call("CU_STREAM_GET_PRIORITY", _stream(hStream))
    return _out(err, value)


def cuStreamGetFlags(hStream: Any) -> tuple[Any, int | None]:
    err, value = _conn().call("CU_STREAM_GET_FLAGS", _stream(hStream))
    return _out(err, value)


def cuStreamGetAttribute(hStream: Any, attr: Any) -> tuple[Any, CUstreamAttrValue | None]:
    err, value = _conn().call("CU_STREAM_GET_ATTRIBUTE", _stream(hStream), int(attr))
    if err:
        return _out(err, None)
    out = CUstreamAttrValue()
    field = _STREAM_FIELDS.get(int(attr))
    if field is not None:
        setattr(out, field, value)
    return (_SUCCESS, out)


def cuStreamSetAttribute(hStream: Any, attr: Any, value: Any) -> tuple[Any]:
    conn = _conn()
    attr = int(attr)
    field = _STREAM_FIELDS.get(attr)
    if field is None:
        try:
            name = CUstreamAttrID(attr).name
        except ValueError:
            return _fail(conn, _INVALID_VALUE, f"cuStreamSetAttribute: {attr} is not an attribute", 0)
        return _fail(
            conn,
            _NOT_SUPPORTED,
            f"cuStreamSetAttribute: {name} is not supported remotely (it names host memory of "
            "this process or is no stream attribute)",
            0,
        )
    if value is None:
        return (CUresult.CUDA_ERROR_INVALID_VALUE,)
    number = c_int(int(getattr(value, field)), f"cuStreamSetAttribute: value.{field}")
    return _out(conn.call("CU_STREAM_SET_ATTRIBUTE", _stream(hStream), attr, number)[0])
