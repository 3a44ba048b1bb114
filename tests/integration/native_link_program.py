"""A `cuda.bindings.driver` program, unmodified, that links: one cubin through cuLinkAddData
(loaded and run from the linked image) and PTX, which sim cannot link (its message comes back in
the error log buffer). Runs through both doors compare equal.

    python native_link_program.py CUBIN
"""

import ctypes
import sys

import numpy as np
from cuda.bindings import driver as cuda


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        cubin = f.read()
    assert cuda.cuInit(0)[0] == 0
    err, dev = cuda.cuDeviceGet(0)
    err, ctx = cuda.cuDevicePrimaryCtxRetain(dev)
    cuda.cuCtxSetCurrent(ctx)
    log = bytearray(1024)
    jit = cuda.CUjit_option
    options = [jit.CU_JIT_ERROR_LOG_BUFFER, jit.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    err, state = cuda.cuLinkCreate(2, options, [log, len(log)])
    print("create", err.name)
    cubin_input = cuda.CUjitInputType.CU_JIT_INPUT_CUBIN
    print("add", cuda.cuLinkAddData(state, cubin_input, cubin, len(cubin), b"k.cubin", 0, None, None)[0].name)
    err, image, size = cuda.cuLinkComplete(state)
    print("complete", err.name, size == len(cubin))
    err, mod = cuda.cuModuleLoadData(image)
    print("load", err.name)
    err, fill = cuda.cuModuleGetFunction(mod, b"fill_u32")
    err, p = cuda.cuMemAlloc(64)
    args = ((p, 6, 16), (None, ctypes.c_uint, ctypes.c_ulonglong))
    print("launch", cuda.cuLaunchKernel(fill, 1, 1, 1, 16, 1, 1, 0, 0, args, 0)[0].name)
    out = np.zeros(16, dtype=np.uint32)
    cuda.cuMemcpyDtoH(out, p, 64)
    print("sum", int(out.sum()))
    print("destroy", cuda.cuLinkDestroy(state)[0].name)
    err, state = cuda.cuLinkCreate(2, options, [log, len(log)])
    ptx = b".version 8.0\n.target sm_90\n.address_size 64\n"
    ptx_input = cuda.CUjitInputType.CU_JIT_INPUT_PTX
    cuda.cuLinkAddData(state, ptx_input, ptx, len(ptx), b"a.ptx", 0, None, None)
    print("ptx", cuda.cuLinkComplete(state)[0].name)
    print("log", bytes(log).split(b"\0")[0].decode())
    cuda.cuLinkDestroy(state)


if __name__ == "__main__":
    main()
