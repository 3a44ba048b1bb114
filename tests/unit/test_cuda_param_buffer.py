"""The cuda backend's reusable kernel parameter buffer: cuLaunchKernel's void*[] points at
each parameter's bytes of the launch being made (checked through the raw pointers)."""

from __future__ import annotations

import ctypes

import pytest

pytest.importorskip("cuda.bindings")

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError, ParamInfo
from cricket_server.backends.cuda.launch import ParamBuffer

LAYOUT = (ParamInfo(0, 4), ParamInfo(8, 8), ParamInfo(16, 8), ParamInfo(24, 4))


def _params_seen_by_the_driver(address: int) -> list[bytes]:
    pointers = (ctypes.c_void_p * len(LAYOUT)).from_address(address)
    return [ctypes.string_at(pointers[i], p.size) for i, p in enumerate(LAYOUT)]


def test_each_launch_sees_its_own_parameters() -> None:
    buffer = ParamBuffer(LAYOUT, 0x12)
    first = bytes(range(28))
    address = buffer.fill(memoryview(first))
    assert _params_seen_by_the_driver(address) == [first[p.offset : p.offset + p.size] for p in LAYOUT]
    second = bytes(range(100, 128)) + b"\xff" * 4  # longer than needed: the rest is ignored
    assert buffer.fill(memoryview(second)) == address  # the same memory, reused
    assert _params_seen_by_the_driver(address) == [
        second[p.offset : p.offset + p.size] for p in LAYOUT
    ]


def test_too_few_parameter_bytes_are_refused() -> None:
    buffer = ParamBuffer(LAYOUT, 0x12)
    with pytest.raises(CudaError) as caught:
        buffer.fill(memoryview(bytes(27)))
    assert caught.value.code == CUDA_ERROR_INVALID_VALUE
    assert "function 0x12 has 4 parameters in 28 bytes, got 27" in caught.value.message


def test_a_kernel_without_parameters_passes_null() -> None:
    assert ParamBuffer((), 0x13).fill(memoryview(b"")) == 0


class _RecordingLaunch:
    """Stands in for cuda-python's cuLaunchKernel: records what it was given."""

    def __init__(self, result: object) -> None:
        self.result = result
        self.calls: list[tuple[object, ...]] = []

    def __call__(self, *args: object) -> tuple[object]:
        address = args[9]
        params = _params_seen_by_the_driver(address) if address else []  # type: ignore[arg-type]
        self.calls.append((*args[:9], params, args[10]))
        return (self.result,)


def _session(monkeypatch: pytest.MonkeyPatch, result: object) -> tuple[object, _RecordingLaunch]:
    from cricket_server.backends.cuda import session as cuda_session

    recorder = _RecordingLaunch(result)
    monkeypatch.setattr(cuda_session, "_launch_kernel", recorder)
    sess = cuda_session.CudaSession(object(), 0)  # type: ignore[arg-type]
    monkeypatch.setattr(sess, "_state", lambda dev=None: None)  # no context without a GPU
    sess._layouts._cache[0x12] = LAYOUT  # as cuFuncGetParamInfo would answer
    return sess, recorder


def test_launch_and_a_batch_launcher_hand_the_driver_the_same_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cricket_server.backends.cuda.session import _LEGACY

    sess, recorder = _session(monkeypatch, 0)
    params = bytes(range(28))
    sess.launch(0x12, (2, 3, 4), (32, 1, 1), 64, None, memoryview(params))  # type: ignore[attr-defined]
    sess.launcher()(0x12, 2, 3, 4, 32, 1, 1, 64, None, memoryview(params))  # type: ignore[attr-defined]
    expected = (0x12, 2, 3, 4, 32, 1, 1, 64, _LEGACY,
                [params[p.offset : p.offset + p.size] for p in LAYOUT], 0)
    assert recorder.calls == [expected, expected]


def test_a_refused_launch_raises_the_drivers_code(monkeypatch: pytest.MonkeyPatch) -> None:
    sess, _recorder = _session(monkeypatch, 1)  # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CudaError) as caught:
        sess.launcher()(0x12, 1, 1, 1, 2048, 1, 1, 0, None, memoryview(bytes(28)))  # type: ignore[attr-defined]
    assert caught.value.code == CUDA_ERROR_INVALID_VALUE
    assert caught.value.message.startswith("cuLaunchKernel: ")
