"""A `cuda.bindings.driver` program, unmodified, that asks for the current context, its device
and the primary context's state around every call that changes them (create, set, push, pop, destroy, none current) and
from two threads; one line per answer, so that runs through the native libcuda.so.1 (which
answers these in C while they cannot have changed) and through the Python-level module swap
compare equal.

    python native_context_program.py
"""

import threading

from cuda.bindings import driver as cuda


def check(result):
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cuda.CUresult.CUDA_SUCCESS:
        raise SystemExit(f"CUDA error {err!r}")
    return values[0] if len(values) == 1 else values


def show(what, names):
    err, ctx = cuda.cuCtxGetCurrent()
    current = names.get(int(ctx), "none" if not int(ctx) else "unknown") if not err else "-"
    err_dev, dev = cuda.cuCtxGetDevice()
    device = int(dev) if not err_dev else err_dev.name
    state = cuda.cuDevicePrimaryCtxGetState(0)
    for _ in range(3):  # asked again: the same answers
        assert cuda.cuCtxGetCurrent() == (err, ctx) and cuda.cuCtxGetDevice()[0] == err_dev
        assert cuda.cuDevicePrimaryCtxGetState(0) == state
    err_state, flags, active = state
    primary = f"flags {int(flags)} active {int(active)}" if not err_state else err_state.name
    print(f"{what}: current {current}, device {device}, primary {primary}")


def main() -> None:
    check(cuda.cuInit(0))
    dev = check(cuda.cuDeviceGet(0))
    names = {}
    show("at start", names)
    primary = check(cuda.cuDevicePrimaryCtxRetain(dev))
    names[int(primary)] = "primary"
    check(cuda.cuCtxSetCurrent(primary))
    show("primary set", names)
    check(cuda.cuCtxSetCurrent(primary))  # already current (answered in C by the library)
    show("primary set again", names)
    other = check(cuda.cuCtxCreate(None, 0, dev))
    names[int(other)] = "created"
    show("after create", names)
    check(cuda.cuCtxPushCurrent(primary))
    show("primary pushed", names)
    check(cuda.cuCtxPopCurrent())
    show("popped", names)
    check(cuda.cuCtxSetCurrent(primary))
    check(cuda.cuCtxDestroy(other))
    show("created destroyed", names)
    check(cuda.cuCtxSetCurrent(None))
    show("none set", names)
    check(cuda.cuDevicePrimaryCtxSetFlags(dev, cuda.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC))
    show("primary flags set", names)
    check(cuda.cuCtxSetCurrent(primary))
    seen = []
    worker = threading.Thread(target=lambda: seen.append(cuda.cuCtxGetCurrent()))
    worker.start()
    worker.join()
    print("another thread sees primary", int(check(seen[0])) == int(primary))
    show("back on primary", names)
    check(cuda.cuDevicePrimaryCtxRelease(dev))
    show("primary released", names)
    print("released primary set again", cuda.cuCtxSetCurrent(primary)[0].name)
    show("after", names)
    print("done")


if __name__ == "__main__":
    main()
