"""Under cricket_client.install() (what cricket-run does) every importer gets the remote driver
and runtime: modules inside the cuda.bindings package too (the wheel's example helpers, one
that imports the runtime first), `import ... as`, and the package attribute; NVRTC stays local;
cuda-python's native driver bindings fail loudly instead of running on this machine's driver.

Each case runs in a fresh interpreter without a server (nothing here calls the device). The
helpers of tests/behaviour/wheel_helpers join the cuda.bindings package where the installed
wheel lacks them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WHEEL_HELPERS = ROOT / "tests" / "behaviour" / "wheel_helpers"

pytest.importorskip("cuda.bindings.nvrtc")

PRELUDE = f"""
import sys
import cricket_client
cricket_client.install()
import cuda.bindings
cuda.bindings.__path__.append({str(WHEEL_HELPERS)!r})
REMOTE_DRIVER = cricket_client.driver.cuInit
REMOTE_RUNTIME = cricket_client.runtime.cudaMalloc
def remote_driver(module):
    return module.cuInit is REMOTE_DRIVER and module is sys.modules["cuda.bindings.driver"]
def remote_runtime(module):
    return module.cudaMalloc is REMOTE_RUNTIME and module is sys.modules["cuda.bindings.runtime"]
"""


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("REMOTE_GPU_ADDRESS", None)
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_bindings_module_that_imports_the_runtime_first_gets_both_remote() -> None:
    result = _python("""
        from cuda.bindings import _runtime_first_helpers as helpers
        print(remote_runtime(helpers.runtime), remote_driver(helpers.driver))
        from cuda.bindings import driver, runtime
        print(driver is helpers.driver, runtime is helpers.runtime)
    """)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["True True", "True True"]


def test_the_wheels_example_helpers_bind_the_remote_driver_and_runtime() -> None:
    result = _python("""
        from cuda.bindings import _example_helpers
        from cuda.bindings._example_helpers import common, helper_cuda
        print(remote_driver(helper_cuda.cuda), remote_runtime(helper_cuda.cudart))
        print(remote_driver(common.cuda), remote_runtime(common.cudart))
        import cricket_client.runtime as rt
        try:
            _example_helpers.check_cuda_errors((rt.cudaError_t.cudaErrorInvalidValue,))
        except RuntimeError as exc:
            print("cudaErrorInvalidValue" in str(exc))
        nvrtc = helper_cuda.nvrtc
        err, major, _ = nvrtc.nvrtcVersion()
        print(hasattr(nvrtc, "__cricket_remote__"), err == nvrtc.nvrtcResult.NVRTC_SUCCESS)
    """)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["True True", "True True", "True", "False True"]


def test_import_as_and_the_package_attribute_give_the_remote_driver() -> None:
    result = _python("""
        import cuda.bindings.nvrtc  # loads cuda-python's own driver module for its helpers
        print(remote_driver(cuda.bindings.driver), hasattr(cuda.bindings, "runtime"))
        import cuda.bindings.driver as d
        import cuda.bindings.runtime as r
        print(remote_driver(d), remote_runtime(r))
        import cuda.bindings._example_helpers
        print(remote_driver(cuda.bindings.driver), cuda.bindings.driver is d)
    """)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["True False", "True True", "True True"]


def test_the_native_driver_binding_fails_loudly_instead_of_running_here() -> None:
    result = _python("""
        from cricket_client.errors import NotSupportedRemotely
        import cuda.bindings.nvrtc  # cuda-python's nvrtc loads cydriver for itself
        import importlib
        # what a compiled module that cimports a binding does when it loads
        for name in ("cuda.bindings.cydriver", "cuda.bindings.cyruntime"):
            try:
                importlib.import_module(name).__pyx_capi__
            except NotSupportedRemotely as exc:
                print(exc)
    """)  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout
    assert lines[0].startswith("cuda.bindings.cydriver.__pyx_capi__ is not supported remotely")
    assert lines[1].startswith("cuda.bindings.cyruntime.__pyx_capi__ is not supported remotely")
    assert all("this machine's CUDA driver" in line for line in lines)
    assert all("cricket-run -- python3 PROGRAM" in line for line in lines)  # the way that works


def test_the_v2_driver_api_fails_loudly_instead_of_running_here() -> None:
    pytest.importorskip("cuda.bindings._v2.driver")
    result = _python("""
        from cricket_client.errors import NotSupportedRemotely
        from cuda.bindings._v2 import driver as v2
        try:
            v2.init(0)
        except NotSupportedRemotely as exc:
            print(exc)
    """)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("cuda.bindings._v2.driver.init is not supported remotely")
