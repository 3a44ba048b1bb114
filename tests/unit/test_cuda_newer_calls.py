"""The cuda backend's calls newer than some servers' CUDA (cuDevSmResourceSplit and
cuTensorMapSetAllocationClass of CUDA 13.1/13.5, cuTensorMapEncodeIm2colWide of 12.8): where
the server's cuda-python lacks one, or its driver does, the answer is CUDA_ERROR_NOT_SUPPORTED
naming the call (never a crash, never pretended success); where both have it, the arguments
reach the driver as cuda-python takes them."""

from __future__ import annotations

from typing import Any

import pytest

from cricket_server.backends.base import CUDA_ERROR_NOT_SUPPORTED, CudaError
from cricket_server.backends.cuda import sm_groups, tensor_maps_wide
from cricket_server.backends.cuda.sm_groups import CudaSmGroups
from cricket_server.backends.cuda.tensor_maps_wide import CudaTensorMapsWide
from cricket_server.backends.dev_resources import DevResource
from cricket_server.backends.sm_groups import SmGroupParams
from cricket_server.tensor_maps import IM2COL_WIDE, TensorMapRequest

driver = sm_groups.driver


class _Session(CudaSmGroups, CudaTensorMapsWide):
    def _state(self) -> None:
        return None


def _request() -> TensorMapRequest:
    return TensorMapRequest(
        kind=IM2COL_WIDE, data_type=6, rank=4, address=0x1000, global_dim=(16, 64, 8, 1),
        global_strides=(32, 2048, 16384), box_dim=(), lower_corner=(0,), upper_corner=(0,),
        channels_per_pixel=16, pixels_per_column=32, element_strides=(1, 1, 1, 1),
        interleave=0, swizzle=0, l2_promotion=0, oob_fill=0, mode=1,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "run"),
    [
        (
            "cuDevSmResourceSplit",
            lambda s: s.sm_split_groups(DevResource(1, 132, 8, 8, 0), [SmGroupParams()], 0),
        ),
        ("cuTensorMapEncodeIm2colWide", lambda s: s.tensor_map_encode_wide(_request())),
        ("cuTensorMapSetAllocationClass", lambda s: s.tensor_map_set_alloc_class(b"\0" * 128, 1)),
    ],
)
def test_a_call_the_bindings_lack_is_not_supported(
    monkeypatch: pytest.MonkeyPatch, name: str, run: Any
) -> None:
    monkeypatch.delattr(driver, name, raising=False)
    with pytest.raises(CudaError) as refused:
        run(_Session())
    assert refused.value.code == CUDA_ERROR_NOT_SUPPORTED and name in str(refused.value)


def test_a_call_the_driver_lacks_is_not_supported(monkeypatch: pytest.MonkeyPatch) -> None:
    def absent(*args: Any) -> Any:
        raise RuntimeError('Function "cuTensorMapSetAllocationClass" not found')

    absent.__name__ = "cuTensorMapSetAllocationClass"
    monkeypatch.setattr(driver, "cuTensorMapSetAllocationClass", absent, raising=False)
    with pytest.raises(CudaError) as refused:
        _Session().tensor_map_set_alloc_class(b"\0" * 128, 1)
    assert refused.value.code == CUDA_ERROR_NOT_SUPPORTED


def test_wide_map_arguments_reach_the_driver_in_its_order(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def encode(*args: Any) -> Any:
        seen.extend(args)
        made = driver.CUtensorMap()
        made.opaque = [driver.cuuint64_t(i) for i in range(16)]
        return (driver.CUresult.CUDA_SUCCESS, made)

    encode.__name__ = "cuTensorMapEncodeIm2colWide"
    monkeypatch.setattr(tensor_maps_wide.driver, "cuTensorMapEncodeIm2colWide", encode)
    made = _Session().tensor_map_encode_wide(_request())
    assert len(made) == 128 and made[8] == 1
    assert len(seen) == 15
    assert seen[11] == driver.CUtensorMapIm2ColWideMode(1)  # mode after interleave
    assert (seen[5], seen[6], seen[7], seen[8]) == (0, 0, 16, 32)


def test_split_parameters_reach_the_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    def split(n: int, res: Any, flags: int, params: list[Any]) -> Any:
        assert n == 1 and flags == 0 and params[0].smCount == 0
        params[0].smCount = 128  # discovery, written back
        group = driver.CUdevResource()
        group.type = driver.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM
        group.sm.smCount = 128
        return (driver.CUresult.CUDA_SUCCESS, [group], driver.CUdevResource())

    split.__name__ = "cuDevSmResourceSplit"
    monkeypatch.setattr(sm_groups.driver, "cuDevSmResourceSplit", split)
    groups, remainder, params = _Session().sm_split_groups(
        DevResource(1, 132, 8, 8, 0, obj=driver.CUdevResource()), [SmGroupParams()], 0
    )
    assert [g.sm_count for g in groups] == [128] and params[0].sm_count == 128
    assert remainder.sm_count == 0


def test_batch_mem_op_node_params_fill_the_arm_each_operation_names() -> None:
    from cricket_server.backends.cuda.graph_mem_ops import batch_mem_op_params
    from cricket_server.stream_mem_ops import StreamMemOp

    ops = [
        StreamMemOp(1, 1, 0x1000, 7),  # wait 32, EQ
        StreamMemOp(5, 0, 0x2000, 0x1122334455667788),  # write 64
        StreamMemOp(3, 0, 0, 0),  # flush remote writes
    ]
    p = batch_mem_op_params(ops, driver.CUcontext(0))
    assert p.count == 3 and len(p.paramArray) == 3
    wait, write, flush = p.paramArray
    assert int(wait.operation) == 1 and int(wait.waitValue.address) == 0x1000
    assert int(wait.waitValue.value) == 7 and int(wait.waitValue.flags) == 1
    assert int(write.writeValue.value64) == 0x1122334455667788
    assert int(flush.operation) == 3 and int(flush.flushRemoteWrites.flags) == 0
