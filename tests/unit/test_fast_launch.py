"""The C launch loop of the cuda backend (cricket_server.backends.cuda.fast_launch), with a
stand-in for cuLaunchKernel: it makes a batch's launches in order with each launch's own
parameter bytes, hands back what its tables do not cover, and the session layer over it
makes the same launches and reports the same first failure as the launch-by-launch path."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Iterator
from typing import Any

from test_session_fakes import FakeFunction, FakeSession, make_manager

from cricket_server.backends.base import CUDA_ERROR_INVALID_HANDLE, CudaError
from cricket_server.backends.cuda import fast_launch
from cricket_server.launch_batch import decode_launch_batch
from cricket_server.session import Session

LAUNCH_FAILED = 719


def _args(fn: int, stream: int, params: bytes, grid: int = 1) -> bytes:
    n = len(params)
    head = struct.pack(">Q7IQI", fn, grid, 1, 1, 32, 1, 1, 0, stream, n)
    return head + params + b"\0" * (-n & 3)


def _batch(*launches: bytes) -> bytes:
    return struct.pack(">I", len(launches)) + b"".join(launches)


class Recorder:
    """A cricket_launch_fn stand-in: records (function, grid x, stream, parameter bytes);
    answers `fail_at` for the launch of that number (0-based)."""

    def __init__(self, ffi: Any, sizes: dict[int, int], fail_at: int = -1) -> None:
        self.ffi = ffi
        self.sizes = sizes  # kernelParams address -> parameter bytes behind it
        self.made: list[tuple[int, int, int, bytes]] = []
        self.fail_at = fail_at
        self.calls = 0
        self.fn = ffi.callback("cricket_launch_fn", self._launch)

    def _launch(self, f: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                shared: int, stream: Any, params: Any, extra: Any) -> int:  # fmt: skip
        ffi = self.ffi
        number, self.calls = self.calls, self.calls + 1
        if number == self.fail_at:
            return LAUNCH_FAILED
        address = int(ffi.cast("uintptr_t", params))
        data = b""
        if address:
            first = int(ffi.cast("uintptr_t", ffi.cast("void **", params)[0]))
            data = ctypes.string_at(first, self.sizes[address])
        self.made.append(
            (int(ffi.cast("uintptr_t", f)), gx, int(ffi.cast("uintptr_t", stream)), data)
        )
        return 0


class Params:
    """A function's parameter memory and its one-entry kernelParams array."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.memory = ctypes.create_string_buffer(max(size, 1))
        self.pointers = (ctypes.c_void_p * 1)(ctypes.addressof(self.memory))
        self.address = ctypes.addressof(self.pointers) if size else 0


def test_the_loop_makes_each_launch_with_its_own_parameters(loop: tuple[Any, Any]) -> None:
    ffi, lib = loop
    p = Params(8)
    rec = Recorder(ffi, {p.address: 8})
    fast = fast_launch.FastLauncher(ffi, lib, rec.fn)
    fast.add_function_raw(5, 0x5000, p.address, ctypes.addressof(p.memory), 8)
    fast.add_stream_raw(0, 1)
    fast.add_stream_raw(9, 0x9000)
    body = _batch(
        _args(5, 0, b"AAAAAAAA", grid=1), _args(5, 9, b"BBBBBBBBxx", grid=2), _args(5, 0, b"C" * 8, 3)
    )  # fmt: skip
    assert fast.run(body, 0) == (3, 0)
    assert rec.made == [
        (0x5000, 1, 1, b"AAAAAAAA"), (0x5000, 2, 0x9000, b"BBBBBBBB"), (0x5000, 3, 1, b"C" * 8)
    ]  # fmt: skip
    assert fast.run(body, 2) == (3, 0) and rec.made[-1][1] == 3  # from a given launch on


def test_the_loop_hands_back_what_its_tables_do_not_cover(loop: tuple[Any, Any]) -> None:
    ffi, lib = loop
    p = Params(8)
    rec = Recorder(ffi, {p.address: 8}, fail_at=1)
    fast = fast_launch.FastLauncher(ffi, lib, rec.fn)
    body = _batch(_args(5, 0, b"A" * 8), _args(5, 0, b"B" * 8), _args(6, 0, b"C" * 8),
                  _args(5, 7, b"D" * 8), _args(5, 0, b"E" * 4))  # fmt: skip
    assert fast.run(body, 0) == (0, 0)  # function 5 unknown
    fast.add_function_raw(5, 0x5000, p.address, ctypes.addressof(p.memory), 8)
    assert fast.run(body, 0) == (0, 0)  # stream 0 unknown
    fast.add_stream_raw(0, 1)
    assert fast.run(body, 0) == (1, LAUNCH_FAILED)  # the driver refused launch 1
    assert fast.run(body, 2) == (2, 0)  # function 6 unknown
    assert fast.run(body, 3) == (3, 0)  # stream 7 unknown
    assert fast.run(body, 4) == (4, 0)  # 4 parameter bytes, the function takes 8
    assert [m[3] for m in rec.made] == [b"A" * 8]
    # a record cut inside launch 1's parameters: launch 0 made, nothing read past the end
    cut = _batch(_args(5, 0, b"F" * 8), _args(5, 0, b"G" * 8))[:-3]
    assert fast.run(cut, 0) == (1, 0)
    assert fast.run(cut[:20], 0) == (0, 0)  # cut inside launch 0's head
    assert [m[3] for m in rec.made] == [b"A" * 8, b"F" * 8]


# -- the session layer over the loop ------------------------------------------------------------


class FastFake(FakeSession):
    """The fake backend session with the C loop: the stand-in launch records into `launches`
    as `launch` does."""

    loop: tuple[Any, Any]

    def fast_launcher(self, keep: object = None) -> Any:
        ffi, lib = self.loop
        if not hasattr(self, "_fast"):
            self._functions: dict[int, FakeFunction] = {}
            self._params: dict[int, Params] = {}
            self._streams: dict[int, object] = {}
            self._rec = Recorder(ffi, {})
            self._rec.made = _Forward(self)  # type: ignore[assignment]
            self._fast = fast_launch.FastLauncher(
                ffi, lib, self._rec.fn, function=self._function, stream=self._stream_key
            )
        self._fast.keep_for(keep)
        return self._fast

    def _function(self, func: Any) -> tuple[int, int, int, int]:
        key = id(func)
        self._functions[key] = func
        size = max((p.offset + p.size for p in func.params), default=0)
        params = self._params.setdefault(key, Params(size))
        self._rec.sizes[params.address] = size
        return key, params.address, ctypes.addressof(params.memory), size

    def _stream_key(self, stream: Any) -> int:
        key = id(stream) if stream is not None else 1
        self._streams[key] = stream
        return key


class _Forward(list):  # type: ignore[type-arg]
    """What the stand-in launch made, passed on to the fake session's `launch`."""

    def __init__(self, session: FastFake) -> None:
        super().__init__()
        self.session = session

    def append(self, made: Any) -> None:
        key, gx, stream, data = made
        s = self.session
        s.launch(s._functions[key], (gx, 1, 1), (32, 1, 1), 0, s._streams[stream],
                 memoryview(data))  # fmt: skip


def _session(fast: bool, loop: tuple[Any, Any]) -> Iterator[Session]:
    manager, backend = make_manager()
    s = manager.open("127.0.0.1:1", "client")
    if fast:
        FastFake.loop = loop
        s.bsession.__class__ = FastFake
    s.init(0)
    s.ctx_set_current(s.primary_ctx_retain(0))
    yield s


def _run(s: Session) -> tuple[list[tuple[str, bytes]], str | None]:
    module = s.module_load(b"MOD fake cubin", {})
    add = s.module_get_function(module, "add")
    noargs = s.module_get_function(module, "noargs")
    stream = s.stream_create(0, 0)
    body = _batch(
        _args(add, 0, bytes(range(20))), _args(noargs, stream, b""),
        _args(add, stream, bytes(range(1, 25))),
        _args(add | 0xFFF, 0, bytes(20)),  # no such function
        _args(add, 0, bytes(8)),  # too few parameter bytes
        _args(add, 0xBAD, bytes(20)),  # no such stream
        _args(noargs, 0, b""),
    )  # fmt: skip
    error = None
    try:
        s.launch_batch(decode_launch_batch(body))
    except CudaError as e:
        assert e.code == CUDA_ERROR_INVALID_HANDLE
        error = e.message
    fake = s.bsession
    assert isinstance(fake, FakeSession)
    # the bytes the function takes (a backend copies those: cuda's ParamBuffer.fill)
    return [(f.name, params[: 20 if f.params else 0]) for f, params in fake.launches], error


def test_the_session_over_the_loop_makes_what_launch_by_launch_makes(
    loop: tuple[Any, Any],
) -> None:
    slow = _run(next(_session(False, loop)))
    fast = _run(next(_session(True, loop)))
    assert fast == slow
    made, error = fast
    assert [name for name, _ in made] == ["add", "noargs", "add", "noargs"]
    assert made[0][1] == bytes(range(20)) and made[2][1] == bytes(range(1, 21))
    assert error is not None and error.startswith("launch 4 of 7 in a batch: ")


def test_the_loop_keeps_its_tables_until_a_handle_goes(loop: tuple[Any, Any]) -> None:
    """A framework's loop sends one launch a batch: the second batch of the same function
    and stream is made by the loop alone; once the stream is destroyed, a batch naming it is
    refused (not launched on what the handle meant), as launch by launch."""
    s = next(_session(True, loop))
    module = s.module_load(b"MOD fake cubin", {})
    add = s.module_get_function(module, "add")
    stream = s.stream_create(0, 0)
    looked_up: list[int] = []
    target = s._launch_target

    def counted(call: str, handle: int) -> tuple[object, int, str]:
        looked_up.append(handle)
        return target(call, handle)

    s._launch_target = counted  # type: ignore[method-assign]
    for value in range(3):
        s.launch_batch(decode_launch_batch(_batch(_args(add, stream, bytes([value]) * 20))))
    assert looked_up == [add]  # the first batch filled the tables; the others used them
    fake = s.bsession
    assert isinstance(fake, FakeSession)
    assert [bytes(p[:20]) for _f, p in fake.launches] == [bytes([v]) * 20 for v in range(3)]
    s.stream_destroy(stream)
    try:
        s.launch_batch(decode_launch_batch(_batch(_args(add, stream, bytes(20)))))
    except CudaError as e:
        assert e.code == CUDA_ERROR_INVALID_HANDLE
    else:
        raise AssertionError("a batch on a destroyed stream was launched")
    assert len(fake.launches) == 3
    s.launch_batch(decode_launch_batch(_batch(_args(add, 0, bytes([7]) * 20))))
    assert bytes(fake.launches[-1][1][:20]) == bytes([7]) * 20
    s.module_unload(module)
    try:
        s.launch_batch(decode_launch_batch(_batch(_args(add, 0, bytes(20)))))
    except CudaError as e:
        assert e.code == CUDA_ERROR_INVALID_HANDLE
    else:
        raise AssertionError("a batch of an unloaded module's function was launched")
    assert len(fake.launches) == 4
