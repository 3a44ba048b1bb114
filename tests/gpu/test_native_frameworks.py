"""Frameworks that reach the GPU through the driver library, unmodified, through the native
libcuda.so.1 (`cricket-run --`) against the `cuda` backend, the client's GPU hidden
(CUDA_VISIBLE_DEVICES= in the client's environment only): cuda.core and numba-cuda programs,
CuPy and PyTorch (each with the CUDA runtime it carries), with their results checked
(native_framework_probe.py reports step by step how far one gets, where one fails)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import LIMIT, ROOT, Server, running_server

from cricket_client.native import library_path
from cricket_server.backends.cuda import gpu_available

pytestmark = pytest.mark.gpu
HERE = Path(__file__).resolve().parent
RUN_LIMIT = 10 * LIMIT

CUDA_CORE_PROGRAM = textwrap.dedent(
    r"""
    import numpy as np
    try:
        from cuda.core import Device, EventOptions, LaunchConfig, Program, ProgramOptions, launch
        from cuda.core import Buffer
    except ImportError:
        from cuda.core.experimental import (Buffer, Device, EventOptions, LaunchConfig, Program,
                                            ProgramOptions, launch)

    code = r'''
    extern "C" __global__ void scale_add(float *y, const float *x, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }'''
    dev = Device()
    dev.set_current()
    stream = dev.create_stream()
    arch = "".join(str(i) for i in dev.compute_capability)
    kernel = Program(code, code_type="c++", options=ProgramOptions(arch=f"sm_{arch}")) \
        .compile("cubin").get_kernel("scale_add")
    n = 1 << 16
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    dx, dy = dev.allocate(x.nbytes, stream=stream), dev.allocate(y.nbytes, stream=stream)
    dx.copy_from(Buffer.from_handle(x.ctypes.data, x.nbytes), stream=stream)
    dy.copy_from(Buffer.from_handle(y.ctypes.data, y.nbytes), stream=stream)
    start = stream.record(options=EventOptions(timing_enabled=True))
    launch(stream, LaunchConfig(grid=(n + 255) // 256, block=256), kernel, dy, dx, np.float32(2.0), np.int32(n))
    end = stream.record(options=EventOptions(timing_enabled=True))
    out = np.zeros(n, dtype=np.float32)
    dy.copy_to(Buffer.from_handle(out.ctypes.data, out.nbytes), stream=stream)
    stream.sync()
    end.sync()
    assert (end - start) >= 0
    assert np.array_equal(out, 2 * x + 1), out[:8]
    print("cuda.core ok", dev.name)
    """
)

NUMBA_PROGRAM = textwrap.dedent(
    """
    import numpy as np
    from numba import cuda

    @cuda.jit
    def add(x, y, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = x[i] + y[i]

    n = 1 << 16
    x = np.arange(n, dtype=np.float32)
    y = 2 * x
    stream = cuda.stream()
    dx, dy = cuda.to_device(x, stream=stream), cuda.to_device(y, stream=stream)
    dout = cuda.device_array_like(x, stream=stream)
    add[(n + 255) // 256, 256, stream](dx, dy, dout)
    out = dout.copy_to_host(stream=stream)
    stream.synchronize()
    assert np.array_equal(out, 3 * x), out[:8]
    print("numba ok")
    """
)


CUPY_PROGRAM = textwrap.dedent(
    '''
    import cupy as cp
    import numpy as np

    assert cp.cuda.runtime.getDeviceCount() == 1
    n = 1 << 20
    a = cp.arange(n, dtype=cp.float32)
    assert float((a * 2 + 1).sum()) == float(n) * n  # elementwise kernel and reduction
    m = cp.asarray(np.random.default_rng(1).standard_normal((128, 128), dtype=np.float32))
    host = cp.asnumpy(m)
    assert np.allclose(cp.asnumpy(m * m.T), host * host.T)  # a broadcast elementwise kernel
    square = cp.RawKernel(r"""
    extern "C" __global__ void square(const float *x, float *y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = x[i] * x[i];
    }""", "square")  # NVRTC, cuModuleLoadData, cuLaunchKernel
    y = cp.empty_like(a)
    square(((n + 255) // 256,), (256,), (a, y, cp.int32(n)))
    assert np.array_equal(cp.asnumpy(y[:1000]), np.arange(1000, dtype=np.float32) ** 2)
    print("cupy ok", cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
    '''
)

TORCH_PROGRAM = textwrap.dedent(
    """
    import torch

    # (not device_count(): torch reads CUDA_VISIBLE_DEVICES itself, and the test empties it
    # in the client's environment to hide the local GPU)
    assert torch.cuda.is_available()
    x = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
    assert float((x * 2 + 1).sum()) == float(1 << 20) * (1 << 20)
    g = torch.Generator().manual_seed(1)
    m = torch.randn(256, 256, generator=g)
    assert torch.equal((m.cuda() * m.cuda().T).cpu(), m * m.T)  # a broadcast kernel
    y = torch.nn.functional.relu(torch.linspace(-1, 1, 101, device="cuda"))
    assert float(y.min()) == 0.0 and float(y.max()) == 1.0
    torch.cuda.synchronize()
    print("torch ok")  # (get_device_name(0) checks device_count() too)
    """
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if not gpu_available():
        if os.environ.get("CRICKET_TEST_BACKEND") == "cuda":
            pytest.fail("CRICKET_TEST_BACKEND=cuda, but no GPU answers (cuInit or device count)")
        pytest.skip("no GPU answers: the cuda backend cannot be tested here")
    library_path()
    with running_server(tmp_path_factory.mktemp("native-gpu"), backend="cuda", isolation=None) as srv:
        yield srv


def run_hidden(
    server: Server, code: str, hide: str = "", script: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`cricket-run -- python -c CODE` with no GPU visible to the client process
    (CUDA_VISIBLE_DEVICES `hide`, naming no device); CODE from the file `script` when given
    (for frameworks that read a function's source)."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": hide}
    program = [str(script)] if script is not None else ["-c", code]
    command = [sys.executable, "-m", "cricket_client.run", "--server", server.address, "--",
               sys.executable, *program]
    return subprocess.run(command, capture_output=True, text=True, timeout=RUN_LIMIT, env=env, cwd=ROOT)


def _importable(module: str) -> bool:
    probe = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, timeout=LIMIT)
    return probe.returncode == 0


def test_a_cuda_core_program_runs_unmodified(server: Server) -> None:
    if not _importable("cuda.core"):
        pytest.skip("cuda.core is not installed")
    done = run_hidden(server, CUDA_CORE_PROGRAM)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("cuda.core ok")


def test_a_numba_cuda_program_runs_unmodified(server: Server) -> None:
    if not _importable("numba.cuda"):
        pytest.skip("numba-cuda does not import here (see DESIGN.md: numpy version)")
    done = run_hidden(server, NUMBA_PROGRAM)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "numba ok"


def test_the_driver_program_through_both_doors_on_the_gpu(server: Server) -> None:
    program = ROOT / "tests" / "integration" / "native_driver_program.py"
    cubin = ROOT / "tests" / "kernels" / "test_kernels.sm_90.cubin"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    base = [sys.executable, "-m", "cricket_client.run", "--server", server.address]
    native = subprocess.run([*base, "--", sys.executable, str(program), str(cubin)],
                            capture_output=True, text=True, timeout=RUN_LIMIT, env=env, cwd=ROOT)
    python = subprocess.run([*base, str(program), str(cubin)],
                            capture_output=True, text=True, timeout=RUN_LIMIT, env=env, cwd=ROOT)
    assert native.returncode == 0, native.stderr
    assert python.returncode == 0, python.stderr
    assert native.stdout == python.stdout


def test_a_c_program_with_kernels_threads_and_fork_on_the_gpu(server: Server, tmp_path: Path) -> None:
    """The integration test's C program (its own declarations, dlopen("libcuda.so.1"),
    kernelParams and `extra` launches, events, 8 pthreads, fork) on the real GPU."""
    source = ROOT / "tests" / "integration" / "native_threads.c"
    binary = tmp_path / "native_threads"
    subprocess.run(["gcc", "-O1", "-o", str(binary), str(source), "-ldl", "-lpthread"],
                   check=True, timeout=LIMIT)
    cubin = ROOT / "tests" / "kernels" / "test_kernels.sm_90.cubin"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, "-m", "cricket_client.run", "--server", server.address, "--",
         str(binary), str(cubin)],
        capture_output=True, text=True, timeout=RUN_LIMIT, env=env, cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for expected in ("kernelParams ok", "extra ok", "threads ok (200 calls each)",
                     "unsupported 801", "child ok", "parent after fork ok"):
        assert expected in lines, done.stdout + done.stderr


MATMUL_PROGRAMS = {
    "cupy": textwrap.dedent(
        """
        import cupy as cp
        import numpy as np

        rng = np.random.default_rng(1)
        a = rng.standard_normal((96, 64), dtype=np.float32)
        b = rng.standard_normal((64, 80), dtype=np.float32)
        c = cp.asnumpy(cp.asarray(a) @ cp.asarray(b))
        print("matmul ok", np.allclose(c, a @ b, rtol=1e-4, atol=1e-4))
        """
    ),
    "torch": textwrap.dedent(
        """
        import torch

        g = torch.Generator().manual_seed(1)
        a = torch.randn(96, 64, generator=g)
        b = torch.randn(64, 80, generator=g)
        torch.backends.cuda.matmul.allow_tf32 = False
        c = (a.cuda() @ b.cuda()).cpu()
        print("matmul ok", torch.allclose(c, a @ b, rtol=1e-4, atol=1e-4))
        """
    ),
}


@pytest.mark.parametrize("framework", sorted(MATMUL_PROGRAMS))
def test_a_matmul_through_cublas(server: Server, framework: str) -> None:
    """Both frameworks multiply matrices with NVIDIA's cuBLAS, which carries a CUDA runtime
    of its own (it initializes through cudaFree(0) and loads its kernels lazily)."""
    if not _importable(framework):
        pytest.skip(f"{framework} is not installed")
    done = run_hidden(server, MATMUL_PROGRAMS[framework])
    assert done.returncode == 0, done.stdout + done.stderr[-6000:]
    assert done.stdout.strip() == "matmul ok True"


@pytest.mark.parametrize(
    ("framework", "program"), [("cupy", CUPY_PROGRAM), ("torch", TORCH_PROGRAM)]
)
def test_a_runtime_linked_framework_runs_unmodified(
    server: Server, framework: str, program: str
) -> None:
    """CuPy and PyTorch carry their own CUDA runtime, which checks the driver (its private
    tables, the integrity check) before any device call; their results checked."""
    if not _importable(framework):
        pytest.skip(f"{framework} is not installed")
    done = run_hidden(server, program)
    assert done.returncode == 0, done.stdout + done.stderr[-6000:]
    assert done.stdout.startswith(f"{framework} ok"), done.stdout
