"""The native door's launch fast path: kernelParams (`void **`) packed in C into one buffer.

For each function the Python side registers its parameter layout once (offsets and sizes from
CU_FUNC_GET_PARAM_INFO, as `uint32_t` pairs); a launch then copies each parameter's bytes to
its offset with one C call (`cricket_pack_params`, part of the library's C source), the same
bytes cricket_client.kernel_args packs from the pointer array. A NULL parameter pointer is not
packed: the caller takes the general path, which names the mistake.
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["PACK_C", "PACK_CDEF", "LAUNCH_HEAD", "ParamPacker"]

# copies parameter i (layout[2i] = offset, layout[2i+1] = size) from params[i] to out; the
# index of the first NULL pointer of a parameter with bytes, or -1 when all were copied
PACK_C = """
static int cricket_pack_params(uintptr_t params, int count, const uint32_t *layout,
                               unsigned char *out) {
    void *const *p = (void *const *)params;
    for (int i = 0; i < count; i++) {
        uint32_t size = layout[2 * i + 1];
        if (!size) continue;
        if (!p[i]) return i;
        memcpy(out + layout[2 * i], p[i], size);
    }
    return -1;
}
"""
PACK_CDEF = "int cricket_pack_params(uintptr_t, int, const uint32_t *, unsigned char *);"

# launch_args of rpc_spec/cricket.x up to the params' length (as cricket_client.driver packs it)
LAUNCH_HEAD = struct.Struct(">Q7IQI")


class ParamPacker:
    """One function's layout, ready for `cricket_pack_params` of the library (`ffi`, `lib`)."""

    __slots__ = ("_ffi", "_lib", "_layout", "layout", "count", "size", "_pad")

    def __init__(self, ffi: Any, lib: Any, layout: tuple[tuple[int, int], ...]) -> None:
        self._ffi = ffi
        self._lib = lib
        self.layout = layout  # as given (the connection's cached tuple)
        self.count = len(layout)
        self.size = max((off + size for off, size in layout), default=0)
        self._layout = ffi.new("uint32_t[]", [v for pair in layout for v in pair] or [0])
        self._pad = b"\0" * (-self.size & 3)

    def pack(self, params: int) -> bytes | None:
        """The parameters' bytes from the `void *[]` at `params`; None where the general path
        must pack (or name the mistake): no array, or a NULL pointer in it."""
        if not self.count:
            return b""
        if not params:
            return None
        out = self._ffi.new("unsigned char[]", self.size)
        if self._lib.cricket_pack_params(params, self.count, self._layout, out) >= 0:
            return None
        return self._ffi.buffer(out)[:]

    def body(
        self, func: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int,
        stream: int, params: int,
    ) -> bytes | None:
        """launch_args XDR-encoded (its wire stream `stream`), or None as `pack` says."""
        packed = self.pack(params)
        if packed is None:
            return None
        return LAUNCH_HEAD.pack(func, gx, gy, gz, bx, by, bz, shared, stream, self.size) + packed + self._pad
