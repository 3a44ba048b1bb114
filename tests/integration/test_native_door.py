"""The native door: programs that call the CUDA driver library (`libcuda.so.1`) run unmodified
under `cricket-run -- COMMAND`, their calls served by a server (sim here; any backend)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import LIMIT, ROOT, Server, running_server

from cricket_client.native import library_path
from cricket_client.native.runtime_swap import STARTUP_DIR

HERE = Path(__file__).resolve().parent
CUBIN = ROOT / "tests" / "kernels" / "test_kernels.sm_90.cubin"
PROGRAM = HERE / "native_driver_program.py"
RUN_LIMIT = 4 * LIMIT  # a whole program on a busy machine


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    library_path()  # built once, before any program needs it
    with running_server(tmp_path_factory.mktemp("native")) as srv:
        yield srv


def cricket_run(server: Server, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cricket_client.run", "--server", server.address, *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=RUN_LIMIT, cwd=ROOT,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_a_driver_program_runs_the_same_through_the_native_library_and_the_python_modules(
    server: Server,
) -> None:
    native = cricket_run(server, "--", sys.executable, str(PROGRAM), str(CUBIN))
    assert native.returncode == 0, native.stderr
    python = cricket_run(server, str(PROGRAM), str(CUBIN))
    assert python.returncode == 0, python.stderr
    assert native.stdout == python.stdout
    lines = native.stdout.splitlines()
    for expected in ("devices 1", "vector_add ok True 10.5", "saxpy ok True", "dtod ok True", "done"):
        assert expected in lines


def test_context_answers_given_in_c_are_the_clients_around_every_change(server: Server) -> None:
    """The native library answers cuCtxGetCurrent, cuCtxGetDevice and cuDevicePrimaryCtxGetState
    in C while the client's answers cannot have changed (known_context): the same answers as
    the Python client's."""
    program = str(HERE / "native_context_program.py")
    native = cricket_run(server, "--", sys.executable, program)
    assert native.returncode == 0, native.stderr
    python = cricket_run(server, program)
    assert python.returncode == 0, python.stderr
    assert native.stdout == python.stdout
    lines = native.stdout.splitlines()
    for expected in ("at start: current none, device CUDA_ERROR_INVALID_CONTEXT, primary flags 0 active 0",
                     "primary set: current primary, device 0, primary flags 0 active 1",
                     "primary set again: current primary, device 0, primary flags 0 active 1",
                     "after create: current created, device 0, primary flags 0 active 1",
                     "primary pushed: current primary, device 0, primary flags 0 active 1",
                     "popped: current created, device 0, primary flags 0 active 1",
                     "created destroyed: current primary, device 0, primary flags 0 active 1",
                     "primary flags set: current primary, device 0, primary flags 4 active 1",
                     "primary released: current primary, device CUDA_ERROR_INVALID_CONTEXT, primary flags 4 active 0",
                     "another thread sees primary True", "done"):  # fmt: skip
        assert expected in lines, native.stdout


def test_default_streams_not_capturing_are_answered_in_c_until_a_capture_begins(server: Server) -> None:
    """cuStreamIsCapturing and cuStreamGetCaptureInfo of a default stream (PyTorch and CuPy ask
    before each copy) are answered by the library in C once the client knows no capture of its
    own is under way; a capture's beginning sends the question again, and the answers are the
    driver's throughout."""
    script = textwrap.dedent(
        """
        import ctypes
        from ctypes import byref, c_int, c_void_p
        cuda = ctypes.CDLL("libcuda.so.1")
        dev, ctx, stream, graph, status = c_int(), c_void_p(), c_void_p(), c_void_p(), c_int(-1)
        assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(byref(dev), 0) == 0
        assert cuda.cuDevicePrimaryCtxRetain(byref(ctx), dev) == 0 and cuda.cuCtxSetCurrent(ctx) == 0
        assert cuda.cuCtxGetCurrent(byref(c_void_p())) == 0  # the client knows the context
        answers, infos = set(), set()
        for handle in [None, 1, 2] * 20:
            answers.add((cuda.cuStreamIsCapturing(c_void_p(handle), byref(status)), status.value))
            ident, g, deps, edges, n = ctypes.c_uint64(7), c_void_p(7), c_void_p(7), c_void_p(7), ctypes.c_size_t(7)
            err2 = cuda.cuStreamGetCaptureInfo_v2(c_void_p(handle), byref(status), byref(ident), byref(g), byref(deps), byref(n))
            infos.add((err2, status.value, ident.value, g.value, deps.value, n.value))
            err3 = cuda.cuStreamGetCaptureInfo_v3(c_void_p(handle), byref(status), byref(ident), byref(g), byref(deps), byref(edges), byref(n))
            infos.add((err3, status.value, ident.value, g.value, deps.value, edges.value, n.value))
        print("default streams", sorted(answers), sorted(infos, key=len))
        assert cuda.cuStreamCreate(byref(stream), 1) == 0  # non-blocking
        assert cuda.cuStreamBeginCapture_v2(stream, 2) == 0  # relaxed
        print("capturing", cuda.cuStreamIsCapturing(stream, byref(status)), status.value)
        print("legacy during", cuda.cuStreamIsCapturing(c_void_p(1), byref(status)), status.value)
        assert cuda.cuStreamEndCapture(stream, byref(graph)) == 0
        print("legacy after", cuda.cuStreamIsCapturing(c_void_p(1), byref(status)), status.value)
        """
    )
    done = cricket_run(server, "--", sys.executable, "-c", script, env={"CRICKET_NATIVE_TRACE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "default streams [(0, 0)] [(0, 0, 0, None, None, 0), (0, 0, 0, None, None, None, 0)]",
        "capturing 0 1",
        "legacy during 0 0",
        "legacy after 0 0",
    ]
    asked = [line for line in done.stderr.splitlines() if line.startswith("cuStreamIsCapturing ->")
             or line.startswith("cuStreamGetCaptureInfo")]
    # the first default-stream questions, the capture's three: not the other 177
    assert 1 <= len(asked) <= 8, done.stderr[-3000:]


def test_per_thread_default_stream_programs_get_the_per_thread_forms(server: Server) -> None:
    """cuda.bindings asks cuGetProcAddress for the per-thread default stream forms (`_ptsz`,
    `_ptds`) when told to; the program's results are the same."""
    env = {"CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM": "1", "CRICKET_NATIVE_TRACE": "1"}
    done = cricket_run(server, "--", sys.executable, str(PROGRAM), str(CUBIN), env=env)
    assert done.returncode == 0, done.stderr
    assert "cuGetProcAddress(cuLaunchKernel, 7000, 2) -> cuLaunchKernel_ptsz" in done.stderr
    assert "cuMemAlloc_v2 -> 0" in done.stderr.splitlines()  # the trace names each call's result
    assert "vector_add ok True 10.5" in done.stdout.splitlines()
    assert "done" in done.stdout.splitlines()


def test_the_native_library_never_loads_another_driver(server: Server) -> None:
    script = textwrap.dedent(
        """
        from cuda.bindings import driver as cuda
        cuda.cuInit(0)
        maps = open("/proc/self/maps").read()
        print(sorted({line.split()[-1] for line in maps.splitlines() if "libcuda" in line}))
        """
    )
    done = cricket_run(server, "--", sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr([str(library_path())])


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_a_c_program_with_kernels_threads_and_fork(server: Server, tmp_path: Path) -> None:
    """A C program (its own declarations, dlopen("libcuda.so.1")): kernelParams and `extra`
    launches, events, 8 pthreads x 200 calls, an unsupported function, and a forked child
    whose calls leave the parent's session intact. The interpreter the library starts finds
    the client (and cffi's backend) where it is installed, and leaves the program's
    PYTHONPATH as cricket-run gave it (the runtime's start-up folder first)."""
    binary = tmp_path / "native_threads"
    subprocess.run(
        ["gcc", "-O1", "-Wall", "-o", str(binary), str(HERE / "native_threads.c"), "-ldl", "-lpthread"],
        check=True, timeout=LIMIT,
    )  # fmt: skip
    done = cricket_run(server, "--", str(binary), str(CUBIN))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"PYTHONPATH {os.pathsep.join([str(STARTUP_DIR), *filter(None, [os.environ.get('PYTHONPATH')])])}",
        "kernelParams ok",
        "extra ok",
        "threads ok (200 calls each)",
        "unsupported 801",
        "child ok",
        "parent after fork ok",
    ]
    assert "cuGraphicsGLRegisterBuffer is not supported remotely" in done.stderr


def test_a_forked_python_child_gets_a_session_of_its_own(server: Server) -> None:
    script = textwrap.dedent(
        """
        import os
        from cuda.bindings import driver as cuda
        assert cuda.cuInit(0)[0] == 0
        err, dev = cuda.cuDeviceGet(0)
        err, ctx = cuda.cuDevicePrimaryCtxRetain(dev)
        cuda.cuCtxSetCurrent(ctx)
        err, p = cuda.cuMemAlloc(4)
        cuda.cuMemsetD32(p, 7, 1)
        pid = os.fork()
        if pid == 0:
            err, count = cuda.cuDeviceGetCount()
            os._exit(0 if err == 0 and count == 1 else 1)
        _, status = os.waitpid(pid, 0)
        out = bytearray(4)
        print(os.waitstatus_to_exitcode(status), cuda.cuMemcpyDtoH(out, p, 4)[0].name, out[0])
        """
    )
    done = cricket_run(server, "--", sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "CUDA_SUCCESS", "7"]


def test_errors_in_the_client_are_cuda_errors_and_calls_after_shutdown_are_refused(
    server: Server,
) -> None:
    """A Python exception in an entry is never CUDA_SUCCESS; a call made while the interpreter
    shuts down answers CUDA_ERROR_DEINITIALIZED instead of crashing."""
    script = textwrap.dedent(
        """
        import atexit
        from cuda.bindings import driver as cuda
        atexit.register(lambda: print("at exit", cuda.cuDeviceGetCount()[0].name))
        cuda.cuInit(0)
        err, dev = cuda.cuDeviceGet(0)
        err, ctx = cuda.cuDevicePrimaryCtxRetain(dev)
        cuda.cuCtxSetCurrent(ctx)
        err, p = cuda.cuMemAlloc(16)
        print(cuda.cuMemcpyHtoD(p, 0, 16)[0].name)
        """
    )
    done = cricket_run(server, "--", sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["CUDA_ERROR_INVALID_VALUE", "at exit CUDA_ERROR_DEINITIALIZED"]


def test_objects_released_after_the_interpreters_exit_free_what_they_hold(server: Server) -> None:
    """Objects torn down after the exit handlers (PyTorch's tensors, through the CUDA runtime)
    ask for the current context and device, the primary context's state and the runtime's
    context-local storage, record and query events, then free their memory and streams:
    answered as just before the exit, with the context's work done (waited for at the exit),
    the releases succeed (the session's end frees them), and any other call answers
    CUDA_ERROR_DEINITIALIZED."""
    script = textwrap.dedent(
        """
        import ctypes, os
        from ctypes import CFUNCTYPE, POINTER, byref, c_int, c_uint, c_uint64, c_void_p
        cuda = ctypes.CDLL("libcuda.so.1")
        dev, ctx, ptr, stream, table = c_int(), c_void_p(), c_uint64(), c_void_p(), c_void_p()
        assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(byref(dev), 0) == 0
        assert cuda.cuDevicePrimaryCtxRetain(byref(ctx), dev) == 0
        assert cuda.cuCtxSetCurrent(ctx) == 0  # the last context call: nothing asked since
        assert cuda.cuMemAlloc_v2(byref(ptr), 64) == 0 and cuda.cuStreamCreate(byref(stream), 0) == 0
        uuid = bytes.fromhex("c693336e1121df11a8c368f355d89593")  # context-local storage
        assert cuda.cuGetExportTable(byref(table), (ctypes.c_char * 16).from_buffer_copy(uuid)) == 0
        slots = (c_void_p * 3).from_address(table.value)
        put = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, c_void_p)(slots[0])
        get = CFUNCTYPE(c_int, POINTER(c_void_p), c_void_p, c_void_p)(slots[2])
        assert put(None, 0x1234, 0xBEEF, None) == 0

        class ReleasedAtExit:
            def __del__(self, write=os.write, cuda=cuda, byref=byref, c_void_p=c_void_p, c_int=c_int,
                        c_uint=c_uint, c_uint64=c_uint64, get=get, ctx=ctx.value, ptr=ptr.value,
                        stream=stream.value):
                current, device, flags, active, fresh, value, event, status = (
                    c_void_p(), c_int(-1), c_uint(9), c_int(9), c_uint64(), c_void_p(), c_void_p(), c_int(9))
                answers = [
                    cuda.cuCtxGetCurrent(byref(current)), current.value == ctx,
                    cuda.cuCtxGetDevice(byref(device)), device.value,
                    cuda.cuDevicePrimaryCtxGetState(0, byref(flags), byref(active)), active.value,
                    get(byref(value), None, 0x1234), value.value == 0xBEEF,
                    cuda.cuMemFree_v2(c_uint64(ptr)),
                    cuda.cuEventCreate(byref(event), 0), cuda.cuEventRecord(event, c_void_p(stream)),
                    cuda.cuEventQuery(event), cuda.cuStreamSynchronize(c_void_p(stream)),
                    cuda.cuStreamIsCapturing(c_void_p(stream), byref(status)), status.value,
                    cuda.cuStreamDestroy_v2(c_void_p(stream)), cuda.cuMemAlloc_v2(byref(fresh), 64),
                ]
                write(1, f"after exit {answers}\\n".encode())

        kept = ReleasedAtExit()
        print("made", flush=True)
        """
    )
    done = cricket_run(server, "--", sys.executable, "-c", script, env={"CRICKET_NATIVE_TRACE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["made", "after exit [0, True, 0, 0, 0, 1, 0, True, 0, 0, 0, 0, 0, 0, 0, 0, 4]"], done.stderr
    after = [line for line in done.stderr.splitlines() if "after the interpreter's exit" in line]
    assert "cuMemAlloc_v2 after the interpreter's exit -> 4" in after, done.stderr
    assert "cuMemFree_v2 after the interpreter's exit -> 0" in after, done.stderr


def test_cricket_run_names_a_command_it_cannot_start(server: Server) -> None:
    done = cricket_run(server, "--", "/nonexistent/program")
    assert done.returncode != 0
    assert "/nonexistent/program" in done.stderr


def test_a_kernel_of_a_library_launches_as_a_function_and_memory_pools_read_as_present(
    server: Server,
) -> None:
    """cuda.core's way: cuLibraryLoadData, cuLibraryGetKernel, then the CUkernel given where a
    CUfunction goes (launch, parameter info) and asked about (cuKernelGet*). Memory pools are
    remoted and read as the device has them (cuda.core allocates from them)."""
    script = textwrap.dedent(
        f"""
        import ctypes
        import numpy as np
        from cuda.bindings import driver as cuda
        cuda.cuInit(0)
        err, dev = cuda.cuDeviceGet(0)
        err, ctx = cuda.cuDevicePrimaryCtxRetain(dev)
        cuda.cuCtxSetCurrent(ctx)
        pools = cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
        print("pools", cuda.cuDeviceGetAttribute(pools, dev)[1])
        err, lib = cuda.cuLibraryLoadData(open({str(CUBIN)!r}, "rb").read(), [], [], 0, [], [], 0)
        err, kernel = cuda.cuLibraryGetKernel(lib, b"fill_u32")
        print("params", cuda.cuFuncGetParamInfo(cuda.CUfunction(int(kernel)), 2)[1:])
        print("kernel", cuda.cuKernelGetName(kernel)[1], cuda.cuKernelGetParamCount(kernel)[1])
        limit = cuda.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        print("attribute > 0", cuda.cuKernelGetAttribute(limit, kernel, dev)[1] > 0)
        err, p = cuda.cuMemAlloc(64)
        args = ((p, 9, 16), (None, ctypes.c_uint, ctypes.c_ulonglong))
        print(cuda.cuLaunchKernel(cuda.CUfunction(int(kernel)), 1, 1, 1, 16, 1, 1, 0, 0, args, 0)[0].name)
        out = np.zeros(16, dtype=np.uint32)
        cuda.cuMemcpyDtoH(out, p, 64)
        print("filled", int(out.sum()))
        """
    )
    done = cricket_run(server, "--", sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "pools 1",
        "params (16, 8)",
        "kernel b'fill_u32' 3",
        "attribute > 0 True",
        "CUDA_SUCCESS",
        "filled 144",
    ]


CUDA_CORE_PROGRAM = textwrap.dedent(
    r"""
    import numpy as np
    from cuda.core import Buffer, Device, EventOptions, LaunchConfig, Program, ProgramOptions, launch

    code = r'''
    extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }'''
    dev = Device()
    dev.set_current()
    stream = dev.create_stream()
    arch = "".join(str(i) for i in dev.compute_capability)
    program = Program(code, code_type="c++", options=ProgramOptions(arch=f"sm_{arch}"))
    kernel = program.compile("cubin").get_kernel("saxpy")
    n = 4096
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    dx, dy = dev.allocate(x.nbytes, stream=stream), dev.allocate(y.nbytes, stream=stream)
    dx.copy_from(Buffer.from_handle(x.ctypes.data, x.nbytes), stream=stream)
    dy.copy_from(Buffer.from_handle(y.ctypes.data, y.nbytes), stream=stream)
    start = stream.record(options=EventOptions(timing_enabled=True))
    config = LaunchConfig(grid=(n + 255) // 256, block=256)
    launch(stream, config, kernel, np.float32(2.0), dx, dy, np.int32(n))
    end = stream.record(options=EventOptions(timing_enabled=True))
    out = np.zeros(n, dtype=np.float32)
    dy.copy_to(Buffer.from_handle(out.ctypes.data, out.nbytes), stream=stream)
    stream.sync()
    end.sync()
    print("elapsed", (end - start) >= 0, "saxpy", bool(np.array_equal(out, 2 * x + 1)))
    """
)


def test_a_cuda_core_program_runs_unmodified(server: Server) -> None:
    """Device, Stream, a Program compiled by NVRTC here (the sim runs saxpy from its kernel
    registry), buffers, copies, a launch (cuLaunchKernelEx with a library's CUkernel), events."""
    pytest.importorskip("cuda.core")
    done = cricket_run(server, "--", sys.executable, "-c", CUDA_CORE_PROGRAM)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["elapsed True saxpy True"]


def test_without_a_server_address_cuInit_answers_not_initialized_and_says_why() -> None:
    from cricket_client.native import native_environment

    env = native_environment()
    env.pop("REMOTE_GPU_ADDRESS", None)
    script = "from cuda.bindings import driver as cuda; print(cuda.cuInit(0)[0].name)"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=RUN_LIMIT, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "CUDA_ERROR_NOT_INITIALIZED"
    assert "REMOTE_GPU_ADDRESS" in done.stderr


def test_page_locked_host_memory_and_stream_queries(server: Server) -> None:
    """Pinned host memory is the client's own (what pinned means remotely); copies from and to
    it work like any host memory. Streams answer the flags and priority they were made with."""
    script = textwrap.dedent(
        """
        import ctypes
        import numpy as np
        from cuda.bindings import driver as cuda
        cuda.cuInit(0)
        err, dev = cuda.cuDeviceGet(0)
        err, ctx = cuda.cuDevicePrimaryCtxRetain(dev)
        cuda.cuCtxSetCurrent(ctx)
        err, host = cuda.cuMemAllocHost(64)
        ctypes.memset(host, 5, 64)
        err, d = cuda.cuMemAlloc(64)
        err, stream = cuda.cuStreamCreateWithPriority(1, -1)
        cuda.cuMemcpyHtoDAsync(d, host, 64, stream)
        back = np.zeros(64, dtype=np.uint8)
        print("register", cuda.cuMemHostRegister(back.ctypes.data, 64, 0)[0].name)
        cuda.cuMemcpyDtoHAsync(back.ctypes.data, d, 64, stream)
        cuda.cuStreamSynchronize(stream)
        print("copied", int(back.sum()))
        print("unregister", cuda.cuMemHostUnregister(back.ctypes.data)[0].name,
              cuda.cuMemHostUnregister(back.ctypes.data)[0].name)
        err, mapped = cuda.cuMemHostAlloc(64, 2)
        print("mapped", err.name, cuda.cuMemHostGetFlags(mapped)[1],
              cuda.cuMemHostGetDevicePointer(mapped, 0)[0].name, cuda.cuMemFreeHost(mapped)[0].name)
        print("free", cuda.cuMemFreeHost(host)[0].name)
        print("flags", cuda.cuStreamGetFlags(stream)[1], "priority", cuda.cuStreamGetPriority(stream)[1])
        print("cc", cuda.cuDeviceComputeCapability(dev)[1:])
        """
    )
    done = cricket_run(server, "--", sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:5] == [
        "register CUDA_SUCCESS",
        "copied 320",
        "unregister CUDA_SUCCESS CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
        "mapped CUDA_SUCCESS 2 CUDA_SUCCESS CUDA_SUCCESS",
        "free CUDA_SUCCESS",
    ]
    assert lines[5].startswith("flags 1 priority ")
    assert lines[6] == "cc (9, 0)"


def test_python_threads_calling_with_the_gil_released(server: Server) -> None:
    """cuda.bindings releases the GIL around each driver call; the library takes it back. Eight
    threads, each with its own memory, no deadlock and no lost or mixed-up call."""
    script = textwrap.dedent(
        """
        import threading
        import numpy as np
        from cuda.bindings import driver as cuda
        cuda.cuInit(0)
        err, dev = cuda.cuDeviceGet(0)
        err, ctx = cuda.cuDevicePrimaryCtxRetain(dev)
        attr = cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        bad = []

        def work(k):
            cuda.cuCtxSetCurrent(ctx)
            err, d = cuda.cuMemAlloc(256)
            mine = np.full(64, k, dtype=np.uint32)
            for i in range(100):
                if cuda.cuDeviceGetAttribute(attr, dev)[1] <= 0:
                    bad.append((k, i, "attribute"))
                if i % 10 == 0:
                    cuda.cuMemcpyHtoD(d, mine, 256)
                    back = np.zeros(64, dtype=np.uint32)
                    cuda.cuMemcpyDtoH(back, d, 256)
                    if not (back == k).all():
                        bad.append((k, i, "copy"))
            cuda.cuMemFree(d)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        print("alive", sum(t.is_alive() for t in threads), "bad", bad)
        """
    )
    done = cricket_run(server, "--", sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "alive 0 bad []"


def test_cuda_pythons_own_runtime_runs_through_the_library(server: Server) -> None:
    """With CRICKET_NATIVE_RUNTIME=cudart, cuda.bindings.runtime is cuda-python's (the CUDA
    runtime, linked statically): it takes the driver's private tables (cuGetExportTable,
    cricket_client.native.export_tables), proves the driver (the integrity check) and runs:
    the device, an allocation and a copy there and back."""
    script = textwrap.dedent(
        """
        import numpy as np
        from cuda.bindings import runtime as rt
        err, n = rt.cudaGetDeviceCount()
        print(err.name, n)
        data = np.arange(256, dtype=np.float32)
        err, dev = rt.cudaMalloc(data.nbytes)
        assert err == rt.cudaError_t.cudaSuccess, err
        kind = rt.cudaMemcpyKind
        assert rt.cudaMemcpy(dev, data.ctypes.data, data.nbytes, kind.cudaMemcpyHostToDevice)[0] == 0
        back = np.zeros_like(data)
        assert rt.cudaMemcpy(back.ctypes.data, dev, data.nbytes, kind.cudaMemcpyDeviceToHost)[0] == 0
        assert rt.cudaFree(dev)[0] == 0
        print("copied", np.array_equal(back, data))
        """
    )
    done = cricket_run(server, "--", sys.executable, "-c", script, env={"CRICKET_NATIVE_RUNTIME": "cudart"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["cudaSuccess", "1", "copied", "True"], done.stdout + done.stderr


def test_python_programs_get_the_clients_runtime_sharing_the_session_with_the_native_driver(
    server: Server,
) -> None:
    """By default a Python program's cuda.bindings.runtime is the Python client's: it works,
    and streams, events, graphs and memory made by either module are the other's too (one
    session), as cuda-python's interoperability tests check on a local GPU."""
    script = textwrap.dedent(
        """
        import numpy as np
        import cuda.bindings.driver as cu
        import cuda.bindings.runtime as rt
        print("runtime", rt.cudaGetDeviceCount())
        assert cu.cuInit(0)[0] == 0
        err, dev = cu.cuDeviceGet(0)
        err, ctx = cu.cuCtxCreate(None, 0, dev)
        err, stream = cu.cuStreamCreate(0)
        print("drv stream to rt", rt.cudaStreamDestroy(stream)[0].name)
        err, stream = rt.cudaStreamCreate()
        print("rt stream to drv", cu.cuStreamDestroy(stream)[0].name)
        err, event = rt.cudaEventCreate()
        print("rt event to drv", cu.cuEventDestroy(event)[0].name)
        err, graph = cu.cuGraphCreate(0)
        print("drv graph to rt", rt.cudaGraphDestroy(graph)[0].name)
        err, ptr = rt.cudaMalloc(64)
        data = np.arange(16, dtype=np.int32)
        back = np.zeros(16, dtype=np.int32)
        print("drv copy to rt memory", cu.cuMemcpyHtoD(ptr, data, 64)[0].name)
        print("rt copy back", rt.cudaMemcpy(back, ptr, 64, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost)[0].name,
              bool((back == data).all()))
        print("rt free", rt.cudaFree(ptr)[0].name)
        print("ctx", cu.cuCtxDestroy(ctx)[0].name)
        """
    )
    done = cricket_run(server, "--", sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "runtime (<cudaError_t.cudaSuccess: 0>, 1)",
        "drv stream to rt cudaSuccess",
        "rt stream to drv CUDA_SUCCESS",
        "rt event to drv CUDA_SUCCESS",
        "drv graph to rt cudaSuccess",
        "drv copy to rt memory CUDA_SUCCESS",
        "rt copy back cudaSuccess True",
        "rt free cudaSuccess",
        "ctx CUDA_SUCCESS",
    ]
    assert "INTEGRITY_CHECK" not in done.stderr


def test_host_functions_run_after_the_stream_and_pointer_attributes(server: Server) -> None:
    """cuLaunchHostFunc runs the function once the stream's earlier work is done (on the
    calling thread); cuPointerGetAttributes answers several attributes at once."""
    script = textwrap.dedent(
        """
        import ctypes
        import numpy as np
        from cuda.bindings import driver as cuda
        cuda.cuInit(0)
        err, dev = cuda.cuDeviceGet(0)
        err, ctx = cuda.cuDevicePrimaryCtxRetain(dev)
        cuda.cuCtxSetCurrent(ctx)
        err, stream = cuda.cuStreamCreate(0)
        err, d = cuda.cuMemAlloc(64)
        seen = []
        host = np.zeros(64, dtype=np.uint8)

        def after(data):
            seen.append((data, int(host.sum())))

        callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(after)
        cuda.cuMemsetD8Async(d, 3, 64, stream)
        cuda.cuMemcpyDtoHAsync(host.ctypes.data, d, 64, stream)
        err, = cuda.cuLaunchHostFunc(stream, ctypes.cast(callback, ctypes.c_void_p).value, 7)
        print(err.name, seen)
        kinds = cuda.CUpointer_attribute
        wanted = [kinds.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, kinds.CU_POINTER_ATTRIBUTE_DEVICE_POINTER]
        err, values = cuda.cuPointerGetAttributes(2, wanted, d)
        print(err.name, int(values[0]), int(values[1]) == int(d))
        """
    )
    done = cricket_run(server, "--", sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["CUDA_SUCCESS [(7, 192)]", "CUDA_SUCCESS 2 True"]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_fork_while_other_threads_call_the_driver(server: Server, tmp_path: Path) -> None:
    """A child forked while the parent's other threads are inside driver calls (holding the
    interpreter) still gets its own session; no child hangs."""
    binary = tmp_path / "native_fork_stress"
    subprocess.run(
        ["gcc", "-O1", "-o", str(binary), str(HERE / "native_fork_stress.c"), "-ldl", "-lpthread"],
        check=True, timeout=LIMIT,
    )  # fmt: skip
    done = cricket_run(server, "--", str(binary))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "children ok 6 of 6"


def test_a_program_loading_the_driver_by_its_unversioned_name_gets_this_one(server: Server) -> None:
    """numba-cuda looks for "libcuda.so" before "libcuda.so.1": under cricket-run that name
    is this library too, so the real driver never comes in first."""
    script = textwrap.dedent(
        """
        import ctypes
        lib = ctypes.CDLL("libcuda.so")
        version = ctypes.c_int()
        assert lib.cuDriverGetVersion(ctypes.byref(version)) == 0
        maps = open("/proc/self/maps").read()
        print(sorted({line.split()[-1] for line in maps.splitlines() if "libcuda" in line}))
        """
    )
    done = cricket_run(server, "--", sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr([str(library_path())])
