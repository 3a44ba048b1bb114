"""A small in-memory cricket-server for the client's unit tests (no backend, no session layer).

It serves a few procedures the way the real server's contract says (CUresult in the reply,
device pointers in [VA_BASE, VA_BASE + VA_SIZE)) and records what the client sent, so the
tests can check the client's packing, pipelining and host-buffer handling in isolation.
"""

from __future__ import annotations

import threading
from typing import Any

from cricket_xdr.rpc.server import RpcServer
from rpc_spec import cricket_rpc as p

VA_BASE = 0x7F00_0000_0000
VA_SIZE = 1 << 36
SAXPY = 0x10  # function handle: (float a, float *x, float *y, int n)
FAULTY = 0x99  # function handle whose launches fail with CUDA_ERROR_ILLEGAL_ADDRESS
INVALID_VALUE, INVALID_HANDLE, ILLEGAL_ADDRESS = 1, 400, 700


class FakeCricket(p.CRICKET_V1_Server):
    def __init__(self) -> None:
        self.memory: dict[int, bytearray] = {}
        self.next_addr = VA_BASE + 0x1000
        self.launches: list[p.launch_args] = []
        self.batches: list[int] = []  # launches per CU_LAUNCH_KERNEL_BATCH call
        self.loads: list[tuple[bytes, list[Any]]] = []
        self.param_info_calls = 0
        self.message = ""
        self.lock = threading.Lock()

    def _find(self, addr: int, size: int) -> tuple[bytearray, int] | None:
        for base, buf in self.memory.items():
            if base <= addr and addr + size <= base + len(buf):
                return buf, addr - base
        return None

    def HELLO(self, ctx: Any, args: p.hello_args) -> p.hello_result:
        ok = p.hello_ok(
            protocol_version=1,
            server_version="fake",
            backend="fake",
            driver_version=13000,
            runtime_version=13000,
            session_id=7,
            session_token=b"t" * 16,
            va_base=VA_BASE,
            va_size=VA_SIZE,
        )
        return p.hello_result(0, ok)

    def GOODBYE(self, ctx: Any) -> int:
        return 0

    def GET_ERROR_MESSAGE(self, ctx: Any) -> str:
        return self.message

    def CU_INIT(self, ctx: Any, flags: int) -> int:
        return 0

    def CU_DEVICE_GET_NAME(self, ctx: Any, dev: int) -> p.str_result:
        return p.str_result(0, "Fake GPU") if dev == 0 else p.str_result(101)

    def CU_MEM_ALLOC(self, ctx: Any, size: int) -> p.ptr_result:
        if size == 0 or size > 1 << 30:
            return p.ptr_result(2 if size else INVALID_VALUE)
        addr = self.next_addr
        self.memory[addr] = bytearray(size)
        self.next_addr += (size + 0xFFF) & ~0xFFF
        return p.ptr_result(0, addr)

    def CU_MEM_FREE(self, ctx: Any, ptr: int) -> int:
        if ptr not in self.memory:
            self.message = f"cuMemFree: {ptr:#x} is not an allocation"
            return INVALID_VALUE
        del self.memory[ptr]
        return 0

    def CU_MEMCPY_HTOD(self, ctx: Any, dst: int, data: bytes) -> int:
        found = self._find(dst, len(data))
        if found is None:
            return INVALID_VALUE
        buf, off = found
        buf[off : off + len(data)] = data
        return 0

    def CU_MEMCPY_HTOD_ASYNC(self, ctx: Any, dst: int, data: bytes, stream: int) -> int:
        return self.CU_MEMCPY_HTOD(ctx, dst, data)

    def CU_MEMCPY_DTOH(self, ctx: Any, src: int, size: int) -> p.mem_result:
        found = self._find(src, size)
        if found is None:
            return p.mem_result(INVALID_VALUE)
        buf, off = found
        return p.mem_result(0, bytes(buf[off : off + size]))

    def CU_MEMCPY_DTOH_ASYNC(self, ctx: Any, src: int, size: int, stream: int) -> p.mem_result:
        return self.CU_MEMCPY_DTOH(ctx, src, size)

    def CU_MEMCPY_DTOD(self, ctx: Any, dst: int, src: int, size: int) -> int:
        got = self.CU_MEMCPY_DTOH(ctx, src, size)
        return got.err or self.CU_MEMCPY_HTOD(ctx, dst, got.value)

    def CU_MEMSET(self, ctx: Any, dst: int, value: int, width: int, count: int) -> int:
        return self.CU_MEMCPY_HTOD(ctx, dst, value.to_bytes(width, "little") * count)

    def CU_MEMSET_ASYNC(self, ctx: Any, dst: int, value: int, width: int, count: int, s: int) -> int:
        return self.CU_MEMSET(ctx, dst, value, width, count)

    def CU_CTX_SYNCHRONIZE(self, ctx: Any) -> int:
        return 0

    def CU_FUNC_GET_PARAM_INFO(self, ctx: Any, func: int) -> p.param_info_result:
        self.param_info_calls += 1
        if func in (SAXPY, FAULTY):
            layout = [p.param_info(0, 4), p.param_info(8, 8), p.param_info(16, 8), p.param_info(24, 4)]
            return p.param_info_result(0, layout)
        return p.param_info_result(INVALID_HANDLE)

    def CU_LAUNCH_KERNEL(self, ctx: Any, args: p.launch_args) -> int:
        self.launches.append(args)
        if args.function == FAULTY:
            self.message = "cuLaunchKernel: illegal address"
            return ILLEGAL_ADDRESS
        return 0

    def CU_LAUNCH_KERNEL_BATCH(self, ctx: Any, launches: list[p.launch_args]) -> int:
        self.batches.append(len(launches))
        codes = [self.CU_LAUNCH_KERNEL(ctx, args) for args in launches]
        return next((c for c in codes if c), 0)

    def CU_MODULE_LOAD_DATA(self, ctx: Any, image: bytes, options: list[Any]) -> p.module_load_result:
        self.loads.append((bytes(image), list(options)))
        if not bytes(image).startswith((b"\x7fELF", b"//")):
            return p.module_load_result(200, "error: not an image")
        return p.module_load_result(0, p.module_loaded(handle=5, info_log="info: 1 kernel", error_log=""))

    def CU_POINTER_GET_ATTRIBUTES(self, ctx: Any, attrs: list[int], ptr: int) -> p.pointer_attributes_result:
        found = self._find(ptr, 1)
        if found is None:
            return p.pointer_attributes_result(INVALID_VALUE)
        values = []
        for a in attrs:
            if a == 2:  # MEMORY_TYPE
                values.append(p.pointer_attribute_value(a, 0, 2))
            elif a == 11:  # RANGE_START_ADDR
                values.append(p.pointer_attribute_value(a, 0, ptr - found[1]))
            else:
                values.append(p.pointer_attribute_value(a, INVALID_VALUE, 0))
        return p.pointer_attributes_result(0, values)


class FakeServer:
    """FakeCricket served on a loopback port in a background thread."""

    def __init__(self, service: FakeCricket | None = None) -> None:
        self.service = service or FakeCricket()
        self.rpc = RpcServer([self.service])
        host, port = self.rpc.listen_tcp("127.0.0.1", 0)
        self.address = f"{host}:{port}"
        self.rpc.start()

    def stop(self) -> None:
        self.rpc.shutdown()


def goodbye_counter(service: FakeCricket) -> list[int]:
    """Make GOODBYE count its calls into the returned list."""
    calls: list[int] = []

    def goodbye(ctx: Any) -> int:
        calls.append(1)
        return 0

    service.GOODBYE = goodbye  # type: ignore[method-assign]
    return calls
