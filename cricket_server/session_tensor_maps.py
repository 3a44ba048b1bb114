"""Wide im2col tensor maps (cuTensorMapEncodeIm2colWide) and tensor-map allocation classes
(cuTensorMapSetAllocationClass) of a session: checked as cuTensorMapEncodeIm2col is
(`cricket_server.tensor_maps`: the whole tensor lies in the session's memory), encoded by
the server's driver."""

from __future__ import annotations

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.session_core import SessionCore
from cricket_server.tensor_maps import TENSOR_MAP_BYTES, TensorMapRequest, tensor_extent

__all__ = ["SessionTensorMaps"]

_ALLOC_CLASSES = (0, 1, 2)  # CU_TENSOR_MAP_ALLOC_CLASS_AUTO, _SMALL, _LARGE
_WIDE_MODES = (0, 1)  # CU_TENSOR_MAP_IM2COL_WIDE_MODE_W, _W128


class SessionTensorMaps(SessionCore):
    """cuTensorMapEncodeIm2colWide, cuTensorMapSetAllocationClass."""

    def tensor_map_encode_wide(self, request: TensorMapRequest) -> bytes:
        call = request.call
        self.current(call)
        if len(request.lower_corner) != 1 or len(request.upper_corner) != 1:
            raise CudaError(CUDA_ERROR_INVALID_VALUE, f"{call}: one corner of the W dimension each")
        if request.mode not in _WIDE_MODES:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: mode {request.mode} is not a CUtensorMapIm2ColWideMode",
            )
        self.memory.span(call, request.address, tensor_extent(request))
        return self.bsession.tensor_map_encode_wide(request)

    def tensor_map_set_alloc_class(self, tensor_map: bytes, alloc_class: int) -> tuple[bytes, int]:
        call = "cuTensorMapSetAllocationClass"
        self.current(call)
        if len(tensor_map) != TENSOR_MAP_BYTES:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: a tensor map is {TENSOR_MAP_BYTES} bytes"
            )
        if alloc_class not in _ALLOC_CLASSES:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: {alloc_class} is not a CUtensorMapAllocClass"
            )
        return self.bsession.tensor_map_set_alloc_class(bytes(tensor_map), alloc_class)
