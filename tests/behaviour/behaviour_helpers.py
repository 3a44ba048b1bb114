"""Helpers of the behaviour suite (a module of its own name, so that no other folder's
conftest can shadow it): paths, the backend under test, result checking, sessions, NVRTC."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import cricket_client
from cricket_client import driver as cuda
from cricket_client import runtime as cudart

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "tests" / "kernels"
BACKEND = os.environ.get("CRICKET_TEST_BACKEND", "sim")
# Isolation of the suite's server (CRICKET_TEST_ISOLATION; auto: thread on sim, process on cuda)
ISOLATION = os.environ.get("CRICKET_TEST_ISOLATION", "auto")
SUCCESS = cuda.CUresult.CUDA_SUCCESS


def check(result: tuple[Any, ...]) -> Any:
    """The outputs of a driver call that must succeed (None, one value or a tuple)."""
    err, *values = result
    assert err == SUCCESS, f"{err!r}: {cricket_client.last_error_message()}"
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def ok(result: tuple[Any, ...]) -> Any:
    """The outputs of a runtime call that must succeed (None, one value or a tuple)."""
    err, *values = result
    assert err == cudart.cudaError_t.cudaSuccess, f"{err!r}: {cricket_client.last_error_message()}"
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def open_session(address: str, *, make_default: bool) -> cricket_client.Connection:
    """A connection with cuInit done and device 0's primary context current."""
    conn = cricket_client.connect(address, make_default=make_default)
    with conn.active():
        check(cuda.cuInit(0))
        dev = check(cuda.cuDeviceGet(0))
        ctx = check(cuda.cuDevicePrimaryCtxRetain(dev))
        check(cuda.cuCtxSetCurrent(ctx))
    return conn


def nvrtc_cubin(source: str, name: str) -> bytes:
    """Compile CUDA C++ to an sm_90 cubin with NVRTC (test side only; the client has none)."""
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    opts = [b"--gpu-architecture=sm_90"]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        pytest.fail(f"NVRTC failed for {name}: {log.decode(errors='replace')}")
    _, size = nvrtc.nvrtcGetCUBINSize(prog)
    cubin = b" " * size
    (err,) = nvrtc.nvrtcGetCUBIN(prog, cubin)
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    nvrtc.nvrtcDestroyProgram(prog)
    return cubin


def foreign_handle_message() -> str:
    """What the refusal of another session's handle says: in one server process the handle
    is known but not owned; under process isolation its owner's worker alone knows it."""
    if ISOLATION == "thread" or (ISOLATION == "auto" and BACKEND == "sim"):
        return "not owned by this session"
    return "unknown or already destroyed"
