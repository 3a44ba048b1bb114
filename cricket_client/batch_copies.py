"""Batched copies between pointers (cuMemcpyBatchAsync, cudaMemcpyBatchAsync): each copy of
the batch is the stream-ordered copy its two pointers make (device or the client's host
memory, as cuMemcpyAsync decides by unified addressing), in the order given.

CUDA leaves the order within a batch open and treats the attributes as permissions and hints
(source access order, location hints, overlap preference): copying in the given order in
stream order meets every one of them. They are checked as CUDA checks them: `attrsIdxs`
starts at 0, rises, and stays below `count`; a source access order is one of STREAM,
DURING_API_CALL and ANY.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from ._args import size_t
from ._types_vmm import CUmemLocation, _Struct
from .connection import get_connection

__all__ = [
    "CUmemcpyAttributes",
    "cudaMemcpyAttributes",
    "cuMemcpyBatchAsync",
    "cudaMemcpyBatchAsync",
    "cuMemcpyWithAttributesAsync",
    "cudaMemcpyWithAttributesAsync",
]

_ACCESS_ORDERS = (1, 2, 3)  # CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, _DURING_API_CALL, _ANY


class CUmemcpyAttributes(_Struct):
    _fields = ("srcAccessOrder", "srcLocHint", "dstLocHint", "flags")

    def _default(self, name: str) -> Any:
        return CUmemLocation() if name in ("srcLocHint", "dstLocHint") else 0


class cudaMemcpyAttributes(CUmemcpyAttributes):
    pass


def _items(call: str, name: str, values: Sequence[Any] | None, count: int) -> list[Any]:
    items = list(values or [])
    if len(items) < count:
        raise RuntimeError(f"{call}: {name}: List is too small: {len(items)} < {count}")
    return items[:count]


def _attributes_problem(attrs: list[Any], idxs: list[int], count: int) -> str:
    """Why the attributes do not describe the batch, or ''."""
    if not attrs:
        return "numAttrs is 0: every copy needs attributes"
    if len(attrs) > count:
        return f"numAttrs {len(attrs)} exceeds count {count}"
    if idxs[0] != 0:
        return f"attrsIdxs[0] is {idxs[0]}, not 0"
    if any(b <= a for a, b in itertools.pairwise(idxs)) or idxs[-1] >= count:
        return f"attrsIdxs {idxs} must rise and stay below count {count}"
    for i, attr in enumerate(attrs):
        if int(attr.srcAccessOrder) not in _ACCESS_ORDERS:
            return f"attrs[{i}].srcAccessOrder {int(attr.srcAccessOrder)} is not a source access order"
    return ""


def cuMemcpyBatchAsync(
    dsts: Sequence[Any] | None,
    srcs: Sequence[Any] | None,
    sizes: Sequence[int],
    count: int,
    attrs: Sequence[Any] | None,
    attrsIdxs: Sequence[int],
    numAttrs: int,
    hStream: Any,
) -> tuple[Any]:
    from .driver import _INVALID_VALUE, _SUCCESS, _memcpy, _stream
    from .driver_graphs import _fail

    call = "cuMemcpyBatchAsync"
    n = size_t(count, f"{call}: count")
    k = size_t(numAttrs, f"{call}: numAttrs")
    to, frm = _items(call, "dsts", dsts, n), _items(call, "srcs", srcs, n)
    nbytes = [size_t(s, f"{call}: sizes") for s in _items(call, "sizes", sizes, n)]
    attributes = _items(call, "attrs", attrs, k)
    idxs = [size_t(i, f"{call}: attrsIdxs") for i in _items(call, "attrsIdxs", attrsIdxs, k)]
    conn = get_connection()
    if not n:
        return _fail(conn, _INVALID_VALUE, f"{call}: count is 0", 0)  # type: ignore[return-value]
    problem = _attributes_problem(attributes, idxs, n)
    if problem:
        return _fail(conn, _INVALID_VALUE, f"{call}: {problem}", 0)  # type: ignore[return-value]
    stream = _stream(hStream)
    for dst, src, size in zip(to, frm, nbytes, strict=True):
        err = _memcpy(call, dst, src, size, stream)[0]
        if err:
            return (err,)
    return (_SUCCESS,)


def cuMemcpyWithAttributesAsync(dst: Any, src: Any, size: int, attr: Any, hStream: Any) -> tuple[Any]:
    """One copy with its attributes: a batch of one."""
    if attr is None:
        from .driver import _INVALID_VALUE
        from .driver_graphs import _fail

        message = "cuMemcpyWithAttributesAsync: attr is required"
        return _fail(get_connection(), _INVALID_VALUE, message, 0)  # type: ignore[return-value]
    return cuMemcpyBatchAsync([dst], [src], [size], 1, [attr], [0], 1, hStream)


def cudaMemcpyWithAttributesAsync(dst: Any, src: Any, size: int, attr: Any, stream: Any) -> tuple[Any]:
    from .runtime_graphs import _run

    return _run(lambda: cuMemcpyWithAttributesAsync(dst, src, size, attr, stream), 0)  # type: ignore[return-value]


def cudaMemcpyBatchAsync(
    dsts: Sequence[Any] | None,
    srcs: Sequence[Any] | None,
    sizes: Sequence[int],
    count: int,
    attrs: Sequence[Any] | None,
    attrsIdxs: Sequence[int],
    numAttrs: int,
    stream: Any,
) -> tuple[Any]:
    from .runtime_graphs import _run

    return _run(  # type: ignore[return-value]
        lambda: cuMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream), 0
    )
