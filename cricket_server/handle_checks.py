"""Handle kinds checked from the facts of rpc_spec/cricket.x, before a handler runs.

An argument declared `cu_handle /* @handle(stream) */` may hold a stream handle only (or a
value that is no handle at all: the default streams, 0, what the session then refuses as
unknown). A handle's top byte names its kind (rpc_spec/handles.py), so a handle of another
kind is refused from its value alone, without a lookup: CUDA_ERROR_INVALID_HANDLE
(CUDA_ERROR_INVALID_CONTEXT where only a context may go, as the session answers), with a
message naming the procedure, the argument and both kinds. Unknown and foreign handles of
the right kind are the session's to refuse (`cricket_server.resources.HandleTable`).

`tag_masks` precomputes, once per procedure, the (argument index, mask of allowed kind
tags) that the dispatcher checks inline before it calls the handler (`TAGGED_ARGS`,
cricket_xdr.rpc.dispatch): a shift and a mask per handle argument, nothing at all for the
procedures that take no handle. `wrong_kind` words the refusal.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from cricket_server.backends.base import CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_HANDLE
from rpc_spec.handles import KIND_SHIFT, HandleKind, kind_of

__all__ = ["KIND_SHIFT", "tag_masks", "wrong_kind"]


def tag_masks(
    procedures: Iterable[Any], skip: Iterable[str] = ()
) -> dict[int, tuple[tuple[int, int], ...]]:
    """Procedure number -> ((argument index, bit t set for each kind tag t allowed there),
    ...) for each procedure (generated `Procedure`s) with `@handle` facts, but those named
    in `skip`."""
    skipped = set(skip)
    masks: dict[int, tuple[tuple[int, int], ...]] = {}
    for procedure in procedures:
        if not procedure.facts.handles or procedure.name in skipped:
            continue
        masks[procedure.number] = tuple(
            (index, sum(1 << HandleKind[kind.upper()].value for kind in kinds))
            for index, kinds in procedure.facts.handles
        )
    return masks


def wrong_kind(
    procedure: Any, handler: Callable[..., Any], args: tuple[Any, ...]
) -> tuple[int, str] | None:
    """(CUresult, message) when an argument of `procedure` holds a handle of a kind its
    `@handle` fact does not allow, else None (a tag that names no kind is no handle: the
    session refuses it as unknown). `handler` (its parameters: the call context, then the
    arguments) names the argument."""
    for index, kinds in procedure.facts.handles:
        value = args[index]
        actual = kind_of(value)
        if actual is None or actual.label in kinds:
            continue
        params = list(inspect.signature(handler).parameters)[1:]
        name = params[index] if index < len(params) else f"arg{index + 1}"
        wanted = " or ".join(f"a {k} handle" for k in kinds)  # as HandleTable words it
        article = "an" if actual.label[0] in "aeiou" else "a"
        code = CUDA_ERROR_INVALID_CONTEXT if tuple(kinds) == ("context",) else CUDA_ERROR_INVALID_HANDLE
        return code, (
            f"{procedure.name}: argument {index + 1} ({name}): handle {value:#x} is "
            f"{article} {actual.label} handle, not {wanted}"
        )
    return None
