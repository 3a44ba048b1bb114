"""Every forwarded function returns cuda-python's tuple shape, also when the call fails.

A server that fails every CUDA procedure answers each call; the length of the returned tuple
is compared with the Returns section of cuda.bindings.driver's documentation of the function.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from bindings_mirror import struct_parameters
from test_client_fakes import FakeCricket, FakeServer

import cricket_client
from cricket_client import driver as cuda

real = pytest.importorskip("cuda.bindings.driver")

_SESSION_PROCS = {"HELLO", "GOODBYE", "GET_ERROR_MESSAGE"}


def _failure(codec: Any) -> Any:
    cls = getattr(codec, "cls", None)
    if cls is None:
        return 1  # a plain `int` CUresult
    for candidate in (cls(1), cls(1, "")):
        try:
            codec.encode(candidate)
            return candidate
        except Exception:
            continue
    raise AssertionError(f"cannot build a failure of {codec}")


class FailingCricket(FakeCricket):
    """Answers every CUDA procedure with CUDA_ERROR_INVALID_VALUE."""


for _proc in FakeCricket.PROCEDURES.values():
    if _proc.name not in _SESSION_PROCS:
        setattr(
            FailingCricket,
            _proc.name,
            (lambda value: lambda self, ctx, *args: value)(_failure(_proc.result_codec)),
        )


def _expected_length(name: str) -> int:
    doc = inspect.cleandoc(getattr(real, name).__doc__)
    section = re.split(r"\n\s*Returns\n\s*-------\n", doc, maxsplit=1)[1]
    section = re.split(r"\n(?:See Also|Notes|Examples)\n", section, maxsplit=1)[0]
    return sum(1 for line in section.splitlines() if re.match(r"^\w+ : ", line)) + 1


_DUMMY: dict[str, Any] = {
    "image": b"// ptx", "fatCubin": b"// ptx", "code": b"// ptx", "name": b"kernel",
    "kernelParams": None, "extra": 0, "ctxCreateParams": None, "blockSizeToDynamicSMemSize": None,
    "options": None, "optionValues": None, "jitOptions": None, "jitOptionsValues": None,
    "libraryOptions": None, "libraryOptionValues": None, "attributes": [],
    "length": 16, "ByteCount": 16, "pResViewDesc": None, "path": os.devnull, "operations": [],
}
_HOST = {"srcHost", "dstHost", "src", "dst"}
_NOT_HOST = {  # streams or graph nodes by those names
    "cuStreamCopyAttributes": {"src", "dst"}, "cuGraphKernelNodeCopyAttributes": {"src", "dst"},
}


def _arguments(fn: Any) -> list[Any]:
    args = []
    structs = struct_parameters(getattr(real, fn.__name__), cuda)
    for param in inspect.signature(fn).parameters:
        if param in structs:
            args.append(structs[param])
        elif param in _HOST and param not in _NOT_HOST.get(fn.__name__, ()):
            args.append(bytearray(16))
        else:
            args.append(_DUMMY.get(param, 0))
    return args


@pytest.fixture(scope="module")
def failing_server() -> Iterator[FakeServer]:
    srv = FakeServer(FailingCricket())
    yield srv
    srv.stop()


@pytest.mark.parametrize("name", sorted(cuda.SUPPORTED))
def test_result_tuple_has_cuda_pythons_shape(failing_server: FakeServer, name: str) -> None:
    fn = getattr(cuda, name)
    conn = cricket_client.connect(failing_server.address, make_default=False)
    try:
        with conn.active():
            result = fn(*_arguments(fn))
            result = result if isinstance(result, tuple) else (result,)
            conn.drain()
    finally:
        conn.close()
    assert isinstance(result[0], cuda.CUresult)
    assert len(result) == _expected_length(name), result
    if result[0] != cuda.CUresult.CUDA_SUCCESS:
        assert all(v is None for v in result[1:])
