"""D3: the client needs no GPU, driver, CUDA toolkit or cuda-python."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
sys.modules["cuda"] = None          # any import of cuda-python fails
sys.modules["numpy"] = None         # numpy is optional too
import cricket_client
from cricket_client import driver as cuda
assert cuda.cuGetErrorName(1)[1] == b"CUDA_ERROR_INVALID_VALUE"
allowed = ("cricket_client", "cricket_xdr", "rpc_spec", "xdrlib3", "__main__", "__editable__",
           "_distutils_hack")
ours = sorted(m for m in sys.modules if m.split(".")[0] not in sys.stdlib_module_names
              and sys.modules[m] is not None and not m.startswith(allowed))
print(ours)
"""


def test_client_imports_only_the_standard_library_and_the_rpc_layers() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
