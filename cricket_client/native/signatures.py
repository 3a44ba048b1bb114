"""The driver functions the native library exports: their C ABI, the versions that select them,
and the C source made from both (pure data and text; no compiler, no cffi).

Each exported C function only checks the library's state (finalized, forked) and calls its
Python implementation (cricket_client.native.entries) with handles and host pointers as
`uintptr_t`: Python sees plain integers, and writes results through the output pointers.
"""

from __future__ import annotations

import re
from pathlib import Path

from .at_exit import AFTER_EXIT_C, AFTER_EXIT_CDEF, after_exit_lines
from .context_storage import STORAGE_C, STORAGE_CDEF
from .families import FAMILY_ENTRIES, FAMILY_HANDLES, FAMILY_SINCE, FAMILY_TYPES
from .known_context import FAST_PATHS, KNOWN_C, KNOWN_CDEF
from .launch_pack import PACK_C, PACK_CDEF

__all__ = [
    "ENTRIES",
    "HANDLE_TYPES",
    "OPTIONAL_OUTPUTS",
    "VARIANTS",
    "c_declarations",
    "c_source",
    "python_declarations",
    "select_symbol",
]

# C types of the driver API, declared by the project (no CUDA header on a client machine).
C_TYPES = """\
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUuuid_st { char bytes[16]; } CUuuid;
typedef struct CUlaunchConfig_st {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    void *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;
""" + FAMILY_TYPES

HANDLE_TYPES = frozenset(
    ["CUcontext", "CUmodule", "CUfunction", "CUlibrary", "CUkernel", "CUstream", "CUevent"]
) | FAMILY_HANDLES

# (exported symbol, C parameters). Symbols carry the ABI suffix the CUDA headers map to.
ENTRIES: list[tuple[str, str]] = [
    ("cuInit", "unsigned int Flags"),
    ("cuDriverGetVersion", "int *driverVersion"),
    ("cuGetExportTable", "const void **ppExportTable, const CUuuid *pExportTableId"),
    # devices
    ("cuDeviceGetCount", "int *count"),
    ("cuDeviceGet", "CUdevice *device, int ordinal"),
    ("cuDeviceGetName", "char *name, int len, CUdevice dev"),
    ("cuDeviceGetAttribute", "int *pi, int attrib, CUdevice dev"),
    ("cuDeviceTotalMem_v2", "size_t *bytes, CUdevice dev"),
    ("cuDeviceGetUuid", "CUuuid *uuid, CUdevice dev"),
    ("cuDeviceGetUuid_v2", "CUuuid *uuid, CUdevice dev"),
    ("cuDeviceGetPCIBusId", "char *pciBusId, int len, CUdevice dev"),
    ("cuDeviceComputeCapability", "int *major, int *minor, CUdevice dev"),
    # primary contexts, contexts
    ("cuDevicePrimaryCtxRetain", "CUcontext *pctx, CUdevice dev"),
    ("cuDevicePrimaryCtxRelease_v2", "CUdevice dev"),
    ("cuDevicePrimaryCtxReset_v2", "CUdevice dev"),
    ("cuDevicePrimaryCtxGetState", "CUdevice dev, unsigned int *flags, int *active"),
    ("cuDevicePrimaryCtxSetFlags_v2", "CUdevice dev, unsigned int flags"),
    # the forms before 11.0 (a 13.0 runtime asks for them at 7000): the _v2 implementation, as
    # the driver's own unversioned symbols behave today
    ("cuDevicePrimaryCtxRelease", "CUdevice dev"),
    ("cuDevicePrimaryCtxReset", "CUdevice dev"),
    ("cuDevicePrimaryCtxSetFlags", "CUdevice dev, unsigned int flags"),
    ("cuCtxCreate_v2", "CUcontext *pctx, unsigned int flags, CUdevice dev"),
    ("cuCtxCreate_v3", "CUcontext *pctx, void *paramsArray, int numParams, unsigned int flags, CUdevice dev"),
    ("cuCtxCreate_v4", "CUcontext *pctx, void *ctxCreateParams, unsigned int flags, CUdevice dev"),
    ("cuCtxDestroy_v2", "CUcontext ctx"),
    ("cuCtxSetCurrent", "CUcontext ctx"),
    ("cuCtxGetCurrent", "CUcontext *pctx"),
    ("cuCtxPushCurrent_v2", "CUcontext ctx"),
    ("cuCtxPopCurrent_v2", "CUcontext *pctx"),
    ("cuCtxSynchronize", ""),
    ("cuProfilerStart", ""),
    ("cuProfilerStop", ""),
    ("cuCtxGetDevice", "CUdevice *device"),
    ("cuCtxGetDevice_v2", "CUdevice *device, CUcontext ctx"),
    ("cuCtxSynchronize_v2", "CUcontext ctx"),
    ("cuCtxGetLimit", "size_t *pvalue, int limit"),
    ("cuCtxSetLimit", "int limit, size_t value"),
    ("cuCtxGetStreamPriorityRange", "int *leastPriority, int *greatestPriority"),
    # memory
    ("cuMemAlloc_v2", "CUdeviceptr *dptr, size_t bytesize"),
    ("cuMemAllocPitch_v2", "CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes"),
    ("cuMemFree_v2", "CUdeviceptr dptr"),
    ("cuMemGetInfo_v2", "size_t *free, size_t *total"),
    ("cuMemGetAddressRange_v2", "CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr"),
    ("cuMemcpy", "CUdeviceptr dst, CUdeviceptr src, size_t ByteCount"),
    ("cuMemcpyAsync", "CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream"),
    ("cuMemcpyHtoD_v2", "CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount"),
    ("cuMemcpyDtoH_v2", "void *dstHost, CUdeviceptr srcDevice, size_t ByteCount"),
    ("cuMemcpyDtoD_v2", "CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount"),
    ("cuMemcpyHtoDAsync_v2", "CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream"),
    ("cuMemcpyDtoHAsync_v2", "void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream"),
    ("cuMemcpyDtoDAsync_v2", "CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream"),
    ("cuMemsetD8_v2", "CUdeviceptr dstDevice, unsigned char uc, size_t N"),
    ("cuMemsetD16_v2", "CUdeviceptr dstDevice, unsigned short us, size_t N"),
    ("cuMemsetD32_v2", "CUdeviceptr dstDevice, unsigned int ui, size_t N"),
    ("cuMemsetD8Async", "CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream"),
    ("cuMemsetD16Async", "CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream"),
    ("cuMemsetD32Async", "CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream"),
    ("cuMemAllocAsync", "CUdeviceptr *dptr, size_t bytesize, CUstream hStream"),
    ("cuMemFreeAsync", "CUdeviceptr dptr, CUstream hStream"),
    ("cuPointerGetAttribute", "void *data, int attribute, CUdeviceptr ptr"),
    ("cuPointerGetAttributes", "unsigned int numAttributes, int *attributes, void **data, CUdeviceptr ptr"),
    # page-locked host memory: allocated on the client (cricket_client.runtime_host)
    ("cuMemAllocHost_v2", "void **pp, size_t bytesize"),
    ("cuMemHostAlloc", "void **pp, size_t bytesize, unsigned int Flags"),
    ("cuMemFreeHost", "void *p"),
    ("cuMemHostRegister_v2", "void *p, size_t bytesize, unsigned int Flags"),
    ("cuMemHostUnregister", "void *p"),
    # modules, libraries, functions
    ("cuModuleLoadData", "CUmodule *module, const void *image"),
    ("cuModuleLoadDataEx", "CUmodule *module, const void *image, unsigned int numOptions, int *options, void **optionValues"),
    ("cuModuleLoadFatBinary", "CUmodule *module, const void *fatCubin"),
    ("cuModuleUnload", "CUmodule hmod"),
    ("cuModuleGetFunction", "CUfunction *hfunc, CUmodule hmod, const char *name"),
    ("cuModuleGetGlobal_v2", "CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name"),
    ("cuLibraryLoadData", "CUlibrary *library, const void *code, int *jitOptions, void **jitOptionsValues, unsigned int numJitOptions, int *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions"),
    ("cuLibraryUnload", "CUlibrary library"),
    ("cuLibraryGetKernel", "CUkernel *pKernel, CUlibrary library, const char *name"),
    ("cuKernelGetFunction", "CUfunction *pFunc, CUkernel kernel"),
    ("cuFuncGetAttribute", "int *pi, int attrib, CUfunction hfunc"),
    ("cuFuncSetAttribute", "CUfunction hfunc, int attrib, int value"),
    ("cuFuncSetCacheConfig", "CUfunction hfunc, int config"),
    ("cuFuncGetParamInfo", "CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize"),
    ("cuFuncGetParamCount", "CUfunction func, size_t *paramCount"),
    ("cuFuncGetName", "const char **name, CUfunction hfunc"),
    ("cuFuncIsLoaded", "int *state, CUfunction function"),
    ("cuFuncLoad", "CUfunction function"),
    ("cuKernelGetAttribute", "int *pi, int attrib, CUkernel kernel, CUdevice dev"),
    ("cuKernelSetAttribute", "int attrib, int val, CUkernel kernel, CUdevice dev"),
    ("cuKernelSetCacheConfig", "CUkernel kernel, int config, CUdevice dev"),
    ("cuKernelGetParamInfo", "CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize"),
    ("cuKernelGetParamCount", "CUkernel kernel, size_t *paramCount"),
    ("cuKernelGetName", "const char **name, CUkernel hfunc"),
    # launches
    ("cuLaunchKernel", "CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra"),
    ("cuLaunchKernelEx", "const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra"),
    ("cuLaunchCooperativeKernel", "CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams"),
    # streams, events
    ("cuStreamCreate", "CUstream *phStream, unsigned int Flags"),
    ("cuStreamCreateWithPriority", "CUstream *phStream, unsigned int flags, int priority"),
    ("cuStreamDestroy_v2", "CUstream hStream"),
    ("cuStreamSynchronize", "CUstream hStream"),
    ("cuStreamQuery", "CUstream hStream"),
    ("cuStreamWaitEvent", "CUstream hStream, CUevent hEvent, unsigned int Flags"),
    ("cuLaunchHostFunc", "CUstream hStream, void *fn, void *userData"),
    ("cuLaunchHostFunc_v2", "CUstream hStream, void *fn, void *userData, unsigned int syncMode"),
    ("cuStreamAddCallback", "CUstream hStream, void *callback, void *userData, unsigned int flags"),
    ("cuStreamGetFlags", "CUstream hStream, unsigned int *flags"),
    ("cuStreamGetPriority", "CUstream hStream, int *priority"),
    ("cuThreadExchangeStreamCaptureMode", "int *mode"),
    ("cuEventCreate", "CUevent *phEvent, unsigned int Flags"),
    ("cuEventDestroy_v2", "CUevent hEvent"),
    ("cuEventRecord", "CUevent hEvent, CUstream hStream"),
    ("cuEventSynchronize", "CUevent hEvent"),
    ("cuEventQuery", "CUevent hEvent"),
    ("cuEventElapsedTime", "float *pMilliseconds, CUevent hStart, CUevent hEnd"),
    ("cuEventElapsedTime_v2", "float *pMilliseconds, CUevent hStart, CUevent hEnd"),
    # occupancy
    ("cuOccupancyMaxActiveBlocksPerMultiprocessor", "int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize"),
    ("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags"),
    ("cuOccupancyMaxPotentialBlockSize", "int *minGridSize, int *blockSize, CUfunction func, void *blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit"),
    ("cuModuleGetLoadingMode", "int *mode"),  # the CUDA runtime asks at its start
    *FAMILY_ENTRIES,
]

# Entries whose output pointers may be NULL (that value is not written), as the driver takes
# them; any other NULL output pointer is CUDA_ERROR_INVALID_VALUE.
OPTIONAL_OUTPUTS = frozenset([
    "cuCtxPopCurrent_v2", "cuCtxGetStreamPriorityRange", "cuMemGetInfo_v2",
    "cuMemGetAddressRange_v2", "cuModuleGetGlobal_v2", "cuLibraryGetGlobal", "cuFuncGetParamInfo",
])

# Entries implemented by the C code alone (never reach Python).
C_ONLY = {
    "cuGetErrorName": "CUresult error, const char **pStr",
    "cuGetErrorString": "CUresult error, const char **pStr",
    "cuGetProcAddress": "const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags",
    "cuGetProcAddress_v2": "const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, int *symbolStatus",
}

# Names the CUDA headers map to a `_v2` symbol, for functions not remoted: exported as stubs too.
_V2_IN_HEADERS = ["cuMemcpy2D", "cuMemcpy2DUnaligned", "cuMemcpy3D", "cuMemcpyHtoA", "cuMemcpyAtoH", "cuMemcpyDtoA", "cuMemcpyAtoD", "cuMemcpyAtoA", "cuMemcpyHtoAAsync", "cuMemcpyAtoHAsync", "cuMemcpy2DAsync", "cuMemcpy3DAsync", "cuMemsetD2D8", "cuMemsetD2D16", "cuMemsetD2D32", "cuMemHostGetDevicePointer", "cuArrayCreate", "cuArrayGetDescriptor", "cuArray3DCreate", "cuArray3DGetDescriptor", "cuTexRefSetAddress", "cuTexRefGetAddress", "cuGraphicsResourceGetMappedPointer", "cuLinkCreate", "cuLinkAddData", "cuLinkAddFile", "cuIpcOpenMemHandle", "cuStreamBeginCapture", "cuGraphExecUpdate", "cuStreamGetCaptureInfo", "cuStreamUpdateCaptureDependencies", "cuGraphInstantiate", "cuEventRecordWithFlags", "cuStreamWaitValue32", "cuStreamWaitValue64", "cuStreamWriteValue32", "cuStreamWriteValue64", "cuStreamBatchMemOp"]


def _driver_symbols() -> list[str]:
    path = Path(__file__).with_name("driver_symbols.txt")
    names = [line.strip() for line in path.read_text().splitlines()]
    return [n for n in names if n and not n.startswith("#")]


# cuGetProcAddress: the CUDA version from which each ABI variant of a name is the one handed out
# (below the first version listed, the name's old ABI is asked for, which is not exported).
VARIANTS: dict[str, list[tuple[int, str]]] = {}
_SINCE = {
    3020: "cuDeviceTotalMem cuCtxCreate cuMemAlloc cuMemAllocPitch cuMemFree cuMemGetInfo "
    "cuMemGetAddressRange cuMemcpyHtoD cuMemcpyDtoH cuMemcpyDtoD cuMemcpyHtoDAsync "
    "cuMemcpyDtoHAsync cuMemcpyDtoDAsync cuMemsetD8 cuMemsetD16 cuMemsetD32 cuModuleGetGlobal "
    "cuMemAllocHost",
    4000: "cuCtxDestroy cuCtxPushCurrent cuCtxPopCurrent cuStreamDestroy cuEventDestroy",
    11000: "cuDevicePrimaryCtxRelease cuDevicePrimaryCtxReset cuDevicePrimaryCtxSetFlags",
}
_V2_SINCE = {name: version for version, names in _SINCE.items() for name in names.split()}
_LATER = {
    "cuDeviceGetUuid_v2": 11040,
    "cuCtxCreate_v3": 11040,
    "cuCtxCreate_v4": 12050,
    "cuEventElapsedTime_v2": 12080,
    "cuMemHostRegister_v2": 6050,
    "cuLaunchHostFunc_v2": 13020,
    "cuCtxGetDevice_v2": 13000,
    "cuCtxSynchronize_v2": 13000,
    **FAMILY_SINCE,
}


def _build_variants() -> None:
    for symbol, _ in ENTRIES:
        match = re.fullmatch(r"(\w+?)(_v\d)?", symbol)
        assert match is not None
        base, suffix = match.group(1), match.group(2)
        if suffix is None:
            since = 0
        elif symbol in _LATER:
            since = _LATER[symbol]
        else:
            since = _V2_SINCE[base]
        VARIANTS.setdefault(base, []).append((since, symbol))
    for variants in VARIANTS.values():
        variants.sort()


_build_variants()


def _params(params: str) -> list[tuple[str, str]]:
    """[(C type, name)] of a parameter list."""
    out = []
    for param in filter(None, (p.strip() for p in params.split(","))):
        match = re.fullmatch(r"(.+?)\s*(\w+)", param)
        assert match is not None, param
        out.append((match.group(1).replace(" *", "*").replace("* ", "*"), match.group(2)))
    return out


PER_THREAD_FLAG = 2  # CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
CU_STREAM_PER_THREAD = 2


def _stream_param(params: str) -> str | None:
    for ctype, name in _params(params):
        if ctype == "CUstream":
            return name
    return None


# Per-thread default stream forms (what `--default-stream per-thread` code calls, and what
# cuGetProcAddress hands out with the per-thread flag): `_ptsz` where the call takes a stream
# (stream 0 then means the calling thread's default stream), `_ptds` for the synchronous copies
# and memsets (the same calls here: they wait for the copy either way).
PER_THREAD: dict[str, str] = {}
for _symbol, _params_text in ENTRIES:
    if _stream_param(_params_text) is not None or _symbol == "cuLaunchKernelEx":
        if _symbol not in ("cuStreamDestroy_v2", "cuStreamCreate", "cuStreamCreateWithPriority"):
            PER_THREAD[_symbol] = _symbol + "_ptsz"
    elif _symbol.startswith(("cuMemcpy", "cuMemsetD")):
        PER_THREAD[_symbol] = _symbol + "_ptds"


def select_symbol(name: str, cuda_version: int, flags: int = 0) -> str | None:
    """The exported symbol cuGetProcAddress hands out for (name, version, flags), or None where
    the name is not remoted (or only an older ABI of it is asked for)."""
    chosen = None
    for since, symbol in VARIANTS.get(name, ()):
        if since <= cuda_version:
            chosen = symbol
    if chosen is not None and flags & PER_THREAD_FLAG:
        return PER_THREAD.get(chosen, chosen)
    return chosen


def _python_type(ctype: str) -> str:
    """Handles and host pointers travel to Python as uintptr_t; outputs stay typed pointers."""
    base = ctype.replace("const ", "")
    if base in HANDLE_TYPES or base in ("void*", "void**"):
        return "uintptr_t"
    if base.rstrip("*") in HANDLE_TYPES:
        return "uintptr_t *"
    if ctype == "const CUlaunchConfig*":
        return "const CUlaunchConfig *"
    return ctype.replace("*", " *")


def stub_symbols() -> list[str]:
    """Driver functions exported by name that answer CUDA_ERROR_NOT_SUPPORTED naming themselves
    (what the library does not remote, for programs that dlsym or link by name)."""
    exported = {s for s, _ in ENTRIES} | set(C_ONLY) | set(PER_THREAD.values())
    names = set(_driver_symbols()) | {f"{n}_v2" for n in _V2_IN_HEADERS}
    return sorted(names - exported)


def python_declarations() -> str:
    """cffi cdef text: the types and one `extern "Python"` implementation per entry."""
    lines = [C_TYPES]
    for symbol, params in ENTRIES:
        args = ", ".join(_python_type(t) + " " + n for t, n in _params(params)) or "void"
        lines.append(f'extern "Python" CUresult py_{symbol}({args});')
    lines.append('extern "Python" CUresult py_unsupported(int);')
    lines.append('extern "Python" CUresult py_unsupported_name(const char *);')
    lines.append('extern "Python" uintptr_t py_proc_address(const char *, int, int, int *);')
    lines.append('extern "Python" void py_after_fork(void);')
    lines.append('extern "Python" void py_at_exit(void);')
    lines.append("void cricket_set_state(int ready, int finalized);")
    lines.append("int cricket_stub_count(void);")
    lines.append("uintptr_t cricket_stub(int index);")
    lines.append("uintptr_t cricket_symbol(const char *name);")
    lines.append(PACK_CDEF)
    lines.append(KNOWN_CDEF)
    lines.append(AFTER_EXIT_CDEF)
    lines.append(STORAGE_CDEF)
    return "\n".join(lines)


def c_declarations() -> str:
    """C prototypes of every exported driver function (a header for C callers and tests)."""
    lines = [C_TYPES]
    for symbol, params in ENTRIES + list(C_ONLY.items()):
        lines.append(f"CUresult {symbol}({params or 'void'});")
    return "\n".join(lines)


_STUBS = 1024


def c_source(
    error_names: dict[int, str], error_strings: dict[int, str], libpython: str = ""
) -> str:
    """The library's C code: the exported functions, the guards, error names and strings, the
    pool of stubs handed out for functions that are not remoted. `libpython`: the soname of the
    libpython it links, made global when the library starts an interpreter (else extension
    modules, cffi's own first, cannot see the interpreter's symbols)."""
    out = [
        "#include <dlfcn.h>",
        "#include <pthread.h>",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        "#include <stdint.h>",
        C_TYPES,
        "#define EXPORT __attribute__((visibility(\"default\")))",
        "#define CUDA_ERROR_INVALID_VALUE 1",
        "#define CUDA_ERROR_NOT_INITIALIZED 3",
        "#define CUDA_ERROR_DEINITIALIZED 4",
        "#define CUDA_ERROR_NOT_FOUND 500",
        PACK_C,
        KNOWN_C,
        "static volatile int cricket_ready = 0, cricket_finalized = 0, cricket_forked = 0;",
        AFTER_EXIT_C,
        STORAGE_C,
        "CUresult cuGetProcAddress(const char *, void **, int, cuuint64_t);",
        "CUresult cuGetErrorName(CUresult, const char **);",
        "CUresult cuGetErrorString(CUresult, const char **);",
        "CUresult cuGetProcAddress_v2(const char *, void **, int, cuuint64_t, int *);",
        "static pthread_once_t cricket_atfork_once = PTHREAD_ONCE_INIT;",
        # fork(): in a program without Python (the library started the interpreter), the
        # forking thread holds the GIL across fork() and the interpreter is told, as os.fork
        # does in a Python program; the child's first call then leaves the parent's session.
        "static int cricket_c_host = 0;",
        "static PyGILState_STATE cricket_fork_gil;",
        "static int cricket_fork_held = 0;",
        "static void cricket_prepare(void) {",
        "    if (!cricket_c_host || !cricket_ready || cricket_finalized) return;",
        "    cricket_fork_gil = PyGILState_Ensure(); cricket_fork_held = 1; PyOS_BeforeFork(); }",
        "static void cricket_parent(void) {",
        "    if (!cricket_fork_held) return;",
        "    cricket_fork_held = 0; PyOS_AfterFork_Parent(); PyGILState_Release(cricket_fork_gil); }",
        "static void cricket_child(void) {",
        "    if (cricket_fork_held) {",
        "        cricket_fork_held = 0; PyOS_AfterFork_Child(); PyGILState_Release(cricket_fork_gil); }",
        "    cricket_known_after_fork(); cricket_storage_after_fork(); cricket_forked = 1; }",
        "static void cricket_register_atfork(void) {",
        "    pthread_atfork(cricket_prepare, cricket_parent, cricket_child); }",
        "static void cricket_set_state(int ready, int finalized) {",
        "    cricket_ready = ready; cricket_finalized = finalized; }",
        # A program without Python ends without finalizing the interpreter the library
        # started, so no Python exit handler runs: the call statistics asked for
        # (CRICKET_CALL_STATS) are written from the C exit instead; nothing else runs there.
        "static void py_at_exit(void);",
        "static void cricket_c_exit(void) {",
        "    const char *stats = getenv(\"CRICKET_CALL_STATS\");",
        "    if (!stats || !*stats || !strcmp(stats, \"0\")) return;",
        "    if (cricket_c_host && cricket_ready && !cricket_finalized) py_at_exit(); }",
        # A call from Python code holding the GIL with an exception set (cuda.core in an error
        # path) must not see or lose that exception: it is put aside around the call.
        "#define CRICKET_ENTER \\",
        "    if (cricket_finalized) return cricket_after_exit(__func__, CUDA_ERROR_DEINITIALIZED); \\",
        "    if (cricket_other_python) return CUDA_ERROR_NOT_INITIALIZED; \\",
        "    pthread_once(&cricket_atfork_once, cricket_register_atfork); \\",
        "    if (cricket_forked) { cricket_forked = 0; py_after_fork(); } \\",
        "    PyObject *et = NULL, *ev = NULL, *tb = NULL; \\",
        "    int held = cricket_ready && PyGILState_Check(); \\",
        "    if (held) PyErr_Fetch(&et, &ev, &tb);",
        "#define CRICKET_LEAVE(r) \\",
        "    if (held) PyErr_Restore(et, ev, tb); \\",
        "    return r;",
        # When the library's Python side could not start (cffi's init code failed: the client
        # not importable, a library older than the client's code), cffi answers 0 for every
        # call, which a driver caller would read as CUDA_SUCCESS: it is NOT_INITIALIZED.
        "#define CRICKET_LEAVE_CU(r) \\",
        "    if (!cricket_ready) r = CUDA_ERROR_NOT_INITIALIZED; \\",
        "    CRICKET_LEAVE(r)",
    ]
    # At load: in a Python of another minor version than the one linked, refuse every call
    # (naming both); in a program without Python, make the linked libpython global.
    out.append(
        "static unsigned long cricket_other_python = 0;\n"
        "__attribute__((constructor)) static void cricket_loaded(void) {\n"
        "    const unsigned long *running = (const unsigned long *)dlsym(RTLD_DEFAULT, \"Py_Version\");\n"
        "    if (running && (*running >> 16) != ((unsigned long)PY_VERSION_HEX >> 16)) {\n"
        "        cricket_other_python = *running;\n"
        "        fprintf(stderr, \"cricket: this libcuda.so.1 is built for Python %d.%d, the program \"\n"
        "                \"runs Python %lu.%lu: build one for it (that python -m \"\n"
        "                \"cricket_client.native.build); driver calls answer \"\n"
        "                \"CUDA_ERROR_NOT_INITIALIZED\\n\", PY_MAJOR_VERSION, PY_MINOR_VERSION,\n"
        "                *running >> 24, (*running >> 16) & 0xff);\n"
        "        return;\n    }\n"
        + "    if (Py_IsInitialized()) return;\n"
        + "    cricket_c_host = 1;\n"
        + "    atexit(cricket_c_exit);\n"
        + (f'    dlopen("{libpython}", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);\n' if libpython else "")
        # The interpreter it starts must find cffi's backend (imported before any init code
        # runs) where the client is installed: CRICKET_NATIVE_PATH goes first on PYTHONPATH
        # until the init code puts PYTHONPATH back (programs it starts see it unchanged).
        + "    const char *extra = getenv(\"CRICKET_NATIVE_PATH\");\n"
        "    if (!extra || !*extra) return;\n"
        "    const char *old = getenv(\"PYTHONPATH\");\n"
        "    size_t n = strlen(extra) + (old ? strlen(old) : 0) + 2;\n"
        "    char *both = malloc(n);\n"
        "    if (!both) return;\n"
        "    snprintf(both, n, old && *old ? \"%s:%s\" : \"%s\", extra, old ? old : \"\");\n"
        "    setenv(\"CRICKET_NATIVE_PYTHONPATH\", old ? old : \"\", 1);\n"
        "    if (!old) setenv(\"CRICKET_NATIVE_PYTHONPATH_UNSET\", \"1\", 1);\n"
        "    setenv(\"PYTHONPATH\", both, 1);\n"
        "    free(both);\n"
        + "}"
    )
    # the `extern "Python"` implementations, defined by cffi after this code
    for symbol, params in ENTRIES:
        args = ", ".join(_python_type(t) + " " + n for t, n in _params(params)) or "void"
        out.append(f"static CUresult py_{symbol}({args});")
    out.insert(-len(ENTRIES), "static CUresult py_unsupported(int);")
    out.insert(-len(ENTRIES), "static CUresult py_unsupported_name(const char *);")
    out.insert(-len(ENTRIES), "static uintptr_t py_proc_address(const char *, int, int, int *);")
    out.insert(-len(ENTRIES), "static void py_after_fork(void);")
    for symbol, params in ENTRIES:
        parsed = _params(params)
        args = ", ".join(
            f"({_python_type(t)}){n}" if _python_type(t) != t.replace("*", " *") else n
            for t, n in parsed
        )
        out.append(f"EXPORT CUresult {symbol}({params or 'void'}) {{")
        if symbol in FAST_PATHS:  # answered in C while known (known_context)
            out.append(FAST_PATHS[symbol])
        out += after_exit_lines(symbol)  # answered after the interpreter's exit (at_exit)
        out.append(f"    CRICKET_ENTER CUresult r = py_{symbol}({args}); CRICKET_LEAVE_CU(r)")
        out.append("}")
    # unremoted functions: a pool of stubs, each knowing its index (its name, in Python)
    # per-thread default stream forms: stream 0 becomes CU_STREAM_PER_THREAD
    for symbol, params in ENTRIES:
        form = PER_THREAD.get(symbol)
        if form is None:
            continue
        names = [n for _, n in _params(params)]
        stream = _stream_param(params)
        out.append(f"EXPORT CUresult {form}({params or 'void'}) {{")
        if stream is not None:
            out.append(f"    if (!{stream}) {stream} = (CUstream){CU_STREAM_PER_THREAD};")
        elif symbol == "cuLaunchKernelEx":
            out.append("    CUlaunchConfig c;")
            out.append("    if (config && !config->hStream) {")
            out.append(f"        c = *config; c.hStream = (CUstream){CU_STREAM_PER_THREAD}; config = &c; }}")
        out.append(f"    return {symbol}({', '.join(names)});")
        out.append("}")
    # driver functions not remoted, exported by name
    for name in stub_symbols():
        out.append(
            f"EXPORT CUresult {name}(void) {{ CRICKET_ENTER "
            f'CUresult r = py_unsupported_name("{name}"); CRICKET_LEAVE_CU(r) }}'
        )
    out.append("#define STUB(i) static CUresult cricket_stub_##i(void) { "
               "CRICKET_ENTER CUresult r = py_unsupported(i); CRICKET_LEAVE_CU(r) }")
    out += [f"STUB({i})" for i in range(_STUBS)]
    out.append("static const uintptr_t cricket_stubs[] = {")
    out += [f"    (uintptr_t)cricket_stub_{i}," for i in range(_STUBS)]
    out.append("};")
    out.append(f"static int cricket_stub_count(void) {{ return {_STUBS}; }}")
    out.append("static uintptr_t cricket_stub(int i) { return cricket_stubs[i]; }")
    out.append("static const struct { const char *name; uintptr_t fn; } cricket_symbols[] = {")
    out += [f'    {{"{s}", (uintptr_t){s}}},' for s, _ in ENTRIES]
    out += [f'    {{"{s}", (uintptr_t){s}}},' for s in C_ONLY]
    out += [f'    {{"{s}", (uintptr_t){s}}},' for s in PER_THREAD.values()]
    out += [f'    {{"{s}", (uintptr_t){s}}},' for s in stub_symbols()]
    out.append("    {0, 0}};")
    out.append(
        "static uintptr_t cricket_symbol(const char *name) {\n"
        "    for (int i = 0; cricket_symbols[i].name; i++)\n"
        "        if (!strcmp(cricket_symbols[i].name, name)) return cricket_symbols[i].fn;\n"
        "    return 0;\n}"
    )
    # error names and strings, answered in C (callable at any time, even during finalization)
    out.append("static const struct { int code; const char *name; const char *text; } "
               "cricket_errors[] = {")
    for code in sorted(error_names):
        text = error_strings.get(code, "").replace("\\", "\\\\").replace('"', '\\"')
        out.append(f'    {{{code}, "{error_names[code]}", "{text}"}},')
    out.append("    {-1, 0, 0}};")
    out.append(
        "static int cricket_error_index(CUresult e) {\n"
        "    for (int i = 0; cricket_errors[i].name; i++)\n"
        "        if (cricket_errors[i].code == e) return i;\n"
        "    return -1;\n}\n"
        "EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr) {\n"
        "    int i = cricket_error_index(error);\n"
        "    if (!pStr) return CUDA_ERROR_INVALID_VALUE;\n"
        "    if (i < 0) { *pStr = 0; return CUDA_ERROR_INVALID_VALUE; }\n"
        "    *pStr = cricket_errors[i].name; return 0;\n}\n"
        "EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr) {\n"
        "    int i = cricket_error_index(error);\n"
        "    if (!pStr) return CUDA_ERROR_INVALID_VALUE;\n"
        "    if (i < 0) { *pStr = 0; return CUDA_ERROR_INVALID_VALUE; }\n"
        "    *pStr = cricket_errors[i].text; return 0;\n}\n"
        # cuGetProcAddress: Python picks the symbol (or a named stub) once per (name, version)
        "EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,\n"
        "                                    cuuint64_t flags, int *symbolStatus) {\n"
        "    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;\n"
        "    if (!strcmp(symbol, \"cuGetProcAddress\")) {\n"
        "        *pfn = (void *)(cudaVersion >= 12000 ? (uintptr_t)cuGetProcAddress_v2\n"
        "                                             : (uintptr_t)cuGetProcAddress);\n"
        "        if (symbolStatus) *symbolStatus = 0;\n"
        "        return 0;\n    }\n"
        "    if (!strcmp(symbol, \"cuGetErrorName\") || !strcmp(symbol, \"cuGetErrorString\")) {\n"
        "        *pfn = (void *)cricket_symbol(symbol);\n"
        "        if (symbolStatus) *symbolStatus = 0;\n"
        "        return 0;\n    }\n"
        "    CRICKET_ENTER\n"
        "    int status = 0;\n"
        "    *pfn = (void *)py_proc_address(symbol, cudaVersion, (int)flags, &status);\n"
        "    if (symbolStatus) *symbolStatus = status;\n"
        "    CRICKET_LEAVE(status ? CUDA_ERROR_NOT_FOUND : 0)\n}\n"
        "EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,\n"
        "                                 cuuint64_t flags) {\n"
        "    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, 0);\n}\n"
    )
    return "\n".join(out)
