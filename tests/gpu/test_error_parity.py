"""The same mistakes, made locally through cuda-python and remotely through cricket_client,
give the same CUresult (GPU machine only).

Each scenario is one function of a driver module; it runs once against the local driver
(`cuda.bindings.driver`, this process) and once against a cricket-server on the cuda backend
(a subprocess on loopback), and the two CUresults must be equal. Mistakes whose local
behaviour is undefined (a destroyed handle, a launch with too few arguments: the driver reads
freed or missing memory) are not compared here; the behaviour suite checks that the remote
side refuses them with a clean error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from server_harness import running_server

from cricket_server.backends.cuda import gpu_available

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
CUBIN = ROOT / "tests" / "kernels" / "test_kernels.sm_90.cubin"
UNALLOCATED = 0x6FFF00000000  # inside no allocation, local or remote


def _ok(result: tuple[Any, ...]) -> Any:
    assert int(result[0]) == 0, result
    return result[1] if len(result) == 2 else result[1:]


def _setup(cu: ModuleType) -> None:
    _ok(cu.cuInit(0))
    ctx = _ok(cu.cuDevicePrimaryCtxRetain(_ok(cu.cuDeviceGet(0))))
    _ok(cu.cuCtxSetCurrent(ctx))


def free_unallocated(cu: ModuleType) -> int:
    return cu.cuMemFree(cu.CUdeviceptr(UNALLOCATED))[0]


def double_free(cu: ModuleType) -> int:
    ptr = _ok(cu.cuMemAlloc(4096))
    _ok(cu.cuMemFree(ptr))
    return cu.cuMemFree(ptr)[0]


def alloc_more_than_the_device(cu: ModuleType) -> int:
    total = _ok(cu.cuDeviceTotalMem(_ok(cu.cuDeviceGet(0))))
    return cu.cuMemAlloc(total * 2)[0]


def copy_to_unallocated(cu: ModuleType) -> int:
    return cu.cuMemcpyHtoD(cu.CUdeviceptr(UNALLOCATED), b"x" * 16, 16)[0]


def copy_from_unallocated(cu: ModuleType) -> int:
    out = bytearray(16)
    return cu.cuMemcpyDtoH(out, cu.CUdeviceptr(UNALLOCATED), 16)[0]


def memset_freed(cu: ModuleType) -> int:
    ptr = _ok(cu.cuMemAlloc(4096))
    _ok(cu.cuMemFree(ptr))
    return cu.cuMemsetD8(ptr, 1, 4096)[0]


def address_range_unallocated(cu: ModuleType) -> int:
    return cu.cuMemGetAddressRange(cu.CUdeviceptr(UNALLOCATED))[0]


def unknown_kernel_name(cu: ModuleType) -> int:
    mod = _ok(cu.cuModuleLoadData(CUBIN.read_bytes()))
    try:
        return cu.cuModuleGetFunction(mod, b"no_such_kernel")[0]
    finally:
        cu.cuModuleUnload(mod)


def unknown_global_name(cu: ModuleType) -> int:
    mod = _ok(cu.cuModuleLoadData(CUBIN.read_bytes()))
    try:
        return cu.cuModuleGetGlobal(mod, b"no_such_global")[0]
    finally:
        cu.cuModuleUnload(mod)


def garbage_module_image(cu: ModuleType) -> int:
    return cu.cuModuleLoadData(b"\x7fELF" + b"\0" * 60 + b"garbage" * 8)[0]


def bad_device_ordinal(cu: ModuleType) -> int:
    return cu.cuDeviceGet(99)[0]


def bad_device_attribute(cu: ModuleType) -> int:
    return cu.cuDeviceGetAttribute(cu.CUdevice_attribute(1), cu.CUdevice(99))[0]


def elapsed_time_without_timing(cu: ModuleType) -> int:
    flags = cu.CUevent_flags.CU_EVENT_DISABLE_TIMING
    a, b = _ok(cu.cuEventCreate(flags)), _ok(cu.cuEventCreate(flags))
    try:
        _ok(cu.cuEventRecord(a, 0))
        _ok(cu.cuEventRecord(b, 0))
        _ok(cu.cuEventSynchronize(b))
        return cu.cuEventElapsedTime(a, b)[0]
    finally:
        cu.cuEventDestroy(a)
        cu.cuEventDestroy(b)


def synchronize_without_a_context(cu: ModuleType) -> int:
    _ok(cu.cuCtxSetCurrent(cu.CUcontext(0)))
    try:
        return cu.cuCtxSynchronize()[0]
    finally:
        _setup(cu)


def free_inside_an_allocation(cu: ModuleType) -> int:
    ptr = _ok(cu.cuMemAlloc(1 << 20))
    try:
        return cu.cuMemFree(cu.CUdeviceptr(int(ptr) + 256))[0]
    finally:
        _ok(cu.cuMemFree(ptr))


SCENARIOS: list[Callable[[ModuleType], int]] = [
    free_unallocated,
    double_free,
    alloc_more_than_the_device,
    copy_to_unallocated,
    copy_from_unallocated,
    memset_freed,
    address_range_unallocated,
    unknown_kernel_name,
    unknown_global_name,
    garbage_module_image,
    bad_device_ordinal,
    bad_device_attribute,
    elapsed_time_without_timing,
    synchronize_without_a_context,
    free_inside_an_allocation,
]


@pytest.fixture(scope="module")
def local_cu() -> ModuleType:
    if not gpu_available():
        if os.environ.get("CRICKET_TEST_BACKEND") == "cuda":
            pytest.fail("CRICKET_TEST_BACKEND=cuda, but no GPU answers")
        pytest.skip("no GPU answers")
    from cuda.bindings import driver

    _setup(driver)
    return driver


@pytest.fixture(scope="module")
def remote_cu(local_cu: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    import cricket_client
    from cricket_client import driver

    folder = tmp_path_factory.mktemp("parity")
    with running_server(
        folder, "--log-level", "warning", backend="cuda", isolation=None
    ) as server:
        conn = cricket_client.connect(server.address)
        _setup(driver)
        yield driver
        conn.close()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__)
def test_remote_error_equals_local(
    scenario: Callable[[ModuleType], int], local_cu: ModuleType, remote_cu: ModuleType
) -> None:
    local = int(scenario(local_cu))
    remote = int(scenario(remote_cu))
    assert local != 0, f"{scenario.__name__} is not a mistake for local CUDA"
    assert remote == local, (
        f"{scenario.__name__}: remote {remote_cu.CUresult(remote)!r}, "
        f"local {local_cu.CUresult(local)!r}"
    )


def test_another_sessions_pointer_is_refused_like_an_unallocated_one(
    local_cu: ModuleType, remote_cu: ModuleType
) -> None:
    import cricket_client

    address = cricket_client.get_connection().address
    other = cricket_client.connect(address, make_default=False)
    try:
        with other.active():
            _setup(remote_cu)
            foreign = _ok(remote_cu.cuMemAlloc(4096))
            _ok(remote_cu.cuMemsetD8(foreign, 0x5A, 4096))
        expected = int(free_unallocated(local_cu))
        assert int(remote_cu.cuMemFree(foreign)[0]) == expected
        assert int(remote_cu.cuMemsetD8(foreign, 0, 4096)[0]) == expected
        out = bytearray(4096)
        assert int(remote_cu.cuMemcpyDtoH(out, foreign, 4096)[0]) == expected
        with other.active():
            data = bytearray(4096)
            _ok(remote_cu.cuMemcpyDtoH(data, foreign, 4096))
            assert data == b"\x5a" * 4096
    finally:
        other.close()


# -- argument handling: the same outcome, raised or returned ---------------------------------
# cuda-python converts arguments to their C types before the driver sees them (OverflowError,
# TypeError); what only the driver checks comes back as a CUresult. Each scenario's outcome is
# ("raises", exception type name) or ("returns", CUresult), locally and remotely; the sim
# backend must give the same outcome as the real driver.

STACK_SIZE = 0  # CU_LIMIT_STACK_SIZE
SETTABLE_LIMITS = range(0, 7)  # CU_LIMIT_STACK_SIZE .. CU_LIMIT_PERSISTING_L2_CACHE_SIZE


def _outcome(scenario: Callable[[ModuleType], int], cu: ModuleType) -> tuple[str, Any]:
    try:
        return ("returns", int(scenario(cu)))
    except (OverflowError, TypeError, ValueError) as exc:
        return ("raises", type(exc).__name__)


def copy_negative_size(cu: ModuleType) -> int:
    ptr = _ok(cu.cuMemAlloc(64))
    try:
        return cu.cuMemcpyHtoD(ptr, b"x" * 8, -1)[0]
    finally:
        cu.cuMemFree(ptr)


def alloc_negative_size(cu: ModuleType) -> int:
    return cu.cuMemAlloc(-1)[0]


def alloc_size_given_as_text(cu: ModuleType) -> int:
    return cu.cuMemAlloc("8")[0]


def alloc_size_given_as_float(cu: ModuleType) -> int:
    err, ptr = cu.cuMemAlloc(1.9)
    if int(err) == 0:
        _ok(cu.cuMemFree(ptr))
    return err


def memset_value_wider_than_a_byte(cu: ModuleType) -> int:
    ptr = _ok(cu.cuMemAlloc(64))
    try:
        return cu.cuMemsetD8(ptr, 256, 1)[0]
    finally:
        cu.cuMemFree(ptr)


def stream_flags_negative(cu: ModuleType) -> int:
    return cu.cuStreamCreate(-1)[0]


def free_negative_pointer(cu: ModuleType) -> int:
    return cu.cuMemFree(-1)[0]


def negative_device_ordinal(cu: ModuleType) -> int:
    return cu.cuDeviceGet(-1)[0]


def negative_limit_value(cu: ModuleType) -> int:
    return cu.cuCtxSetLimit(cu.CUlimit(STACK_SIZE), -1)[0]


def unknown_limit(cu: ModuleType) -> int:
    return cu.cuCtxSetLimit(99, 1)[0]


def non_utf8_kernel_name(cu: ModuleType) -> int:
    mod = _ok(cu.cuModuleLoadData(CUBIN.read_bytes()))
    try:
        return cu.cuModuleGetFunction(mod, b"\xff")[0]
    finally:
        cu.cuModuleUnload(mod)


def pointer_attribute_of_unallocated(cu: ModuleType) -> int:
    attribute = cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_SIZE
    return cu.cuPointerGetAttribute(attribute, cu.CUdeviceptr(UNALLOCATED))[0]


def _huge_limit(limit: int) -> Callable[[ModuleType], int]:
    def scenario(cu: ModuleType) -> int:
        err, before = cu.cuCtxGetLimit(cu.CUlimit(limit))
        if int(err) != 0:  # a limit this device lacks (the sync depth on sm_90)
            return err
        err = cu.cuCtxSetLimit(cu.CUlimit(limit), 1 << 40)[0]
        if int(err) == 0:
            cu.cuCtxSetLimit(cu.CUlimit(limit), before)
        return err

    scenario.__name__ = f"limit_{limit}_set_to_1TiB"
    return scenario


ARGUMENT_SCENARIOS: list[Callable[[ModuleType], int]] = [
    copy_negative_size,
    alloc_negative_size,
    alloc_size_given_as_text,
    alloc_size_given_as_float,
    memset_value_wider_than_a_byte,
    stream_flags_negative,
    free_negative_pointer,
    negative_device_ordinal,
    negative_limit_value,
    unknown_limit,
    non_utf8_kernel_name,
    pointer_attribute_of_unallocated,
    *[_huge_limit(limit) for limit in SETTABLE_LIMITS],
]


@pytest.fixture(scope="module")
def sim_connection(
    local_cu: ModuleType, remote_cu: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """A session on a sim-backend server, for `with conn.active():`."""
    import cricket_client

    folder = tmp_path_factory.mktemp("parity-sim")
    with running_server(folder, "--log-level", "warning", backend="sim", isolation=None) as srv:
        conn = cricket_client.connect(srv.address, make_default=False)
        with conn.active():
            _setup(remote_cu)
        yield conn
        conn.close()


@pytest.mark.parametrize("scenario", ARGUMENT_SCENARIOS, ids=lambda f: f.__name__)
def test_remote_argument_handling_equals_local(
    scenario: Callable[[ModuleType], int], local_cu: ModuleType, remote_cu: ModuleType
) -> None:
    local = _outcome(scenario, local_cu)
    remote = _outcome(scenario, remote_cu)
    assert remote == local, f"{scenario.__name__}: remote {remote}, local {local}"


@pytest.mark.parametrize("scenario", ARGUMENT_SCENARIOS, ids=lambda f: f.__name__)
def test_sim_argument_handling_equals_local(
    scenario: Callable[[ModuleType], int],
    local_cu: ModuleType,
    remote_cu: ModuleType,
    sim_connection: Any,
) -> None:
    local = _outcome(scenario, local_cu)
    with sim_connection.active():
        sim = _outcome(scenario, remote_cu)
    assert sim == local, f"{scenario.__name__}: sim {sim}, local {local}"
