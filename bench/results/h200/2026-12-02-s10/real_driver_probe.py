"""Log what the real driver's TOOLS_TLS and RUNTIME_13_4 slots receive, write and answer,
while CuPy multiplies matrices locally (no Cricket)."""
import ctypes, os, sys

cu = ctypes.CDLL("libcuda.so.1")
libc = ctypes.CDLL(None)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
cu.cuInit(0)
get = cu.cuGetExportTable
get.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
MEM = os.open("/proc/self/mem", os.O_RDONLY)

def table(hexid):
    out = ctypes.c_void_p()
    r = get(ctypes.byref(out), bytes.fromhex(hexid))
    return r, out.value

def peek(addr, n):
    if addr < 0x10000 or addr > 0x7fffffffffff:
        return "-"
    try:
        return os.pread(MEM, n, addr).hex()
    except OSError:
        return "unmapped"

F6 = ctypes.CFUNCTYPE(ctypes.c_uint64, *[ctypes.c_uint64] * 6)
keep = []
counts = {}

def hook(hexid, name, slot):
    r, t = table(hexid)
    words = ctypes.cast(t, ctypes.POINTER(ctypes.c_uint64))
    real = F6(words[slot])

    def wrapper(*args):
        before = [peek(a, 48) for a in args]
        r = real(*args)
        key = (name, slot)
        counts[key] = counts.get(key, 0) + 1
        if counts[key] <= 6:
            print(f"{name}[{slot}] #{counts[key]} ({', '.join(hex(a) for a in args)}) -> {r:#x}", file=sys.stderr)
            for i, a in enumerate(args):
                after = peek(a, 48)
                if before[i] not in ("-",):
                    print(f"   arg{i} {before[i]}\n        {after}" if after != before[i] else f"   arg{i} {before[i]} (same)", file=sys.stderr)
            cur = ctypes.c_void_p(); cu.cuCtxGetCurrent(ctypes.byref(cur))
            cid = ctypes.c_uint64(); cu.cuCtxGetId(cur, ctypes.byref(cid))
            dev = ctypes.c_int(-1); cu.cuCtxGetDevice(ctypes.byref(dev))
            print(f"   current ctx {cur.value or 0:#x} id {cid.value} device {dev.value}", file=sys.stderr)
            if name == "TOOLS_TLS" and slot == 2 and args[0] > 0x10000:
                state = int.from_bytes(bytes.fromhex(peek(args[0], 8)), "little")
                print(f"   state {state:#x}: {peek(state, 128)}", file=sys.stderr)
        return r

    cb = F6(wrapper)
    keep.append((cb, real))
    page = (t + slot * 8) & ~4095
    assert libc.mprotect(page, 8192, 3) == 0
    words[slot] = ctypes.cast(cb, ctypes.c_void_p).value

TLS, RT = "42d85a8123f6cb478298f6e78a3aecdc", "21318c6097143248 8ca641ff7324c8f2".replace(" ", "")
hook(TLS, "TOOLS_TLS", 1); hook(TLS, "TOOLS_TLS", 2)
r, t = table(RT)
n = ctypes.cast(t, ctypes.POINTER(ctypes.c_uint64))[0] // 8
print("RUNTIME_13_4 pointers", n, file=sys.stderr)
for s in (range(1, n) if os.environ.get("HOOK_ALL") else (3, 4, 16, 39, 51)):
    hook(RT, "RUNTIME_13_4", s)
import cupy as cp
a = cp.ones((64, 64), dtype=cp.float32)
print("matmul", float((a @ a).sum()), file=sys.stderr)
import numpy as np
b = cp.asarray(np.random.default_rng(1).standard_normal((96, 64), dtype=np.float32))
print("matmul2", float((b @ b.T).sum()), file=sys.stderr)
print({f"{k[0]}[{k[1]}]": v for k, v in counts.items()}, file=sys.stderr)
