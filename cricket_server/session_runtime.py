"""What the runtime API (`cricket_client.runtime`) needs of a session beyond the driver calls:
cudaGetDeviceProperties in one step, and pitched 2D copies and memsets."""

from __future__ import annotations

from collections.abc import Sequence

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.remote_attributes import remote_attribute
from cricket_server.session_core import SessionCore


class SessionRuntime(SessionCore):
    """cudaGetDeviceProperties, cudaMemcpy2D, cudaMemset2D."""

    def device_properties(
        self, dev: int, attributes: Sequence[int]
    ) -> tuple[str, bytes, int, list[tuple[int, int]]]:
        """cudaGetDeviceProperties in one step: name, UUID, total memory and, per attribute,
        (CUresult, value); an attribute the backend does not know answers its own error."""
        dev = self.device("cudaGetDeviceProperties", dev)
        values: list[tuple[int, int]] = []
        for attrib in attributes:
            try:
                values.append((0, remote_attribute(self.backend, attrib, dev)))  # CUDA_SUCCESS
            except CudaError as e:
                values.append((e.code, 0))
        backend = self.backend
        return (
            backend.device_name(dev),
            bytes(backend.device_uuid(dev)),
            backend.device_total_mem(dev),
            values,
        )

    def _pitched(self, call: str, ptr: int, pitch: int, width: int, height: int) -> None:
        """Check a pitched 2D range: width within the pitch, every row owned by the session."""
        if width > pitch and height > 1:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE, f"{call}: width {width} is larger than pitch {pitch}"
            )
        if width and height:
            self.memory.span(call, ptr, pitch * (height - 1) + width)

    def memcpy_2d_htod(
        self, dst: int, dpitch: int, rows: memoryview, width: int, height: int, stream: int
    ) -> None:
        """Rows packed on the host (row r at r * width) to device rows dpitch bytes apart."""
        call = "cudaMemcpy2D (host to device)"
        self.current(call)
        obj = self._stream(call, stream)
        if len(rows) != width * height:
            raise CudaError(
                CUDA_ERROR_INVALID_VALUE,
                f"{call}: {len(rows)} bytes sent for {height} rows of {width} bytes",
            )
        self._pitched(call, dst, dpitch, width, height)
        if not (width and height):
            return
        if dpitch == width:
            self.bsession.memcpy_htod(dst, rows, obj)
            return
        for r in range(height):
            self.bsession.memcpy_htod(dst + r * dpitch, rows[r * width : (r + 1) * width], obj)

    def memcpy_2d_dtoh(self, src: int, spitch: int, width: int, height: int, stream: int) -> bytes:
        """Device rows spitch bytes apart, returned packed (row r at r * width)."""
        call = "cudaMemcpy2D (device to host)"
        self.current(call)
        obj = self._stream(call, stream)
        self._pitched(call, src, spitch, width, height)
        if not (width and height):
            return b""
        if spitch == width:
            return bytes(self.bsession.memcpy_dtoh(src, width * height, obj))
        return b"".join(
            bytes(self.bsession.memcpy_dtoh(src + r * spitch, width, obj)) for r in range(height)
        )

    def memcpy_2d_dtod(
        self, dst: int, dpitch: int, src: int, spitch: int, width: int, height: int, stream: int
    ) -> None:
        call = "cudaMemcpy2D (device to device)"
        self.current(call)
        obj = self._stream(call, stream)
        self._pitched(call, src, spitch, width, height)
        self._pitched(call, dst, dpitch, width, height)
        for r in range(height if width else 0):
            self.bsession.memcpy_dtod(dst + r * dpitch, src + r * spitch, width, obj)

    def memset_2d(
        self, dst: int, pitch: int, value: int, width: int, height: int, stream: int
    ) -> None:
        call = "cudaMemset2D"
        self.current(call)
        obj = self._stream(call, stream)
        self._pitched(call, dst, pitch, width, height)
        for r in range(height if width else 0):
            self.bsession.memset(dst + r * pitch, value & 0xFF, 1, width, obj)
