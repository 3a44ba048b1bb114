"""The current context and its device answered in C by the native library.

CUDA programs ask for them all the time: the CUDA runtime before nearly every call, numba-cuda
three times each per kernel launch; CuPy sets the context already current twice a step, which is
answered here too. The client already answers them without a round trip
(cricket_client.known_answers), but through the native door each question still enters Python.
Here the library keeps, per thread (threads may use different connections:
`Connection.active()`), the two answers the client gave last, each tagged with an epoch, and
gives them again in C while the epoch is unchanged; so too each device's primary context state
(cuDevicePrimaryCtxGetState, which PyTorch asks around nearly every call) and that the default
streams are not capturing (cuStreamIsCapturing and cuStreamGetCaptureInfo, which PyTorch and
CuPy ask before each copy; a capture's beginning moves the epoch on). The Python side moves the epoch on
whenever the client's own answers could differ: its kept context answers are forgotten (a call
that creates, destroys, sets, pushes or pops a context, or retains, releases, resets or sets
the flags of a primary context; a resume), an asynchronous failure waits to be reported (the
client then sends the query, which reports it), or the connection a thread uses changes
(`connect`, `Connection.active()`, a closed default). After fork() the child asks Python
again. So the answers given in C are exactly the client's.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CONTEXT", "DEVICE", "KNOWN_C", "KNOWN_CDEF", "FAST_PATHS", "KnownContext"]

CONTEXT, DEVICE = 0, 1

KNOWN_C = """
static unsigned long long cricket_known_epoch = 1;      /* moved on by the Python side */
static __thread unsigned long long cricket_known_at[2]; /* the epoch each answer was noted in */
static __thread uintptr_t cricket_known_value[2];       /* this thread's context, its device */
static int cricket_known(int what, uintptr_t *value) {
    if (cricket_known_at[what] != __atomic_load_n(&cricket_known_epoch, __ATOMIC_ACQUIRE))
        return 0;
    *value = cricket_known_value[what];
    return 1;
}
static unsigned long long cricket_known_now(void) {
    return __atomic_load_n(&cricket_known_epoch, __ATOMIC_ACQUIRE);
}
static void cricket_known_forget(void) {
    __atomic_add_fetch(&cricket_known_epoch, 1, __ATOMIC_ACQ_REL);
}
static void cricket_known_note(int what, uintptr_t value, unsigned long long epoch) {
    if (epoch != __atomic_load_n(&cricket_known_epoch, __ATOMIC_ACQUIRE))
        return;  /* forgotten since the question: the answer may be stale */
    cricket_known_value[what] = value;
    cricket_known_at[what] = epoch;  /* a forget from now on leaves it behind the epoch */
}
static void cricket_known_after_fork(void) {  /* the child: its own session, asked anew */
    cricket_known_forget();
}
/* each device's primary context state, per thread as well (a thread's connection), tagged the same way */
#define CRICKET_KNOWN_DEVICES 64
static __thread unsigned long long cricket_primary_at[CRICKET_KNOWN_DEVICES];
static __thread unsigned int cricket_primary_flags[CRICKET_KNOWN_DEVICES];
static __thread int cricket_primary_active[CRICKET_KNOWN_DEVICES];
static int cricket_known_primary(int dev, unsigned int *flags, int *active) {
    if (dev < 0 || dev >= CRICKET_KNOWN_DEVICES) return 0;
    unsigned long long epoch = __atomic_load_n(&cricket_known_epoch, __ATOMIC_ACQUIRE);
    if (cricket_primary_at[dev] != epoch) return 0;
    *flags = cricket_primary_flags[dev];
    *active = cricket_primary_active[dev];
    return 1;
}
static void cricket_known_note_primary(int dev, unsigned int flags, int active, unsigned long long epoch) {
    if (dev < 0 || dev >= CRICKET_KNOWN_DEVICES) return;
    if (epoch != __atomic_load_n(&cricket_known_epoch, __ATOMIC_ACQUIRE)) return;
    cricket_primary_flags[dev] = flags;
    cricket_primary_active[dev] = active;
    cricket_primary_at[dev] = epoch;  /* a forget from now on leaves it behind the epoch */
}
/* the default streams are not capturing: no capture of the client under way, a context known
   current (a capture's beginning moves the epoch on) */
static __thread unsigned long long cricket_no_capture_at;
static int cricket_known_no_capture(void) {
    return cricket_no_capture_at == __atomic_load_n(&cricket_known_epoch, __ATOMIC_ACQUIRE);
}
static void cricket_known_note_no_capture(unsigned long long epoch) {
    if (epoch != __atomic_load_n(&cricket_known_epoch, __ATOMIC_ACQUIRE)) return;
    cricket_no_capture_at = epoch;
}
"""
KNOWN_CDEF = """
unsigned long long cricket_known_now(void);
void cricket_known_forget(void);
void cricket_known_note(int what, uintptr_t value, unsigned long long epoch);
void cricket_known_note_primary(int dev, unsigned int flags, int active, unsigned long long epoch);
void cricket_known_note_no_capture(unsigned long long epoch);
"""
# The first lines of an entry's C body, before it enters Python: answered here when known,
# also after the interpreter's exit (at_exit: noted at the exit, nothing moves the epoch on then).
_GUARD = "!cricket_forked && !cricket_other_python"
FAST_PATHS = {
    "cuCtxGetCurrent": (
        f"    uintptr_t known; if (pctx && {_GUARD} && cricket_known({CONTEXT}, &known)) "
        "{ *pctx = (CUcontext)known; return 0; }"
    ),
    "cuCtxGetDevice": (
        f"    uintptr_t known; if (device && {_GUARD} && cricket_known({DEVICE}, &known)) "
        "{ *device = (CUdevice)known; return 0; }"
    ),
    # setting the context already current changes nothing (CuPy does it twice a step)
    "cuCtxSetCurrent": (
        f"    uintptr_t known; if (ctx && {_GUARD} && cricket_known({CONTEXT}, &known) "
        "&& known == (uintptr_t)ctx) return 0;"
    ),
    # PyTorch asks it around nearly every call
    "cuDevicePrimaryCtxGetState": (
        f"    if (flags && active && {_GUARD} && cricket_known_primary(dev, flags, active)) return 0;"
    ),
    # PyTorch asks it of its stream (the default one) before each copy
    "cuStreamIsCapturing": (
        f"    if (captureStatus && (uintptr_t)hStream <= 2 && {_GUARD} && cricket_known_no_capture()) "
        "{ *captureStatus = 0; return 0; }"
    ),
    # CuPy asks it of its stream before its copies: "none", no id, graph or dependencies
    "cuStreamGetCaptureInfo_v2": (
        f"    if (captureStatus_out && (uintptr_t)hStream <= 2 && {_GUARD} && cricket_known_no_capture()) {{ "
        "*captureStatus_out = 0; if (id_out) *id_out = 0; if (graph_out) *graph_out = 0; "
        "if (dependencies_out) *dependencies_out = 0; if (numDependencies_out) *numDependencies_out = 0; "
        "return 0; }"
    ),
    "cuStreamGetCaptureInfo_v3": (
        f"    if (captureStatus_out && (uintptr_t)hStream <= 2 && {_GUARD} && cricket_known_no_capture()) {{ "
        "*captureStatus_out = 0; if (id_out) *id_out = 0; if (graph_out) *graph_out = 0; "
        "if (dependencies_out) *dependencies_out = 0; if (edgeData_out) *edgeData_out = 0; "
        "if (numDependencies_out) *numDependencies_out = 0; return 0; }"
    ),
    "cuCtxGetDevice_v2": (
        f"    uintptr_t known; if (device && !ctx && {_GUARD} && cricket_known({DEVICE}, &known)) "
        "{ *device = (CUdevice)known; return 0; }"
    ),
}


class KnownContext:
    """The Python side: `epoch()` before asking the client, `note(what, value, epoch)` after
    a successful answer, `forget()` whenever the client's answers may change."""

    def __init__(self, lib: Any) -> None:
        self._lib = lib

    def epoch(self) -> int:
        return int(self._lib.cricket_known_now())

    def note(self, what: int, value: int, epoch: int) -> None:
        self._lib.cricket_known_note(what, value, epoch)

    def note_primary(self, dev: int, flags: int, active: int, epoch: int) -> None:
        self._lib.cricket_known_note_primary(dev, flags, active, epoch)

    def note_no_capture(self, epoch: int) -> None:
        self._lib.cricket_known_note_no_capture(epoch)

    def forget(self) -> None:
        self._lib.cricket_known_forget()
