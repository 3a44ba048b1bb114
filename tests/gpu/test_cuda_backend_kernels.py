"""The `cuda` backend on a real GPU: modules, libraries, globals, parameter layouts, launches,
function attributes and occupancy."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import pytest
from cuda.bindings import driver

from cricket_server.backends.base import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_FOUND,
    CUDA_ERROR_NOT_SUPPORTED,
    BackendSession,
    CudaError,
    ParamInfo,
)

if TYPE_CHECKING:
    from conftest import ChunkMapper

pytestmark = pytest.mark.gpu

N = 1000
FA = driver.CUfunction_attribute
JIT = driver.CUjit_option


def floats(session: BackendSession, addr: int, n: int) -> list[float]:
    return list(struct.unpack(f"<{n}f", bytes(session.memcpy_dtoh(addr, 4 * n, None))))


def put_floats(session: BackendSession, addr: int, values: list[float]) -> None:
    session.memcpy_htod(addr, memoryview(struct.pack(f"<{len(values)}f", *values)), None)


def add_one_args(session: BackendSession, func: object, ptr: int, n: int) -> memoryview:
    layout = session.func_param_info(func)
    buf = bytearray(max(p.offset + p.size for p in layout))
    struct.pack_into("<Q", buf, layout[0].offset, ptr)
    struct.pack_into("<i", buf, layout[1].offset, n)
    return memoryview(buf)


@pytest.fixture(params=["ptx", "cubin"])
def module(
    request: pytest.FixtureRequest, session: BackendSession, ptx_image: bytes, cubin_image: bytes
) -> object:
    image = ptx_image if request.param == "ptx" else cubin_image
    options = {int(JIT.CU_JIT_OPTIMIZATION_LEVEL): 3} if request.param == "ptx" else {}
    return session.module_load(image, options)


def test_param_info_gives_device_layout(session: BackendSession, module: object) -> None:
    axpy = session.module_get_function(module, "axpy_pair")
    # double*, const float*, float, struct {int; double;}, char, int
    assert list(session.func_param_info(axpy)) == [
        ParamInfo(0, 8),
        ParamInfo(8, 8),
        ParamInfo(16, 4),
        ParamInfo(24, 16),
        ParamInfo(40, 1),
        ParamInfo(44, 4),
    ]
    assert list(session.func_param_info(session.module_get_function(module, "no_args"))) == []


def test_launch_with_packed_arguments(
    session: BackendSession, chunks: ChunkMapper, module: object
) -> None:
    base = chunks.map(session, 16 * N)
    src, out = base, base + 4 * N + 256
    put_floats(session, src, [float(i) for i in range(N)])
    axpy = session.module_get_function(module, "axpy_pair")
    args = bytearray(48)
    struct.pack_into("<QQf", args, 0, out, src, 2.0)
    struct.pack_into("<i4xd", args, 24, 3, 0.5)  # Pair{a=3, b=0.5}: b at offset 8
    struct.pack_into("<b", args, 40, -2)
    struct.pack_into("<i", args, 44, N)
    session.launch(axpy, ((N + 127) // 128, 1, 1), (128, 1, 1), 0, None, memoryview(args))
    got = struct.unpack(f"<{N}d", bytes(session.memcpy_dtoh(out, 8 * N, None)))
    assert list(got) == [2.0 * i + 1.5 for i in range(N)]


def test_launch_on_streams_and_cooperatively(
    session: BackendSession, chunks: ChunkMapper, module: object
) -> None:
    ptr = chunks.map(session, 4 * N)
    put_floats(session, ptr, [0.0] * N)
    add_one = session.module_get_function(module, "add_one")
    args = add_one_args(session, add_one, ptr, N)
    stream = session.stream_create(int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING), 0)
    grid, block = ((N + 255) // 256, 1, 1), (256, 1, 1)
    for s in (None, "per-thread", stream):
        session.launch(add_one, grid, block, 0, s, args)
        session.stream_synchronize(s)
    session.launch(add_one, grid, block, 0, stream, args, cooperative=True)
    session.synchronize()
    assert floats(session, ptr, N) == [4.0] * N


def test_launch_with_a_short_argument_buffer_names_the_function(
    session: BackendSession, module: object
) -> None:
    add_one = session.module_get_function(module, "add_one")
    with pytest.raises(CudaError) as exc:
        session.launch(add_one, (1, 1, 1), (1, 1, 1), 0, None, memoryview(bytes(8)))
    assert exc.value.code == CUDA_ERROR_INVALID_VALUE
    assert "has 2 parameters in 12 bytes, got 8 bytes" in exc.value.message
    no_args = session.module_get_function(module, "no_args")
    session.launch(no_args, (1, 1, 1), (1, 1, 1), 0, None, memoryview(b""))
    session.synchronize()


def test_global_variable_address_and_size(session: BackendSession, module: object) -> None:
    counter = session.module_get_global(module, "counter")
    assert counter.size == 4
    assert struct.unpack("<i", bytes(session.memcpy_dtoh(counter.address, 4, None))) == (42,)
    bump = session.module_get_function(module, "bump")
    session.launch(bump, (2, 1, 1), (32, 1, 1), 0, None, memoryview(struct.pack("<i", 5)))
    session.synchronize()
    assert struct.unpack("<i", bytes(session.memcpy_dtoh(counter.address, 4, None))) == (362,)


def test_unknown_names_and_bad_images(session: BackendSession, module: object) -> None:
    with pytest.raises(CudaError) as no_func:
        session.module_get_function(module, "no_such_kernel")
    assert no_func.value.code == CUDA_ERROR_NOT_FOUND
    assert "no_such_kernel" in no_func.value.message
    with pytest.raises(CudaError) as no_global:
        session.module_get_global(module, "no_such_global")
    assert no_global.value.code == CUDA_ERROR_NOT_FOUND
    with pytest.raises(CudaError) as garbage:
        session.module_load(b"\x7fELF this is not a cubin", {})
    assert garbage.value.code != 0


def test_ptx_error_log_is_in_the_message(session: BackendSession) -> None:
    bad_ptx = b".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n"
    with pytest.raises(CudaError) as exc:
        session.module_load(bad_ptx, {})
    assert "cuModuleLoadDataEx" in exc.value.message
    assert "'bogus'" in exc.value.message  # from the JIT's error log


def test_pointer_valued_jit_options_are_not_supported(
    session: BackendSession, ptx_image: bytes
) -> None:
    with pytest.raises(CudaError) as exc:
        session.module_load(ptx_image, {int(JIT.CU_JIT_GLOBAL_SYMBOL_NAMES): 0})
    assert exc.value.code == CUDA_ERROR_NOT_SUPPORTED
    assert "CU_JIT_GLOBAL_SYMBOL_NAMES" in exc.value.message


def test_module_unload_then_reload(session: BackendSession, ptx_image: bytes) -> None:
    first = session.module_load(ptx_image, {})
    session.module_unload(first)
    second = session.module_load(ptx_image, {})
    assert len(session.func_param_info(session.module_get_function(second, "add_one"))) == 2


def test_library_kernel_launch(
    session: BackendSession, chunks: ChunkMapper, ptx_image: bytes
) -> None:
    library = session.library_load(ptx_image, {})
    kernel = session.library_get_kernel(library, "add_one")
    func = session.kernel_get_function(kernel)
    ptr = chunks.map(session, 4 * N)
    put_floats(session, ptr, [1.5] * N)
    session.launch(func, (4, 1, 1), (256, 1, 1), 0, None, add_one_args(session, func, ptr, N))
    session.synchronize()
    assert floats(session, ptr, N) == [2.5] * N
    with pytest.raises(CudaError) as exc:
        session.library_get_kernel(library, "missing")
    assert exc.value.code == CUDA_ERROR_NOT_FOUND
    session.library_unload(library)


def test_function_attributes_and_cache_config(session: BackendSession, module: object) -> None:
    func = session.module_get_function(module, "add_one")
    assert session.func_get_attribute(int(FA.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), func) >= 256
    assert session.func_get_attribute(int(FA.CU_FUNC_ATTRIBUTE_NUM_REGS), func) > 0
    dyn = int(FA.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    session.func_set_attribute(func, dyn, 64 * 1024)
    assert session.func_get_attribute(dyn, func) == 64 * 1024
    session.func_set_cache_config(func, int(driver.CUfunc_cache.CU_FUNC_CACHE_PREFER_L1))
    with pytest.raises(CudaError) as exc:
        session.func_get_attribute(12345, func)
    assert exc.value.code == CUDA_ERROR_INVALID_VALUE


def test_occupancy(session: BackendSession, module: object) -> None:
    func = session.module_get_function(module, "add_one")
    assert session.occupancy_max_active_blocks(func, 256, 0, 0) >= 1
    min_grid, block = session.occupancy_max_potential_block_size(func, 0, 0, 0)
    assert min_grid >= 1 and 32 <= block <= 1024
    _, limited = session.occupancy_max_potential_block_size(func, 0, 128, 0)
    assert limited <= 128


def test_context_limits_and_priorities(session: BackendSession) -> None:
    stack = int(driver.CUlimit.CU_LIMIT_STACK_SIZE)
    session.set_limit(stack, 4096)
    assert session.get_limit(stack) >= 4096
    least, greatest = session.stream_priority_range()
    assert greatest <= least
    session.stream_create(0, greatest)
    with pytest.raises(CudaError):
        session.get_limit(999)
