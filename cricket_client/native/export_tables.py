"""The CUDA runtime's private driver tables (`cuGetExportTable`): every table and slot the native
library hands out, declared once (pure data and C text; no compiler, no cffi).

The CUDA runtime (static or shared: `cuda.bindings.runtime`, CuPy, PyTorch, nvcc-built
programs) asks the driver for undocumented tables of function pointers by a 16-byte id. What a
slot means is known only from public reverse-engineering notes and from what the runtime
passes; each slot below says where its meaning comes from (`source`) and is implemented only
where that meaning is a call the client already remotes (`implementation`: the name of a
function of cricket_client.native.export_slots). Every other slot answers
CUDA_ERROR_NOT_SUPPORTED naming its table and slot (never pretends, never crashes): its C
trampoline takes six integer arguments, enough to record what the runtime passed.

Most tables begin with their own size in bytes (slot 0); the context-local storage table has
no size slot. A table id not declared here keeps the error that names it.

Sources: [Z] the ZLUDA project's public notes (github.com/vosen/ZLUDA, dark_api/src/lib.rs and
its implementation); [F] CUDA's public fatbinary headers (fatbinary_section.h: the
`__fatBinC_Wrapper_t` the runtime registers); [N] other public notes, named where used; [T]
traced here: what the CUDA 13.0 runtime
(nvcc 13.0, static and shared) called through the native library against a sim server, in
order, with its arguments (`CRICKET_NATIVE_TRACE=1`); [D] read from the real driver (580, the
H200's) by tests/gpu/test_export_table_sizes.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .context_storage import storage_get_line

__all__ = [
    "CDEF",
    "TABLES",
    "TRACED",
    "UNKNOWN_ARGS",
    "Slot",
    "Table",
    "c_source",
    "table_by_id",
]

UNKNOWN_ARGS = 6  # integer registers of the x86-64 and aarch64 calling conventions (6 and 8)


@dataclass(frozen=True)
class Slot:
    """One function pointer of a table. `params`: its C parameters ("" for none; None where
    the signature is not known: six integers are recorded). `implementation`: the function of
    export_slots.py that serves it, or None (answers CUDA_ERROR_NOT_SUPPORTED naming it)."""

    index: int
    name: str
    returns: str = "CUresult"
    params: str | None = None
    implementation: str | None = None
    source: str = ""
    quiet: bool = False  # refused without a warning: callers known to go on whatever it answers


@dataclass(frozen=True)
class Table:
    """A private table: its id (the 16 bytes as the runtime passes them, in hex), name, length
    in pointers, whether slot 0 holds the size in bytes, and its declared slots (the others
    are unknown and refuse)."""

    uuid: str
    name: str
    length: int
    sized: bool
    slots: tuple[Slot, ...]
    source: str = ""

    @property
    def guid(self) -> str:
        """The id as the notes write it: {6BD5FB6C-5BF4-E74A-8987-D93912FD9DF9}."""
        u = self.uuid.upper()
        return f"{{{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}}}"

    def slot(self, index: int) -> Slot:
        """The declared slot `index`, or an unknown one."""
        for slot in self.slots:
            if slot.index == index:
                return slot
        return Slot(index, "unknown")

    def all_slots(self) -> list[Slot]:
        """Every function slot of the table, declared or unknown (slot 0 excluded when it
        holds the size)."""
        return [self.slot(i) for i in range(1 if self.sized else 0, self.length)]


_Z = "[Z] ZLUDA dark_api"

TABLES: tuple[Table, ...] = (
    Table(
        "6bd5fb6c5bf4e74a8987d93912fd9df9",
        "CUDART_INTERFACE",
        13,
        True,
        (
            Slot(
                1, "get_module_from_cubin", "CUresult", "CUmodule *module, const void *fatbinc_wrapper",
                "module_from_wrapper",
                f"{_Z}: loads a module from a __fatBinC_Wrapper_t; [F] the wrapper's layout",
            ),
            Slot(
                2, "primary_context", "CUresult", "CUcontext *pctx, CUdevice dev",
                "primary_context",
                f"{_Z}: the device's primary context (cuDevicePrimaryCtxRetain); [T] called by "
                "12.4 and 13.0 right after cuDeviceGet(0), with a valid pointer and device 0",
            ),
            Slot(
                6, "get_module_from_cubin_ext1", "CUresult",
                "CUmodule *module, const void *fatbinc_wrapper, void *arg3, void *arg4, unsigned int arg5",
                "module_from_wrapper_ext1",
                f"{_Z}: slot 1 with three more arguments, seen NULL/0 (anything else refused)",
            ),
            Slot(7, "unknown_7", "CUresult", "size_t arg1", None, f"{_Z}: one integer, meaning unknown"),
            Slot(
                8, "get_module_from_cubin_ext2", "CUresult",
                "const void *fatbin_header, CUmodule *module, void *arg3, void *arg4, unsigned int arg5",
                "module_from_fatbin_ext2",
                f"{_Z}: a module from the fatbin itself (not its wrapper), three more "
                "arguments seen NULL/0 (anything else refused)",
            ),
        ),
        f"{_Z} (10 pointers; later notes 13, slot 12 'load compilers')",
    ),
    Table(
        "42d85a8123f6cb478298f6e78a3aecdc",
        "TOOLS_TLS",
        3,
        True,
        (
            Slot(2, "thread_context", "CUresult", "CUcontext *ctx, unsigned int id",
                 "thread_context",
                 "[N] public notes of other re-implementations: 'get thread context'; [D] the "
                 "real driver (580) writes the calling thread's current context to *ctx and "
                 "answers 0, whatever the other arguments; [T] cuBLASLt 13 asks before a GEMM, "
                 "then passes the context to RUNTIME_13_4 slot 4, and answers "
                 "CUBLAS_STATUS_NOT_SUPPORTED without it"),
        ),
        f"{_Z}: no slot known; [D] 3 pointers on driver 580",
    ),
    Table(
        "a094798c2e742e7493f20800200c0a66",
        "TOOLS_RUNTIME_CALLBACK_HOOKS",
        7,
        True,
        (
            Slot(2, "callback_buffer_1", "void", "void **ptr, size_t *size", "callback_area_1",
                 f"{_Z}: hands out a driver-owned buffer and its size (tool callbacks; zeros = "
                 "none); [T] called by 12.4 and 13.0, which go on with 1024"),
            Slot(6, "callback_buffer_2", "void", "void **ptr, size_t *size", "callback_area_2",
                 f"{_Z}: as slot 2, a second buffer; [T] called right after slot 2, size 14 taken"),
        ),
        f"{_Z}",
    ),
    Table(
        "c693336e1121df11a8c368f355d89593",
        "CONTEXT_LOCAL_STORAGE_INTERFACE_V0301",
        4,
        False,
        (
            Slot(
                0, "put", "CUresult",
                "CUcontext ctx, void *key, void *value, void *destructor",
                "cls_put",
                f"{_Z}: stores value under (context, key); NULL context = the current one; "
                "destructor(ctx, key, value) runs when the context goes",
            ),
            Slot(1, "delete", "CUresult", "CUcontext ctx, void *key", "cls_delete",
                 f"{_Z}: removes (context, key)"),
            Slot(
                2, "get", "CUresult", "void **value, CUcontext ctx, void *key", "cls_get",
                f"{_Z}: the value under (context, key); CUDA_ERROR_INVALID_HANDLE when none",
            ),
        ),
        f"{_Z}: no size slot",
    ),
    Table(
        "0ca50b8c1004929a89a7d0df10e77286",
        "CTX_CREATE_BYPASS",
        2,
        True,
        (Slot(1, "ctx_create_v2_bypass", "CUresult", "CUcontext *pctx, unsigned int flags, CUdevice dev",
              None, f"{_Z}: cuCtxCreate_v2's arguments; what it bypasses is unknown"),),
        f"{_Z}",
    ),
    Table(
        "d4082055bde6704b8d34ba123c66e1f2",
        "INTEGRITY_CHECK",
        3,
        True,
        (Slot(1, "integrity_check", "CUresult", "unsigned int version, unsigned long long unix_seconds, unsigned long long *result",
              "integrity_check", f"{_Z}: a 16-byte HMAC-MD2 over the process and thread ids, "
              "the driver's own table addresses, its version and the devices (UUID, PCI "
              "domain, bus, device), fixed answers for versions ending in 0 and 1, by which "
              "the runtime checks that the driver is NVIDIA's (cricket_client.native.integrity); "
              "[T] 12.4 and 13.0 call it (version 12040 / 13000, the time, a result pointer) "
              "before any device call and stop when it fails; a success without the hash gives "
              "cudaErrorIntegrityCheckFailed after versions +1 and +2. Not forwarded: the hash "
              "covers the client's process"),),
        f"{_Z}",
    ),
    Table(
        "21318c60971432488ca641ff7324c8f2",
        "RUNTIME_13_4",
        93,
        True,
        (
            Slot(4, "context_number", "CUresult", "CUcontext ctx, unsigned long long *number",
                 "context_number",
                 "[N] public notes of other re-implementations: the tools' context table, slot 4 "
                 "'get context number'; [D] the real driver (580) writes the context's id "
                 "(cuCtxGetId's answer, 1 for CuPy's first context) and answers 0; [T] cuBLASLt "
                 "13 asks with TOOLS_TLS slot 2's context before a GEMM"),
            Slot(39, "stream_object_id", "CUresult",
                 "CUcontext ctx, void *object, unsigned long long *id", "stream_object_id",
                 "[D] the real driver (580) writes the id of slot 51's object's stream "
                 "(cuStreamGetId's answer: 7 for the legacy stream of the first context, 14.. "
                 "for created streams) and answers 0; [T] cuBLASLt 13 asks it right after slot 51"),
            Slot(51, "stream_object", "CUresult", "CUcontext ctx, CUstream stream, void **object",
                 "stream_object",
                 "[D] the real driver (580) writes its object of the stream (the same pointer "
                 "for the same stream; the context given for a default stream, 0/1/2; a "
                 "created stream's own context otherwise; CUDA_ERROR_INVALID_HANDLE for a "
                 "default stream of a NULL context); its words 0, 2, 10: 1, the context, the "
                 "handle; [T] cuBLASLt 13 asks it for CuPy's stream 0 before a GEMM"),
        ),
        "[N] a public note of another driver re-implementation: asked for by CUDA 13.4 "
        "runtimes, 95 pointers (94 slots) on driver 595, none called through device, memory, "
        "copy, stream and event calls; [D] 93 pointers on driver 580; [T] cuda-bindings 13.5's static runtime asks for it "
        "right after TOOLS_TLS and stops (cudaErrorNotSupported) without it",
    ),
    Table(
        "263e88607cd2614392f6bbd5006dfa7e",
        "UNKNOWN_CHECKS",
        15,
        True,
        (
            Slot(2, "context_check", "CUresult", "CUcontext ctx, unsigned int *wrapped, const void **unwrapped",
                 "context_not_wrapped", f"{_Z}: whether `ctx` (the current one when NULL) wraps "
                 "another context (then written to *unwrapped), a flag no public context "
                 "creation sets: *wrapped = 0 for every context; [T] the 13.0 runtime asks "
                 "at its first allocation (cudaMalloc) and stops without it"),
            Slot(3, "check_fn3", "unsigned int", "", None,
                 f"{_Z}: returns an integer, seen 0; [T] called by 12.4 and 13.0 before the "
                 "integrity check, which they ask for whatever it answers (801 here); every "
                 "runtime program calls it once, so its refusal is logged at debug level",
                 quiet=True),
        ),
        f"{_Z}",
    ),
    Table(
        "6e163fbeb958444d835ce182aff1991e",
        "TOOLS_MODULE",
        99,
        True,
        (
            Slot(7, "module_functions", "unsigned int",
                 "CUcontext ctx, CUmodule module, void *callback, void *user, uintptr_t arg4, uintptr_t arg5",
                 "module_functions",
                 "[D] on the real driver (580) under a local CuPy FFT cuFFT calls it once with the "
                 "current context, an object of that context (its word 3 the context: a "
                 "module), a function of cuFFT that stores its second argument at its first "
                 "(`mov [rdi], rsi; ret`), the address it stores into, the module again and "
                 "a pointer; it answers 1 and the callback stores a function object; [N] "
                 "another remoting project's notes read it as calling the callback with each "
                 "function of the module; served so: the module's functions "
                 "(cuModuleEnumerateFunctions), `callback(user, function, module)` for each, "
                 "their number answered"),
        ),
        "[N] a public list of the driver's tool interfaces names it CU_ETID_ToolsModule; [D] 99 "
        "pointers on driver 580; [T] cuFFT 12 asks for it when it makes a plan",
    ),
)


def table_by_id(uuid: bytes) -> tuple[int, Table] | None:
    """(index, table) of the table with this 16-byte id, or None."""
    text = uuid.hex()
    for index, table in enumerate(TABLES):
        if table.uuid == text:
            return index, table
    return None


# -- C ------------------------------------------------------------------------------------------

# One Python function serves every slot: (table index, slot index, the arguments as integers).
CDEF = """
extern "Python" uintptr_t py_export_slot(int, int, uintptr_t *, int);
uintptr_t cricket_export_table(int index);
"""


def _params(params: str) -> list[tuple[str, str]]:
    out = []
    for param in filter(None, (p.strip() for p in params.split(","))):
        match = re.fullmatch(r"(.+?)\s*(\w+)", param)
        assert match is not None, param
        out.append((match.group(1).strip(), match.group(2)))
    return out


_SIGNED = {"int", "CUdevice", "CUresult"}


def _as_integer(ctype: str, name: str) -> str:
    """The argument as uintptr_t (signed integers sign-extended; Python reads them by type)."""
    if ctype in _SIGNED:
        return f"(uintptr_t)(intptr_t){name}"
    return f"(uintptr_t){name}"


def _trampoline(t: int, slot: Slot) -> list[str]:
    fn = f"cricket_xt_{t}_{slot.index}"
    if slot.params is None:
        params = [("uintptr_t", f"a{i}") for i in range(UNKNOWN_ARGS)]
        returns = "uintptr_t"
    else:
        params = _params(slot.params)
        returns = slot.returns
    decl = ", ".join(f"{c} {n}" for c, n in params) or "void"
    args = ", ".join(_as_integer(c, n) for c, n in params)
    lines = [f"static {returns} {fn}({decl}) {{"]
    lines.append(f"    uintptr_t a[{max(len(params), 1)}] = {{{args or '0'}}};")
    call = f"cricket_export_call({t}, {slot.index}, a, {len(params)})"
    lines.append(f"    {call};" if returns == "void" else f"    return ({returns}){call};")
    lines.append("}")
    return lines


def _storage_get() -> tuple[int, int]:
    """(table index, slot) of the context-local storage's get."""
    for t, table in enumerate(TABLES):
        for slot in table.slots:
            if slot.implementation == "cls_get":
                return t, slot.index
    raise LookupError("no context-local storage get declared")


def c_source() -> str:
    """The trampolines and tables (C, after the library's own definitions: CUresult and the
    handle types, CRICKET_ENTER/CRICKET_LEAVE)."""
    out = [
        "static uintptr_t py_export_slot(int, int, uintptr_t *, int);",
        "static uintptr_t cricket_export_call(int t, int s, uintptr_t *a, int n) {",
        storage_get_line(*_storage_get()),
        "    CRICKET_ENTER uintptr_t r = py_export_slot(t, s, a, n); CRICKET_LEAVE(r)",
        "}",
    ]
    for t, table in enumerate(TABLES):
        for slot in table.all_slots():
            out += _trampoline(t, slot)
        entries = [f"(void *)(uintptr_t)(sizeof(void *) * {table.length})"] if table.sized else []
        entries += [f"(void *)cricket_xt_{t}_{s.index}" for s in table.all_slots()]
        out.append(f"static void *const cricket_xt_{t}[{table.length}] = {{")
        out += [f"    {e}," for e in entries]
        out.append("};")
    out.append("static void *const *const cricket_xt_tables[] = {")
    out += [f"    cricket_xt_{t}," for t in range(len(TABLES))]
    out.append("};")
    out.append(
        "static uintptr_t cricket_export_table(int index) {\n"
        f"    return index >= 0 && index < {len(TABLES)} ? (uintptr_t)cricket_xt_tables[index] : 0;\n"
        "}"
    )
    return "\n".join(out)


# [T] The slots the CUDA runtime (13.0 static and shared) called through a whole program
# (tests/integration/native_runtime_program.cu: cudaGetDeviceCount, cudaMalloc, cudaMemcpy, a
# <<<>>> launch), each at its first call, in order.
TRACED: tuple[tuple[str, int], ...] = (
    ("CUDART_INTERFACE", 2),
    ("TOOLS_RUNTIME_CALLBACK_HOOKS", 2),
    ("TOOLS_RUNTIME_CALLBACK_HOOKS", 6),
    ("UNKNOWN_CHECKS", 3),
    ("INTEGRITY_CHECK", 1),
    ("CONTEXT_LOCAL_STORAGE_INTERFACE_V0301", 2),
    ("UNKNOWN_CHECKS", 2),
    ("CONTEXT_LOCAL_STORAGE_INTERFACE_V0301", 0),
    ("CONTEXT_LOCAL_STORAGE_INTERFACE_V0301", 1),
)
