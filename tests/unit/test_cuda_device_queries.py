"""The cuda backend's device queries look up a device's CUdevice and an attribute's enum once,
not on every call (cuDeviceGetAttribute is on the synchronous hot path); a bad ordinal or
attribute is still refused each time (no GPU: the driver calls are stand-ins)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("cuda.bindings")

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_INVALID_VALUE,
    CudaError,
)
from cricket_server.backends.cuda import backend as cuda_backend
from cricket_server.backends.cuda.backend import CudaBackend


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch) -> tuple[CudaBackend, list[str]]:
    calls: list[str] = []

    def call(fn: Any, *args: Any, what: str = "") -> Any:
        calls.append(fn.__name__)
        if fn.__name__ == "cuDeviceGet":
            return ("device", args[0])
        return 42

    monkeypatch.setattr(cuda_backend, "call", call)
    made = CudaBackend.__new__(CudaBackend)  # without a GPU: its per-call state only
    made._count = 2
    made._devices = {}
    made._attributes = {}
    return made, calls


def test_device_and_attribute_are_looked_up_once(backend: tuple[CudaBackend, list[str]]) -> None:
    cuda, calls = backend
    for _ in range(3):
        assert cuda.device_attribute(16, 1) == 42
    assert calls == ["cuDeviceGet"] + ["cuDeviceGetAttribute"] * 3
    assert cuda.device_handle(1) == ("device", 1)


def test_bad_ordinals_and_attributes_are_refused_every_time(
    backend: tuple[CudaBackend, list[str]],
) -> None:
    cuda, _calls = backend
    for _ in range(2):
        with pytest.raises(CudaError) as bad_device:
            cuda.device_attribute(16, 2)
        assert bad_device.value.code == CUDA_ERROR_INVALID_DEVICE
        with pytest.raises(CudaError) as bad_attribute:
            cuda.device_attribute(1 << 20, 0)
        assert bad_attribute.value.code == CUDA_ERROR_INVALID_VALUE
    assert 2 not in cuda._devices and 1 << 20 not in cuda._attributes  # nothing bad kept
