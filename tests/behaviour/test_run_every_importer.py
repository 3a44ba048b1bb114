"""Under cricket-run every importer gets the remote driver and runtime, modules inside the
cuda.bindings package too: nothing a program does reaches a GPU of the client.

The client runs with `CUDA_VISIBLE_DEVICES=` (the server keeps its GPU), so on the GPU machine
any call that leaks to the local driver fails instead of quietly running there. The programs
use pure-Python modules inside the cuda.bindings package: the wheel's own
`cuda.bindings._example_helpers` where it ships them, else the same layout from
tests/behaviour/wheel_helpers, which also has a helper that imports the runtime first. These
join the installed package through a copy of it made of links (tmp/site/cuda/bindings), so the
programs run unmodified. On the GPU machine each program also runs locally, GPU visible, and
must print the same.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from behaviour_helpers import BACKEND, ROOT

WHEEL_HELPERS = Path(__file__).resolve().parent / "wheel_helpers"
TIMEOUT = 300

VECTOR_ADD = """
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

RUNTIME_FIRST = '''
"""Vector addition through a helper of the cuda.bindings package that imports the runtime
first: memory through its runtime, the kernel through its driver."""
import sys

import numpy as np
from cuda.bindings import _runtime_first_helpers as helpers
from cuda.bindings import driver, nvrtc, runtime

SOURCE = {source!r}


def cubin(arch):
    check = helpers.check
    prog = check(nvrtc.nvrtcCreateProgram(SOURCE.encode(), b"vector_add.cu", 0, [], []))
    opts = [f"--gpu-architecture={{arch}}".encode()]
    check(nvrtc.nvrtcCompileProgram(prog, len(opts), opts))
    image = b" " * check(nvrtc.nvrtcGetCUBINSize(prog))
    check(nvrtc.nvrtcGetCUBIN(prog, image))
    return image


def main():
    check = helpers.check
    check(runtime.cudaSetDevice(0))
    attr = runtime.cudaDeviceAttr
    major = check(runtime.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMajor, 0))
    minor = check(runtime.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMinor, 0))
    module, kernel = helpers.load_function(cubin(f"sm_{{major}}{{minor}}"), "vector_add")
    n = 4096
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.5, dtype=np.float32)
    c = np.zeros(n, dtype=np.float32)
    d_a, d_b, d_c = (helpers.device_memory(a.nbytes) for _ in range(3))
    h2d = runtime.cudaMemcpyKind.cudaMemcpyHostToDevice
    check(runtime.cudaMemcpy(d_a, a.ctypes.data, a.nbytes, h2d))
    check(runtime.cudaMemcpy(d_b, b.ctypes.data, b.nbytes, h2d))
    args = [np.array([int(p)], dtype=np.uint64) for p in (d_a, d_b, d_c)]
    args.append(np.array([n], dtype=np.int32))
    params = np.array([arg.ctypes.data for arg in args], dtype=np.uint64)
    check(driver.cuLaunchKernel(kernel, n // 256, 1, 1, 256, 1, 1, 0, 0, params.ctypes.data, 0))
    check(runtime.cudaDeviceSynchronize())
    d2h = runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost
    check(runtime.cudaMemcpy(c.ctypes.data, d_c, c.nbytes, d2h))
    wrong = int(np.count_nonzero(c != a + b))
    print(f"vector_add of {{n}} floats: {{wrong}} wrong")
    for p in (d_a, d_b, d_c):
        check(runtime.cudaFree(p))
    check(driver.cuModuleUnload(module))
    print("Test PASSED" if wrong == 0 else "Test FAILED")
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
'''

EXAMPLE_HELPERS = '''
"""Vector addition with the example helpers of the cuda-bindings wheel: device selection,
compute capability and every result check go through the helpers' own driver, runtime and
NVRTC bindings."""
import sys

import numpy as np
from cuda.bindings._example_helpers import common, helper_cuda  # first, as the samples do

from cuda.bindings import driver as cuda
from cuda.bindings import nvrtc
from cuda.bindings import runtime as cudart

check = getattr(helper_cuda, "check_cuda_errors", None) or helper_cuda.checkCudaErrors
find_device = getattr(helper_cuda, "find_cuda_device", None) or helper_cuda.findCudaDevice
SOURCE = {source!r}


def failure(result):
    try:
        check(result)
    except RuntimeError as exc:
        return str(exc)
    return "no error"


def main():
    dev = find_device()
    too_low = getattr(common, "check_compute_capability_too_low", None)
    if too_low is not None:
        too_low(dev, (5, 0))
    attr = cudart.cudaDeviceAttr
    major = check(cudart.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMajor, dev))
    minor = check(cudart.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMinor, dev))
    prog = check(nvrtc.nvrtcCreateProgram(SOURCE.encode(), b"vector_add.cu", 0, [], []))
    opts = [f"--gpu-architecture=sm_{{major}}{{minor}}".encode()]
    check(nvrtc.nvrtcCompileProgram(prog, len(opts), opts))
    image = b" " * check(nvrtc.nvrtcGetCUBINSize(prog))
    check(nvrtc.nvrtcGetCUBIN(prog, image))
    module = check(cuda.cuModuleLoadData(image))
    kernel = check(cuda.cuModuleGetFunction(module, b"vector_add"))
    n = 4096
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 2.0, dtype=np.float32)
    c = np.zeros(n, dtype=np.float32)
    d_a, d_b, d_c = (check(cudart.cudaMalloc(a.nbytes)) for _ in range(3))
    h2d = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
    check(cudart.cudaMemcpy(d_a, a.ctypes.data, a.nbytes, h2d))
    check(cudart.cudaMemcpy(d_b, b.ctypes.data, b.nbytes, h2d))
    args = [np.array([int(p)], dtype=np.uint64) for p in (d_a, d_b, d_c)]
    args.append(np.array([n], dtype=np.int32))
    params = np.array([arg.ctypes.data for arg in args], dtype=np.uint64)
    check(cuda.cuLaunchKernel(kernel, n // 128, 1, 1, 128, 1, 1, 0, 0, params.ctypes.data, 0))
    check(cudart.cudaDeviceSynchronize())
    d2h = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
    check(cudart.cudaMemcpy(c.ctypes.data, d_c, c.nbytes, d2h))
    wrong = int(np.count_nonzero(c != a + b))
    print(f"vector_add of {{n}} floats: {{wrong}} wrong")
    print("missing kernel named:", "CUDA_ERROR_NOT_FOUND" in failure(cuda.cuModuleGetFunction(module, b"missing")))
    print("runtime error named:", "cudaErrorInvalidValue" in failure((cudart.cudaError_t.cudaErrorInvalidValue,)))
    for p in (d_a, d_b, d_c):
        check(cudart.cudaFree(p))
    check(cuda.cuModuleUnload(module))
    print("Test PASSED" if wrong == 0 else "Test FAILED")
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
'''


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A folder for PYTHONPATH whose `cuda` and `cuda.bindings` are the installed ones, made of
    links, with the modules of wheel_helpers added where the installed package lacks them."""
    if importlib.util.find_spec("cuda.bindings.nvrtc") is None:
        pytest.skip("cuda-python with NVRTC is not installed on this client")
    import cuda.bindings

    bindings = Path(cuda.bindings.__file__).resolve().parent
    root = tmp_path / "site"
    for source, target in ((bindings.parent, root / "cuda"), (bindings, root / "cuda" / "bindings")):
        target.mkdir(parents=True)
        for entry in source.iterdir():
            if entry.name != "bindings" or source == bindings:
                (target / entry.name).symlink_to(entry)
    for entry in WHEEL_HELPERS.iterdir():
        link = root / "cuda" / "bindings" / entry.name
        if entry.name != "README.md" and not link.exists():
            link.symlink_to(entry)
    return root


def _env(site: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "REMOTE_GPU_ADDRESS"}
    return dict(env, PYTHONPATH=f"{site}{os.pathsep}{ROOT}", **extra)


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


def _remote_and_local(program: Path, site: Path, address: str) -> str:
    """Run under cricket-run with the client's GPUs hidden; on the GPU machine also locally."""
    remote = _run(
        [sys.executable, "-m", "cricket_client.run", "--server", address, str(program)],
        _env(site, CUDA_VISIBLE_DEVICES=""), program.parent,
    )  # fmt: skip
    assert remote.returncode == 0, remote.stdout + remote.stderr
    if BACKEND == "cuda":
        local = _run([sys.executable, str(program)], _env(site), program.parent)
        assert local.returncode == 0, local.stdout + local.stderr
        assert remote.stdout == local.stdout
    return remote.stdout


def test_a_bindings_helper_that_imports_the_runtime_first_runs_remotely(
    site: Path, server_address: str, tmp_path: Path
) -> None:
    program = tmp_path / "runtime_first.py"
    program.write_text(textwrap.dedent(RUNTIME_FIRST.format(source=VECTOR_ADD)))
    out = _remote_and_local(program, site, server_address)
    assert out.splitlines() == ["vector_add of 4096 floats: 0 wrong", "Test PASSED"]


def test_the_wheels_example_helpers_run_remotely(
    site: Path, server_address: str, tmp_path: Path
) -> None:
    program = tmp_path / "example_helpers.py"
    program.write_text(textwrap.dedent(EXAMPLE_HELPERS.format(source=VECTOR_ADD)))
    out = _remote_and_local(program, site, server_address)
    assert out.splitlines() == [
        "vector_add of 4096 floats: 0 wrong",
        "missing kernel named: True",
        "runtime error named: True",
        "Test PASSED",
    ]


def test_code_bound_to_the_native_driver_fails_instead_of_running_locally(
    site: Path, server_address: str, tmp_path: Path
) -> None:
    """cuda.core's compiled modules cimport cuda-python's native driver binding, which cannot
    be redirected: under cricket-run importing them fails, naming the binding."""
    if importlib.util.find_spec("cuda.core") is None:
        pytest.skip("cuda.core is not installed on this client")
    program = tmp_path / "core.py"
    program.write_text(textwrap.dedent("""
        try:
            from cuda.core import Device
        except ImportError:
            from cuda.core.experimental import Device
        device = Device(0)
        device.set_current()
        print("ran on", device.name)
    """))
    result = _run(
        [sys.executable, "-m", "cricket_client.run", "--server", server_address, str(program)],
        _env(site, CUDA_VISIBLE_DEVICES=""), tmp_path,
    )  # fmt: skip
    assert result.returncode != 0 and "ran on" not in result.stdout
    assert "is not supported remotely" in result.stderr, result.stderr
    assert "cuda.bindings.cy" in result.stderr, result.stderr
