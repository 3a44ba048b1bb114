"""A cuda-python program that knows nothing of Cricket or checkpoints: only
`cuda.bindings.driver`. The operator tests run it under `cricket-run --server ADDR` as a
subprocess and steer it by lines on stdin; it answers by lines on stdout.

    (start)  builds state: memory with data, a module and its function, a stream; "ready"
    "more"   makes calls that change state (a memset, a launch); "more done"
    "reads"  reads its memory back, synchronizes, asks for memory info; "reads done"
    "go"     reads everything back and checks it; a call that raises an exception named
             CallsLost is reported as "lost PROC PROC ..." (its `calls`), and the state is
             then checked as the checkpoint held it;
             finally it makes new calls on the same session; "ok"

Exit status 0 when every check held; a failed check ends it with a traceback on stderr.
"""

from __future__ import annotations

import ctypes
import random
import struct
import sys
from pathlib import Path
from typing import Any

from cuda.bindings import driver as cuda

KERNELS = Path(__file__).resolve().parents[1] / "kernels" / "test_kernels.sm_90.cubin"
SIZES = [100, 4096, (1 << 20) + 17]


def check(result: Any) -> Any:
    err, *rest = result
    assert err == cuda.CUresult.CUDA_SUCCESS, repr(err)
    return rest[0] if len(rest) == 1 else tuple(rest) or None


def read(ptr: Any, size: int) -> bytes:
    out = bytearray(size)
    check(cuda.cuMemcpyDtoH(out, ptr, size))
    return bytes(out)


def say(line: str) -> None:
    print(line, flush=True)


def launch_add(func: Any, stream: Any, value: int) -> None:
    check(cuda.cuLaunchKernel(func, 1, 1, 1, 32, 1, 1, 0, stream, ((value,), (ctypes.c_int,)), 0))


def main() -> None:
    check(cuda.cuInit(0))
    ctx = check(cuda.cuDevicePrimaryCtxRetain(check(cuda.cuDeviceGet(0))))
    check(cuda.cuCtxSetCurrent(ctx))
    rng = random.Random(7)
    data = [rng.randbytes(size) for size in SIZES]
    ptrs = [check(cuda.cuMemAlloc(size)) for size in SIZES]
    for ptr, payload in zip(ptrs, data, strict=True):
        check(cuda.cuMemcpyHtoD(ptr, payload, len(payload)))
    module = check(cuda.cuModuleLoadData(KERNELS.read_bytes()))
    add = check(cuda.cuModuleGetFunction(module, b"add_to_counter"))
    counter, _ = check(cuda.cuModuleGetGlobal(module, b"counter"))
    stream = check(cuda.cuStreamCreate(0))
    launch_add(add, stream, 3)
    check(cuda.cuStreamSynchronize(stream))
    expected_counter = 32 * 3
    say("ready")

    lost: list[str] = []
    for line in sys.stdin:
        command = line.strip()
        if command == "more":  # state the next restart will not have
            check(cuda.cuMemsetD8(ptrs[1], 0x77, SIZES[1]))
            launch_add(add, stream, 5)
            check(cuda.cuStreamSynchronize(stream))
            say("more done")
        elif command == "reads":  # calls that change nothing
            for ptr, payload in zip(ptrs, data, strict=True):
                assert read(ptr, len(payload)) == payload
            check(cuda.cuStreamSynchronize(stream))
            check(cuda.cuCtxSynchronize())
            check(cuda.cuMemGetInfo())
            say("reads done")
        elif command == "go":
            try:
                first = read(ptrs[0], SIZES[0])
            except Exception as e:  # what the remote driver says when calls were lost
                if type(e).__name__ != "CallsLost":
                    raise
                lost = [proc for _seq, proc in e.calls]  # type: ignore[attr-defined]
                say("lost " + " ".join(lost))
                first = read(ptrs[0], SIZES[0])  # the session goes on as the checkpoint had it
            assert first == data[0], "the first allocation differs"
            # cuda places module globals itself: a restore may move one (it logs the move)
            counter, _ = check(cuda.cuModuleGetGlobal(module, b"counter"))
            for ptr, payload in zip(ptrs[1:], data[1:], strict=True):
                assert read(ptr, len(payload)) == payload, f"allocation {int(ptr):#x} differs"
            assert struct.unpack("<i", read(counter, 4))[0] == expected_counter
            launch_add(add, stream, 1)  # the module, the function and the stream go on
            check(cuda.cuStreamSynchronize(stream))
            assert struct.unpack("<i", read(counter, 4))[0] == expected_counter + 32
            more = check(cuda.cuMemAlloc(4096))
            check(cuda.cuMemcpyHtoD(more, b"n" * 4096, 4096))
            assert read(more, 4096) == b"n" * 4096
            say("ok")
            return
    raise SystemExit("stdin ended before 'go'")


if __name__ == "__main__":
    main()
