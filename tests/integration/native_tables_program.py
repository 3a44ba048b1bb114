"""Calls the driver's private tables as the CUDA runtime does (run under `cricket-run --`, so
"libcuda.so.1" is the native library): a module from a fat binary wrapper around a fatbin
(CUDART_INTERFACE slots 1, 6 and 8), the primary context (slot 2), a launch of its kernel,
context-local storage, the tool callback areas, a thread's current context and its number, a stream's object and its id, a module's functions, an unknown slot and an unknown table. Prints one
line per check. Argument: the fatbin (tests/kernels/test_kernels.fatbin)."""

from __future__ import annotations

import ctypes
import struct
import sys
import threading
from ctypes import POINTER, byref, c_int, c_size_t, c_uint, c_uint64, c_void_p
from pathlib import Path
from typing import Any

cuda = ctypes.CDLL("libcuda.so.1")
CUresult = c_int


def table(uuid: str, length: int = 16) -> tuple[int, ctypes.Array[c_void_p] | None]:
    out = c_void_p()
    err = cuda.cuGetExportTable(byref(out), (ctypes.c_char * 16).from_buffer_copy(bytes.fromhex(uuid)))
    if err:
        return err, None
    return 0, (c_void_p * length).from_address(out.value)


def slot(t: ctypes.Array[c_void_p], index: int, restype: object, *argtypes: object) -> Any:
    return ctypes.CFUNCTYPE(restype, *argtypes)(t[index])


def main() -> None:
    image = Path(sys.argv[1]).read_bytes()
    assert cuda.cuInit(0) == 0
    _, cudart = table("6bd5fb6c5bf4e74a8987d93912fd9df9")
    assert cudart is not None
    print("cudart size", cudart[0])

    ctx = c_void_p()
    err = slot(cudart, 2, CUresult, POINTER(c_void_p), c_int)(byref(ctx), 0)
    print("primary context", err, bool(ctx.value))
    assert cuda.cuCtxSetCurrent(ctx) == 0

    fatbin = ctypes.create_string_buffer(image, len(image))
    wrapper = ctypes.create_string_buffer(struct.pack("<iiQQ", 0x466243B1, 1, ctypes.addressof(fatbin), 0))
    module = c_void_p()
    err = slot(cudart, 1, CUresult, POINTER(c_void_p), c_void_p)(byref(module), ctypes.addressof(wrapper))
    print("module from wrapper", err, bool(module.value))

    fn = c_void_p()
    assert cuda.cuModuleGetFunction(byref(fn), module, b"vector_add") == 0
    n = 256
    a, b, c = c_uint64(), c_uint64(), c_uint64()
    for p in (a, b, c):
        assert cuda.cuMemAlloc_v2(byref(p), n * 4) == 0
    xs = (ctypes.c_float * n)(*range(n))
    ys = (ctypes.c_float * n)(*([0.5] * n))
    cuda.cuMemcpyHtoD_v2(a, xs, n * 4)
    cuda.cuMemcpyHtoD_v2(b, ys, n * 4)
    count = c_int(n)
    params = (c_void_p * 4)(*(ctypes.cast(byref(x), c_void_p) for x in (a, b, c, count)))
    err = cuda.cuLaunchKernel(fn, 1, 1, 1, n, 1, 1, 0, None, params, None)
    out = (ctypes.c_float * n)()
    cuda.cuMemcpyDtoH_v2(out, c, n * 4)
    print("launch", err, out[0] == 0.5 and out[n - 1] == n - 0.5)

    module8 = c_void_p()
    ext2 = slot(cudart, 8, CUresult, c_void_p, POINTER(c_void_p), c_void_p, c_void_p, c_uint)
    print("module from fatbin", ext2(ctypes.addressof(fatbin), byref(module8), None, None, 0), bool(module8.value))
    module6 = c_void_p()
    ext1 = slot(cudart, 6, CUresult, POINTER(c_void_p), c_void_p, c_void_p, c_void_p, c_uint)
    print("module ext1", ext1(byref(module6), ctypes.addressof(wrapper), None, None, 0), bool(module6.value))
    print("module ext1 with arguments", ext1(byref(module6), ctypes.addressof(wrapper), None, None, 7))
    bad = ctypes.create_string_buffer(struct.pack("<iiQQ", 0x12345678, 1, ctypes.addressof(fatbin), 0))
    print("bad wrapper", slot(cudart, 1, CUresult, POINTER(c_void_p), c_void_p)(byref(module), ctypes.addressof(bad)))

    _, cls = table("c693336e1121df11a8c368f355d89593")
    assert cls is not None
    put = slot(cls, 0, CUresult, c_void_p, c_void_p, c_void_p, c_void_p)
    delete = slot(cls, 1, CUresult, c_void_p, c_void_p)
    get = slot(cls, 2, CUresult, POINTER(c_void_p), c_void_p, c_void_p)
    value = c_void_p()
    print("cls put", put(ctx, 0x1234, 0xBEEF, None))
    print("cls get", get(byref(value), ctx, 0x1234), hex(value.value or 0))
    print("cls get current", get(byref(value), None, 0x1234), hex(value.value or 0))
    print("cls delete", delete(ctx, 0x1234), "then get", get(byref(value), ctx, 0x1234))

    _, hooks = table("a094798c2e742e7493f20800200c0a66")
    assert hooks is not None
    area, size = c_void_p(), c_size_t()
    slot(hooks, 2, None, POINTER(c_void_p), POINTER(c_size_t))(byref(area), byref(size))
    print("callback area", bool(area.value), size.value, ctypes.string_at(area.value, 64) == bytes(64))

    _, tools = table("42d85a8123f6cb478298f6e78a3aecdc")
    _, contexts = table("21318c60971432488ca641ff7324c8f2", 93)
    assert tools is not None and contexts is not None
    thread_context = slot(tools, 2, CUresult, POINTER(c_void_p), c_uint)
    mine = c_void_p()
    err = thread_context(byref(mine), 0)
    agree = []

    def in_another_thread() -> None:  # the slot answers as cuCtxGetCurrent does in that thread
        theirs, current = c_void_p(1), c_void_p(2)
        agree.append(thread_context(byref(theirs), 0) == cuda.cuCtxGetCurrent(byref(current)) == 0
                     and theirs.value == current.value)

    worker = threading.Thread(target=in_another_thread)
    worker.start()
    worker.join()
    print("thread context", err, mine.value == ctx.value, agree == [True])
    number, ctx_id = c_uint64(), c_uint64()
    err = slot(contexts, 4, CUresult, c_void_p, POINTER(c_uint64))(mine, byref(number))
    assert cuda.cuCtxGetId(ctx, byref(ctx_id)) == 0
    print("context number", err, number.value == ctx_id.value)

    stream_object = slot(contexts, 51, CUresult, c_void_p, c_void_p, POINTER(c_void_p))
    stream_object_id = slot(contexts, 39, CUresult, c_void_p, c_void_p, POINTER(c_uint64))
    created = c_void_p()
    assert cuda.cuStreamCreate(byref(created), 0) == 0
    for name, handle in (("null", None), ("legacy", 1), ("created", created.value)):
        first, again, ident, want = c_void_p(), c_void_p(), c_uint64(), c_uint64()
        err = stream_object(mine, handle, byref(first))
        err2 = stream_object(mine, handle, byref(again))
        err3 = stream_object_id(mine, first, byref(ident))
        assert cuda.cuStreamGetId(c_void_p(handle), byref(want)) == 0
        words = (c_uint64 * 11).from_address(first.value)
        print("stream object", name, err, err2, err3, first.value == again.value,
              ident.value == want.value, words[2] == ctx.value, words[10] == (handle or 0))
    print("stream object of no context", stream_object(None, None, byref(c_void_p())))
    print("stream object id of no object", stream_object_id(mine, c_void_p(8), byref(c_uint64())))

    _, tools_module = table("6e163fbeb958444d835ce182aff1991e", 99)
    assert tools_module is not None
    module_functions = slot(tools_module, 7, c_uint, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p)
    seen: list[tuple[int, int]] = []
    store = ctypes.CFUNCTYPE(None, c_void_p, c_void_p, c_void_p)(
        lambda user, function, owner: seen.append((function or 0, owner or 0))
    )  # called with each function of the module (cuFFT's stores it at `user`)
    found = module_functions(ctx, module, store, None, module, None)
    count = c_int()
    assert cuda.cuModuleGetFunctionCount(byref(count), module) == 0
    names = set()
    for function, owner in seen:
        name = ctypes.c_char_p()
        assert cuda.cuFuncGetName(byref(name), c_void_p(function)) == 0 and owner == module.value
        names.add(name.value)
    print("module functions", found == count.value == len(seen) > 1, b"vector_add" in names)
    print("module functions of no module", module_functions(ctx, c_void_p(0x5), store, None, None, None))

    _, checks = table("263e88607cd2614392f6bbd5006dfa7e", 15)
    assert checks is not None
    print("quiet refusal", slot(checks, 3, c_uint)())  # every runtime program calls it once

    print("unknown slot", slot(cudart, 3, CUresult)())
    print("unknown table", table("00112233445566778899aabbccddeeff")[0])
    print("done")


if __name__ == "__main__":
    main()
