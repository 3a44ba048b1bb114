"""The linker of `cricket_client.driver` (re-exported there): cuLinkCreate, cuLinkAddData,
cuLinkAddFile, cuLinkComplete, cuLinkDestroy with cuda-python's arguments and results.

A link state lives here: it collects the inputs (files are read here, on the client) and the
JIT options; cuLinkComplete sends them in one call (CU_LINK) and the server's driver links
them; the image is kept in the state, at an address of this process, until cuLinkDestroy.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

from ._args import size_t, uint
from ._types import Handle, as_int
from .driver import _INVALID_VALUE, _SUCCESS, _conn, _fail, _JitOptions, _option_list, _out
from .host_buffers import HostBufferError, read_host

__all__ = ["CUlinkState", "cuLinkAddData", "cuLinkAddFile", "cuLinkComplete", "cuLinkCreate", "cuLinkDestroy"]

_INVALID_HANDLE = 400  # CUDA_ERROR_INVALID_HANDLE
_FILE_NOT_FOUND = 301  # CUDA_ERROR_FILE_NOT_FOUND
_NOT_SUPPORTED = 801  # CUDA_ERROR_NOT_SUPPORTED
MAX_LINK_INPUTS = 1024


class CUlinkState(Handle):
    """A pending link: a handle of this process (the link runs on the server at completion)."""

    __slots__ = ()


@dataclass
class _Link:
    jit: _JitOptions
    inputs: list[tuple[int, str, bytes]] = field(default_factory=list)
    image: Any = None  # a ctypes buffer once complete


_links: dict[int, _Link] = {}
_lock = threading.Lock()
_ids = itertools.count(1)


def _link(state: Any) -> _Link | None:
    with _lock:
        return _links.get(as_int(state))


def _no_state(call: str, outputs: int) -> tuple[Any, ...]:
    return _fail(_conn(), _INVALID_HANDLE, f"{call}: not a link state of this process", outputs)


def cuLinkCreate(numOptions: int, options: Any, optionValues: Any) -> tuple[Any, CUlinkState | None]:
    n = uint(numOptions, "cuLinkCreate: numOptions")
    jit = _JitOptions("cuLinkCreate", list(options or [])[:n], list(optionValues or [])[:n])
    with _lock:
        ident = next(_ids)
        _links[ident] = _Link(jit)
    return (_SUCCESS, CUlinkState(ident))


def _per_input_options(call: str, numOptions: int) -> tuple[Any, ...] | None:
    if uint(numOptions, f"{call}: numOptions"):
        return _fail(
            _conn(), _NOT_SUPPORTED, f"{call}: per-input JIT options are not supported remotely (give them "
            "to cuLinkCreate)", 0,
        )  # fmt: skip
    return None


def _add(call: str, state: Any, kind: Any, data: bytes, name: str) -> tuple[Any]:
    link = _link(state)
    if link is None:
        return _no_state(call, 0)  # type: ignore[return-value]
    if len(link.inputs) >= MAX_LINK_INPUTS:
        return _fail(_conn(), _INVALID_VALUE, f"{call}: more than {MAX_LINK_INPUTS} inputs", 0)  # type: ignore[return-value]
    link.inputs.append((int(kind), name, data))
    return (_SUCCESS,)


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes | bytearray) else str(value or "")


def cuLinkAddData(
    state: Any, typename: Any, data: Any, size: int, name: Any, numOptions: int, options: Any,
    optionValues: Any,
) -> tuple[Any]:
    call = "cuLinkAddData"
    refused = _per_input_options(call, numOptions)
    if refused is not None:
        return refused  # type: ignore[return-value]
    try:
        raw = bytes(read_host(data, size_t(size, f"{call}: size"), f"{call}: data"))
    except HostBufferError as exc:
        return _fail(_conn(), _INVALID_VALUE, str(exc), 0)  # type: ignore[return-value]
    return _add(call, state, typename, raw, _text(name))


def cuLinkAddFile(
    state: Any, typename: Any, path: Any, numOptions: int, options: Any, optionValues: Any
) -> tuple[Any]:
    call = "cuLinkAddFile"
    refused = _per_input_options(call, numOptions)
    if refused is not None:
        return refused  # type: ignore[return-value]
    name = _text(path)
    try:
        with open(name, "rb") as f:
            raw = f.read()
    except OSError as exc:
        return _fail(_conn(), _FILE_NOT_FOUND, f"{call}: {name}: {exc.strerror}", 0)  # type: ignore[return-value]
    return _add(call, state, typename, raw, name)


def cuLinkComplete(state: Any) -> tuple[Any, int | None, int | None]:
    call = "cuLinkComplete"
    link = _link(state)
    if link is None:
        return _no_state(call, 2)  # type: ignore[return-value]
    conn = _conn()
    inputs = [conn.proto.link_input(type=t, name=n, data=d) for t, n, d in link.inputs]
    err, r = conn.sync("CU_LINK", inputs, _option_list(conn, link.jit.wire))
    if err:
        if r is not None and not isinstance(r, int):
            link.jit.fill("error", r.value or "")
        return _out(err, None, None)  # type: ignore[return-value]
    image = bytes(r.value.image)
    link.jit.fill("info", r.value.info_log)
    link.image = ctypes.create_string_buffer(image, len(image))
    return (_SUCCESS, ctypes.addressof(link.image), len(image))


def cuLinkDestroy(state: Any) -> tuple[Any]:
    with _lock:
        link = _links.pop(as_int(state), None)
    if link is None:
        return _no_state("cuLinkDestroy", 0)  # type: ignore[return-value]
    return (_SUCCESS,)
