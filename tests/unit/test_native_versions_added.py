"""cuGetProcAddress hands out the later native entries at the versions cuda-bindings 13 and the
CUDA 12/13 runtimes ask for them (traced with CRICKET_NATIVE_TRACE=1), and the primary context
calls asked for by their pre-11.0 name get an implementation (a 13.0 runtime asks for
cuDevicePrimaryCtxRelease/Reset at 7000)."""

from __future__ import annotations

import pytest

from cricket_client.native.signatures import ENTRIES, select_symbol


@pytest.mark.parametrize(
    "name,version,symbol",
    [
        ("cuDevicePrimaryCtxRelease", 7000, "cuDevicePrimaryCtxRelease"),
        ("cuDevicePrimaryCtxReset", 7000, "cuDevicePrimaryCtxReset"),
        ("cuDevicePrimaryCtxSetFlags", 7000, "cuDevicePrimaryCtxSetFlags"),
        ("cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2"),
        ("cuDevicePrimaryCtxReset", 13000, "cuDevicePrimaryCtxReset_v2"),
        ("cuGraphAddNode", 12020, "cuGraphAddNode"),
        ("cuGraphAddNode", 12030, "cuGraphAddNode_v2"),
        ("cuGraphNodeSetParams", 12020, "cuGraphNodeSetParams"),
        ("cuGraphExecNodeSetParams", 12020, "cuGraphExecNodeSetParams"),
        ("cuGraphAddMemAllocNode", 11040, "cuGraphAddMemAllocNode"),
        ("cuGraphConditionalHandleCreate", 12030, "cuGraphConditionalHandleCreate"),
        ("cuDeviceGetDevResource", 12040, "cuDeviceGetDevResource"),
        ("cuStreamGetCtx", 9020, "cuStreamGetCtx"),
        ("cuStreamGetCtx", 12050, "cuStreamGetCtx_v2"),
        ("cuStreamWaitValue32", 11070, "cuStreamWaitValue32_v2"),
        ("cuStreamBatchMemOp", 11070, "cuStreamBatchMemOp_v2"),
        ("cuMemsetD2D8", 3020, "cuMemsetD2D8_v2"),
        ("cuMemAdvise", 12020, "cuMemAdvise_v2"),
        ("cuMemPrefetchAsync", 12020, "cuMemPrefetchAsync_v2"),
        ("cuTensorMapEncodeTiled", 12000, "cuTensorMapEncodeTiled"),
    ],
)
def test_handed_out_at_the_version_asked(name: str, version: int, symbol: str) -> None:
    assert select_symbol(name, version) == symbol


def test_the_pre_11_primary_context_forms_take_the_same_arguments() -> None:
    params = dict(ENTRIES)
    for name in ("cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxSetFlags"):
        assert params[name] == params[f"{name}_v2"]


def test_per_thread_forms_of_the_new_stream_calls() -> None:
    assert select_symbol("cuMemsetD2D8Async", 3020, 2) == "cuMemsetD2D8Async_ptsz"
    assert select_symbol("cuStreamBatchMemOp", 11070, 2) == "cuStreamBatchMemOp_v2_ptsz"
