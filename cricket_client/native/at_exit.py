"""What the native library answers in C once the program's interpreter has exited.

Python runs its exit handlers, then tears down modules and objects, and C++ destructors run
after that: objects released then still call the driver (PyTorch's tensors ask which device is
current and free their memory; cuda.core releases its primary contexts). The library's Python
side cannot serve them any more, so the C side answers: the current context and device as
last known (known_context: nothing can change them now), success for the calls that release
a resource (the session's end releases everything it holds, on the server, as the driver's
teardown does), and CUDA_ERROR_DEINITIALIZED for every other call. With
CRICKET_NATIVE_TRACE set, each such answer is written to stderr.
"""

from __future__ import annotations

__all__ = ["AFTER_EXIT_C", "RELEASED_AT_EXIT", "released_at_exit_line"]

# Calls whose only effect is to release what the session holds.
RELEASED_AT_EXIT = frozenset({
    "cuArrayDestroy", "cuCtxDestroy_v2", "cuDevicePrimaryCtxRelease",
    "cuDevicePrimaryCtxRelease_v2", "cuEventDestroy_v2", "cuGraphDestroy", "cuGraphExecDestroy",
    "cuGreenCtxDestroy", "cuLibraryUnload", "cuLinkDestroy", "cuMemAddressFree", "cuMemFree_v2",
    "cuMemFreeAsync", "cuMemFreeHost", "cuMemHostUnregister", "cuMemPoolDestroy", "cuMemRelease",
    "cuMemUnmap", "cuMipmappedArrayDestroy", "cuModuleUnload", "cuStreamDestroy_v2",
    "cuSurfObjectDestroy", "cuTexObjectDestroy",
})  # fmt: skip

AFTER_EXIT_C = r"""
static CUresult cricket_after_exit(const char *call, CUresult answer) {
    static int trace = -1;
    if (trace < 0) { const char *t = getenv("CRICKET_NATIVE_TRACE"); trace = t && *t; }
    if (trace) fprintf(stderr, "%s after the interpreter's exit -> %d\n", call, answer);
    return answer;
}
"""


def released_at_exit_line() -> str:
    """The first line of a releasing entry's C body."""
    return "    if (cricket_finalized) return cricket_after_exit(__func__, 0);"
