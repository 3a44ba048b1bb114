"""Pure parts of the device-fact calls: the client's checks of atomic operations (as
cuda-python checks them), the allocation an early copy may no longer use once SYNC_MEMOPS is
set, the known-answer rules of the new queries, and the sim backend's peer-atomics model."""

from __future__ import annotations

import pytest

from cricket_client import known_answers
from cricket_client._enums import CUatomicOperation
from cricket_client._runtime_enums import cudaAtomicOperation
from cricket_client.driver_device_facts import atomic_operations
from cricket_client.early_copies import Allocations
from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_SUPPORTED,
    CudaError,
)
from cricket_server.backends.sim.backend import SimBackend

ADD, CAS, FADD = (CUatomicOperation.CU_ATOMIC_OPERATION_INTEGER_ADD,
                  CUatomicOperation.CU_ATOMIC_OPERATION_CAS,
                  CUatomicOperation.CU_ATOMIC_OPERATION_FLOAT_ADD)  # fmt: skip


def test_operations_are_checked_as_cuda_python_checks_them() -> None:
    call = "cuDeviceGetHostAtomicCapabilities"
    assert atomic_operations(call, [ADD, CAS, FADD], 2, CUatomicOperation) == [0, 9]
    assert atomic_operations(call, (FADD,), 1, CUatomicOperation) == [10]
    assert atomic_operations(call, None, 0, CUatomicOperation) == []
    with pytest.raises(RuntimeError, match="List is too small: 1 < 2"):
        atomic_operations(call, [ADD], 2, CUatomicOperation)
    with pytest.raises(TypeError, match="operations"):
        atomic_operations(call, [0], 1, CUatomicOperation)
    with pytest.raises(TypeError, match="operations"):
        atomic_operations(call, [cudaAtomicOperation.cudaAtomicOperationIntegerAdd], 1, CUatomicOperation)
    with pytest.raises(TypeError, match="operations"):
        atomic_operations(call, ADD, 1, CUatomicOperation)
    with pytest.raises(OverflowError):
        atomic_operations(call, [ADD], -1, CUatomicOperation)


def test_sync_memops_takes_the_allocation_off_early_copies() -> None:
    allocations = Allocations()
    allocations.made(0x1000, 0x100)
    allocations.made(0x2000, 0x100)
    assert allocations.holds(0x1010, 16)
    allocations.forget_containing(0x10FF)
    assert not allocations.holds(0x1010, 16)
    assert allocations.holds(0x2000, 16)
    allocations.forget_containing(0x2100)  # just past it: not inside
    allocations.forget_containing(0x500)  # before any
    assert allocations.holds(0x2000, 16)


@pytest.mark.parametrize("proc", [
    "CU_DEVICE_GET_LUID", "CU_DEVICE_GET_HOST_ATOMIC_CAPABILITIES",
    "CU_DEVICE_GET_P2P_ATOMIC_CAPABILITIES", "CU_DEVICE_GET_EXEC_AFFINITY_SUPPORT",
    "CU_DEVICE_GET_FABRIC_CLUSTER_UUID", "CU_DEVICE_GET_CLIQUE_COUNT", "CU_DEVICE_GET_CLIQUE_INFO",
])  # fmt: skip
def test_device_facts_are_known_answers(proc: str) -> None:
    assert known_answers.rule(proc) == (known_answers.DEVICE, ())


def test_calls_that_change_state_keep_no_answer() -> None:
    assert known_answers.rule("CU_POINTER_SET_ATTRIBUTE") is None
    assert known_answers.rule("CU_GREEN_CTX_GET_ID") is None  # the green context may go


def test_sim_peer_atomics() -> None:
    backend = SimBackend(device_count=2)
    caps = backend.p2p_atomic_capabilities([0, 9, 10], 0, 1)
    assert caps == [31, 31, 28]  # integer: signed, unsigned, reduction, 32 and 64-bit; float: no sign
    with pytest.raises(CudaError) as same:
        backend.p2p_atomic_capabilities([0], 1, 1)
    assert same.value.code == CUDA_ERROR_INVALID_DEVICE
    with pytest.raises(CudaError) as bad:
        backend.p2p_atomic_capabilities([13], 0, 1)
    assert bad.value.code == CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CudaError) as none:
        backend.p2p_atomic_capabilities([], 0, 1)
    assert none.value.code == CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CudaError) as missing:
        backend.p2p_atomic_capabilities([0], 0, 2)
    assert missing.value.code == CUDA_ERROR_INVALID_DEVICE


def test_sim_answers_as_cuda_on_linux_without_a_fabric() -> None:
    backend = SimBackend()
    for ask in (lambda: backend.device_luid(0), lambda: backend.fabric_cluster_uuid(0),
                lambda: backend.clique_count(0), lambda: backend.clique_info(4, 0)):  # fmt: skip
        with pytest.raises(CudaError) as e:
            ask()
        assert e.value.code == CUDA_ERROR_NOT_SUPPORTED
    assert backend.exec_affinity_support(0, 0) == 0


class _Reply:
    def __init__(self, value: list[int]) -> None:
        self.value = value


class _Conn:
    """Answers each capability query with the operations' values plus 100."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    def sync(self, proc: str, ops: list[int], *devices: int) -> tuple[int, _Reply]:
        self.sent.append(len(ops))
        return 0, _Reply([op + 100 for op in ops])


def test_many_operations_are_asked_in_calls_of_at_most_64(monkeypatch: pytest.MonkeyPatch) -> None:
    from cricket_client import driver_device_facts as facts

    conn = _Conn()
    monkeypatch.setattr(facts, "_conn", lambda: conn)
    ops = [CUatomicOperation(i % 13) for i in range(150)]
    err, caps = facts.cuDeviceGetHostAtomicCapabilities(ops, 150, 0)
    assert conn.sent == [64, 64, 22]
    assert caps == [i % 13 + 100 for i in range(150)]


def test_a_call_the_servers_cuda_python_or_driver_lacks_is_not_supported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("cuda.bindings")
    from cricket_server.backends.cuda import device_facts

    with pytest.raises(CudaError) as absent:
        device_facts.newer("cuNoSuchCall", "cuNoSuchCall")
    assert absent.value.code == CUDA_ERROR_NOT_SUPPORTED
    assert "cuda-python has no cuNoSuchCall" in absent.value.message

    class FunctionNotFoundError(RuntimeError):
        pass

    def missing(*args: object) -> None:
        raise FunctionNotFoundError("function cuDeviceGetCliqueCount is not found")

    def broken(*args: object) -> None:
        raise RuntimeError("something else")

    monkeypatch.setattr(device_facts.driver, "cuDeviceGetCliqueCount", missing, raising=False)
    with pytest.raises(CudaError) as lacking:
        device_facts.newer("cuDeviceGetCliqueCount", "cuDeviceGetCliqueCount")(0)
    assert lacking.value.code == CUDA_ERROR_NOT_SUPPORTED
    assert "driver has no cuDeviceGetCliqueCount" in lacking.value.message
    monkeypatch.setattr(device_facts.driver, "cuDeviceGetCliqueCount", broken, raising=False)
    with pytest.raises(RuntimeError, match="something else"):
        device_facts.newer("cuDeviceGetCliqueCount", "cuDeviceGetCliqueCount")(0)
