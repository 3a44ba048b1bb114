"""The runtime's green contexts and execution contexts, a stream's device resources and the
structured SM split of `cuda.bindings.runtime`, remote, on the driver's green-context and
context calls.

An execution context is a context handle: a device's primary context
(cudaDeviceGetExecutionCtx) or a green context's own context (cudaGreenCtxCreate, which
keeps which green context it is, so that cudaExecutionCtxDestroy destroys that one; a
primary context is not destroyed by it: cudaErrorNotPermitted).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from . import driver_green_ctx as dg
from ._runtime_enums import cudaDevResourceType, cudaError_t
from ._types import as_int
from .connection import Connection
from .driver_sm_groups import CU_DEV_SM_RESOURCE_GROUP_PARAMS, sm_split_groups
from .plain_types import cudaExecutionContext_t
from .resource_types import cudaDevResource, descriptor_resources
from .runtime_arrays import _SUCCESS, _fail, _ready, _ret

__all__ = [
    "cudaDevSmResourceGroupParams",
    "cudaDevSmResourceGroupParams_st",
    "cudaStreamGetDevResource",
    "cudaDevSmResourceSplit",
    "cudaGreenCtxCreate",
    "cudaExecutionCtxDestroy",
    "cudaExecutionCtxGetDevResource",
    "cudaExecutionCtxRecordEvent",
    "cudaExecutionCtxWaitEvent",
    "cudaExecutionCtxSynchronize",
]

_GREEN_CTX_DEFAULT_STREAM = 0x1  # what the driver's cuGreenCtxCreate requires


class cudaDevSmResourceGroupParams(CU_DEV_SM_RESOURCE_GROUP_PARAMS):
    FIELDS: ClassVar[dict[str, Any]] = dict(CU_DEV_SM_RESOURCE_GROUP_PARAMS.FIELDS)


cudaDevSmResourceGroupParams_st = cudaDevSmResourceGroupParams


def _greens(conn: Connection) -> dict[int, int]:
    """context handle -> green context handle, of the green contexts the runtime made."""
    made: dict[int, int] | None = getattr(conn, "_runtime_green_ctxs", None)
    if made is None:
        made = {}
        conn._runtime_green_ctxs = made  # type: ignore[attr-defined]
    return made


def cudaStreamGetDevResource(hStream: Any, typename: Any) -> tuple[Any, Any]:
    from .driver_arrays import wire_stream

    err, conn = _ready()
    if err:
        return _ret(err, None)
    err, res = dg.resource_call(
        "CU_STREAM_GET_DEV_RESOURCE", wire_stream(hStream), int(typename),
        make=cudaDevResource, kind=cudaDevResourceType,
    )  # fmt: skip
    return _ret(err, res, conn=conn)


def cudaDevSmResourceSplit(
    nbGroups: int, input_: Any, flags: int, groupParams: Sequence[Any] | None
) -> tuple[Any, Any, Any]:
    err, conn = _ready()
    if err:
        return _ret(err, None, None)
    err, groups, remainder = sm_split_groups(
        "cudaDevSmResourceSplit", nbGroups, input_, flags, groupParams, cudaDevResource,
        cudaDevResourceType,
    )  # fmt: skip
    return _ret(err, groups, remainder, conn=conn)


def cudaGreenCtxCreate(desc: Any, device: int, flags: int) -> tuple[Any, Any]:
    """A green context of `desc`'s resources on `device`; its execution context."""
    from . import driver

    call = "cudaGreenCtxCreate"
    err, conn = _ready()
    if err:
        return _ret(err, None)
    if as_int(flags):
        return _fail(
            conn, cudaError_t.cudaErrorInvalidValue, f"{call}: flags {as_int(flags)} (must be 0)", 1
        )
    if descriptor_resources(as_int(desc)) is None:
        message = f"{call}: {desc!r} is not a descriptor of cudaDevResourceGenerateDesc"
        return _fail(conn, cudaError_t.cudaErrorInvalidValue, message, 1)
    err, green = driver.cuGreenCtxCreate(desc, int(device), _GREEN_CTX_DEFAULT_STREAM)
    if err:
        return _ret(err, None, conn=conn)
    err, ctx = driver.cuCtxFromGreenCtx(green)
    if err or ctx is None:
        driver.cuGreenCtxDestroy(green)
        return _ret(err, None, conn=conn)
    _greens(conn)[as_int(ctx)] = as_int(green)
    return (_SUCCESS, cudaExecutionContext_t(as_int(ctx)))


def cudaExecutionCtxDestroy(ctx: Any) -> tuple[Any]:
    """Destroys a green context made by cudaGreenCtxCreate (streams made in it stay)."""
    from . import driver

    call = "cudaExecutionCtxDestroy"
    err, conn = _ready()
    if err:
        return _ret(err)
    handle = as_int(ctx)
    green = _greens(conn).get(handle)
    if green is None:
        if not handle:
            return _fail(conn, cudaError_t.cudaErrorInvalidValue, f"{call}: ctx is NULL", 0)
        message = f"{call}: context {handle:#x} is not a green context of cudaGreenCtxCreate"
        return _fail(conn, cudaError_t.cudaErrorNotPermitted, message, 0)
    (err,) = driver.cuGreenCtxDestroy(driver.CUgreenCtx(green))
    if not err:
        del _greens(conn)[handle]
    return _ret(err, conn=conn)


def cudaExecutionCtxGetDevResource(ctx: Any, typename: Any) -> tuple[Any, Any]:
    err, conn = _ready()
    if err:
        return _ret(err, None)
    err, res = dg.resource_call(
        "CU_CTX_GET_DEV_RESOURCE", as_int(ctx), int(typename),
        make=cudaDevResource, kind=cudaDevResourceType,
    )  # fmt: skip
    return _ret(err, res, conn=conn)


def _ctx_call(work: Any) -> tuple[Any]:
    err, conn = _ready()
    if err:
        return _ret(err)
    return _ret(work()[0], conn=conn)


def cudaExecutionCtxRecordEvent(ctx: Any, event: Any) -> tuple[Any]:
    """The event records the work of every stream of the context so far."""
    from . import driver

    return _ctx_call(lambda: driver.cuCtxRecordEvent(driver.CUcontext(as_int(ctx)), event))


def cudaExecutionCtxWaitEvent(ctx: Any, event: Any) -> tuple[Any]:
    """The context's streams wait for the event."""
    from . import driver

    return _ctx_call(lambda: driver.cuCtxWaitEvent(driver.CUcontext(as_int(ctx)), event))


def cudaExecutionCtxSynchronize(ctx: Any) -> tuple[Any]:
    from . import driver

    return _ctx_call(lambda: driver.cuCtxSynchronize_v2(driver.CUcontext(as_int(ctx))))
