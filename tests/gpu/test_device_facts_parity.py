"""Device facts, array planes, pointer attributes and library modules answer remotely as the
local driver does (GPU machine only): each scenario runs once against cuda-python in this
process and once against a cricket-server on the cuda backend, and the two CUresults (and,
where both succeed, the values) must be equal. A function this process's cuda-bindings lacks
is skipped, naming it. Answers that differ by design (host atomics: no capabilities remotely;
execution affinity: unsupported remotely) are compared on their errors only.
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
UNALLOCATED = 0x6FFF00000000


def _ok(result: tuple[Any, ...]) -> Any:
    assert int(result[0]) == 0, result
    return result[1] if len(result) == 2 else result[1:]


def _setup(cu: ModuleType) -> None:
    _ok(cu.cuInit(0))
    ctx = _ok(cu.cuDevicePrimaryCtxRetain(_ok(cu.cuDeviceGet(0))))
    _ok(cu.cuCtxSetCurrent(ctx))


def _fn(cu: ModuleType, name: str) -> Any:
    fn = getattr(cu, name, None)
    if fn is None:
        pytest.skip(f"{cu.__name__} has no {name}")
    return fn


def luid(cu: ModuleType) -> Any:
    return _fn(cu, "cuDeviceGetLuid")(_ok(cu.cuDeviceGet(0)))


def luid_of_no_device(cu: ModuleType) -> Any:
    return _fn(cu, "cuDeviceGetLuid")(cu.CUdevice(_ok(cu.cuDeviceGetCount())))[:1]


def fabric_cluster_uuid(cu: ModuleType) -> Any:
    err, *rest = _fn(cu, "cuDeviceGetFabricClusterUuid")(_ok(cu.cuDeviceGet(0)))
    return (err, *(bytes(v.bytes) for v in rest if v is not None))


def clique_count(cu: ModuleType) -> Any:
    return _fn(cu, "cuDeviceGetCliqueCount")(_ok(cu.cuDeviceGet(0)))


def clique_info(cu: ModuleType) -> Any:
    err, infos, count = _fn(cu, "cuDeviceGetCliqueInfo")(4, _ok(cu.cuDeviceGet(0)))
    return err, [(int(i.type), int(i.id)) for i in infos or []][: count or 0]


def _ops(cu: ModuleType) -> list[Any]:
    return [cu.CUatomicOperation.CU_ATOMIC_OPERATION_INTEGER_ADD]


def host_atomics_of_no_device(cu: ModuleType) -> Any:
    fn = _fn(cu, "cuDeviceGetHostAtomicCapabilities")
    return fn(_ops(cu), 1, cu.CUdevice(_ok(cu.cuDeviceGetCount())))[:1]


def host_atomics_of_no_operation(cu: ModuleType) -> Any:
    return _fn(cu, "cuDeviceGetHostAtomicCapabilities")([], 0, _ok(cu.cuDeviceGet(0)))[:1]


def p2p_atomics_with_itself(cu: ModuleType) -> Any:
    dev = _ok(cu.cuDeviceGet(0))
    return _fn(cu, "cuDeviceGetP2PAtomicCapabilities")(_ops(cu), 1, dev, dev)[:1]


def exec_affinity_of_an_unknown_type(cu: ModuleType) -> Any:
    kind = cu.CUexecAffinityType.CU_EXEC_AFFINITY_TYPE_MAX
    return cu.cuDeviceGetExecAffinitySupport(kind, _ok(cu.cuDeviceGet(0)))[:1]


def context_sm_count(cu: ModuleType) -> Any:
    err, param = cu.cuCtxGetExecAffinity(cu.CUexecAffinityType.CU_EXEC_AFFINITY_TYPE_SM_COUNT)
    return err, param.param.smCount.val if not err else None


def plane_of_a_float_array(cu: ModuleType) -> Any:
    desc = cu.CUDA_ARRAY_DESCRIPTOR()
    desc.Width, desc.Height, desc.NumChannels = 16, 8, 1
    desc.Format = cu.CUarray_format.CU_AD_FORMAT_FLOAT
    array = _ok(cu.cuArrayCreate(desc))
    try:
        return cu.cuArrayGetPlane(array, 0)[:1]
    finally:
        _ok(cu.cuArrayDestroy(array))


def set_access_flags(cu: ModuleType) -> Any:
    ptr = _ok(cu.cuMemAlloc(4096))
    try:
        return cu.cuPointerSetAttribute(
            1, cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, ptr
        )
    finally:
        _ok(cu.cuMemFree(ptr))


def set_sync_memops_and_read_it(cu: ModuleType) -> Any:
    attr = cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_SYNC_MEMOPS
    ptr = _ok(cu.cuMemAlloc(4096))
    try:
        err = cu.cuPointerSetAttribute(1, attr, ptr)[0]
        return err, cu.cuPointerGetAttribute(attr, ptr)
    finally:
        _ok(cu.cuMemFree(ptr))


def _library(cu: ModuleType) -> Any:
    return _ok(cu.cuLibraryLoadData(CUBIN.read_bytes(), None, None, 0, None, None, 0))


def unload_a_librarys_module(cu: ModuleType) -> Any:
    lib = _library(cu)
    try:
        return cu.cuModuleUnload(_ok(cu.cuLibraryGetModule(lib)))
    finally:
        _ok(cu.cuLibraryUnload(lib))


def kernel_as_unified_function(cu: ModuleType) -> Any:
    lib = _library(cu)
    try:
        return cu.cuLibraryGetUnifiedFunction(lib, b"saxpy")[:1]
    finally:
        _ok(cu.cuLibraryUnload(lib))


def green_id_of_a_plain_context(cu: ModuleType) -> Any:
    return _fn(cu, "cuGreenCtxGetId")(None)[:1]


SCENARIOS: list[Callable[[ModuleType], Any]] = [
    luid, luid_of_no_device, fabric_cluster_uuid, clique_count, clique_info,
    host_atomics_of_no_device, host_atomics_of_no_operation, p2p_atomics_with_itself,
    exec_affinity_of_an_unknown_type, context_sm_count, plane_of_a_float_array,
    set_access_flags, set_sync_memops_and_read_it, unload_a_librarys_module,
    kernel_as_unified_function, green_id_of_a_plain_context,
]  # fmt: skip


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

    folder = tmp_path_factory.mktemp("facts-parity")
    with running_server(folder, "--log-level", "warning", backend="cuda", isolation=None) as server:
        conn = cricket_client.connect(server.address)
        _setup(driver)
        yield driver
        conn.close()


def _plain(answer: Any) -> Any:
    """Results as comparable values (CUresults and enums as ints)."""
    if isinstance(answer, (tuple, list)):
        return type(answer)(_plain(a) for a in answer)
    if isinstance(answer, (bytes, str, type(None))):
        return answer
    try:
        return int(answer)
    except (TypeError, ValueError):
        return answer


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__)
def test_remote_answer_equals_local(
    scenario: Callable[[ModuleType], Any], local_cu: ModuleType, remote_cu: ModuleType
) -> None:
    try:
        local = _plain(scenario(local_cu))
    except RuntimeError as e:  # cuda-python: the local driver lacks the function
        if "not found" not in str(e):
            raise
        pytest.skip(f"{scenario.__name__}: the local driver lacks it ({e})")
    remote = _plain(scenario(remote_cu))
    assert remote == local, f"{scenario.__name__}: remote {remote}, local {local}"
