"""What the native library answers in C once the program's interpreter has exited.

Python runs its exit handlers, then tears down modules and objects, and C++ destructors run
after that: objects released then still call the driver (PyTorch's tensors ask, through the
CUDA runtime, which context and device are current, its context-local storage and the
primary context's state, then free their memory; its pinned-memory cache records an event on
each stream a freed buffer was used on; cuda.core releases its primary contexts). The
library's Python side cannot serve them any more. So its exit handler (entries.py), while the
client still answers, waits for the current context's work to finish (cuCtxSynchronize, after
the calls still gathered) and notes the exiting thread's current context and device and each
device's primary context state. After it the C side answers:
- those questions, from the note (the context-local storage is kept in C all along:
  context_storage);
- success for the calls that only release a resource (the session's end releases everything
  it holds on the server, as the driver's own teardown does);
- once that work was waited for: synchronizations and queries of streams, events and the
  context succeed (what was sent to it is done, and nothing can be sent any more), an event
  made after the exit is a local one, complete whenever it is recorded, and where no stream
  capture was under way, no stream is capturing;
- CUDA_ERROR_DEINITIALIZED for every other call.
With CRICKET_NATIVE_TRACE set, each answer after the exit is written to stderr.
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

EXIT_DEVICES = 64  # primary context states noted (devices 0..63)

AFTER_EXIT_C = rf"""
static CUresult cricket_after_exit(const char *call, CUresult answer) {{
    static int trace = -1;
    if (trace < 0) {{ const char *t = getenv("CRICKET_NATIVE_TRACE"); trace = t && *t; }}
    if (trace) fprintf(stderr, "%s after the interpreter's exit -> %d\n", call, answer);
    return answer;
}}
static int cricket_exit_noted = 0, cricket_exit_device = 0, cricket_exit_devices = 0;
static int cricket_exit_drained = 0;  /* every piece of work sent was done at the exit */
static int cricket_exit_no_capture = 0;  /* and no stream capture was under way */
static void cricket_exit_note_drained(int no_capture) {{
    cricket_exit_drained = 1; cricket_exit_no_capture = no_capture;
}}
static uintptr_t cricket_exit_context = 0;
static struct {{ unsigned int flags; int active; }} cricket_exit_primary[{EXIT_DEVICES}];
static void cricket_exit_note_context(uintptr_t ctx, int device) {{
    cricket_exit_context = ctx; cricket_exit_device = device; cricket_exit_noted = 1;
}}
static void cricket_exit_note_primary(int device, unsigned int flags, int active) {{
    if (device < 0 || device >= {EXIT_DEVICES}) return;
    cricket_exit_primary[device].flags = flags; cricket_exit_primary[device].active = active;
    if (device >= cricket_exit_devices) cricket_exit_devices = device + 1;
}}
"""
AFTER_EXIT_CDEF = """
void cricket_exit_note_drained(int no_capture);
void cricket_exit_note_context(uintptr_t ctx, int device);
void cricket_exit_note_primary(int device, unsigned int flags, int active);
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
    "cuCtxGetCurrent": f"if (pctx && cricket_exit_noted) {{ *pctx = (CUcontext)cricket_exit_context; {_DONE} }}",
    "cuCtxGetDevice": f"if (device && cricket_exit_noted && cricket_exit_context) {{ *device = cricket_exit_device; {_DONE} }}",
    "cuCtxGetDevice_v2": (
        "if (device && cricket_exit_noted && cricket_exit_context && (!ctx || (uintptr_t)ctx == "
        f"cricket_exit_context)) {{ *device = cricket_exit_device; {_DONE} }}"
    ),
    "cuCtxSetCurrent": f"if (cricket_exit_noted && (uintptr_t)ctx == cricket_exit_context) {_DONE}",
    "cuDevicePrimaryCtxGetState": (
        "if (flags && active && dev >= 0 && dev < cricket_exit_devices) { "
        f"*flags = cricket_exit_primary[dev].flags; *active = cricket_exit_primary[dev].active; {_DONE} }}"
    ),
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
