"""What the native library answers in C once the program's interpreter has exited.

Python runs its exit handlers, then tears down modules and objects, and C++ destructors run
after that: objects released then still call the driver (PyTorch's tensors ask, through the
CUDA runtime, which context and device are current, its context-local storage and the
primary context's state, then free their memory; its pinned-memory cache records an event on
each stream a freed buffer was used on; cuda.core releases its primary contexts). The
library's Python side cannot serve them any more. So its exit handler (entries.py), while the
client still answers, waits for the current context's work to finish (cuCtxSynchronize, after
the calls still gathered) and notes the exiting thread's current context, its device and each
device's primary context state in the C copies of the client's answers (known_context), which
nothing moves on after the exit. After it the C side answers:
- those questions, as before the exit, from those copies (and the context-local storage from
  its C table: context_storage);
- success for the calls that only release a resource (the session's end releases everything
  it holds on the server, as the driver's own teardown does);
- once that work was waited for: synchronizations and queries of streams, events and the
  context succeed (what was sent to it is done, and nothing can be sent any more), an event
  made after the exit is a local one, complete whenever it is recorded, and where no stream
  capture was under way, no stream is capturing;
- CUDA_ERROR_DEINITIALIZED for every other call.
With CRICKET_NATIVE_TRACE set, each answer after the exit but those copies' is written to
stderr.
"""

from __future__ import annotations

__all__ = ["AFTER_EXIT_C", "AFTER_EXIT_CDEF", "after_exit_lines"]

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
static int cricket_exit_drained = 0;  /* every piece of work sent was done at the exit */
static int cricket_exit_no_capture = 0;  /* and no stream capture was under way */
static void cricket_exit_note_drained(int no_capture) {
    cricket_exit_drained = 1; cricket_exit_no_capture = no_capture;
}
"""
AFTER_EXIT_CDEF = """
void cricket_exit_note_drained(int no_capture);
"""

_DONE = "return cricket_after_exit(__func__, 0);"
_NO_CAPTURE_INFO = (  # no capture: status NONE, nothing else to hand out
    "if (cricket_exit_no_capture && captureStatus_out) { *captureStatus_out = 0; "
    "if (id_out) *id_out = 0; if (graph_out) *graph_out = 0; if (dependencies_out) "
    "*dependencies_out = 0; if (numDependencies_out) *numDependencies_out = 0; "
)
_SETTLED_AFTER_DRAIN = (
    "cuCtxSynchronize", "cuStreamSynchronize", "cuStreamQuery", "cuStreamWaitEvent",
    "cuEventRecord", "cuEventRecordWithFlags", "cuEventSynchronize", "cuEventQuery",
)
_ANSWERS = {
    **{name: _DONE for name in RELEASED_AT_EXIT},
    # all work was done at the exit and none can be sent since: nothing is left to wait for
    **{name: f"if (cricket_exit_drained) {_DONE}" for name in _SETTLED_AFTER_DRAIN},
    "cuStreamIsCapturing": f"if (cricket_exit_no_capture && captureStatus) {{ *captureStatus = 0; {_DONE} }}",
    "cuStreamGetCaptureInfo_v2": _NO_CAPTURE_INFO + _DONE + " }",
    "cuStreamGetCaptureInfo_v3": _NO_CAPTURE_INFO + "if (edgeData_out) *edgeData_out = 0; " + _DONE + " }",
    "cuEventCreate": (
        "if (cricket_exit_drained && phEvent && (*phEvent = (CUevent)calloc(1, 16))) " + _DONE
    ),
}


def after_exit_lines(symbol: str) -> list[str]:
    """The first lines of entry `symbol`'s C body: its answer after the exit, if it has one."""
    answer = _ANSWERS.get(symbol)
    return [f"    if (cricket_finalized) {{ {answer} }}"] if answer else []
