"""The CUDA runtime of Python programs under the native door: the Python client's.

cuda-python's `cuda.bindings.runtime` links the CUDA runtime statically, and that runtime
starts only after the driver answers its private integrity check (the INTEGRITY_CHECK table of
cuGetExportTable), which the native library does not offer (export_tables.py says why). So
that Python programs run under `cricket-run -- python3 ...` as they do under
`cricket-run script.py`, the names `cuda.bindings.runtime` and `cuda.cudart` are the Python
client's runtime module there, while `cuda.bindings.driver` and all compiled code keep calling
the native library: both reach the same session in the same process, so handles, streams,
contexts and pointers pass freely between them.

startup/sitecustomize.py (its folder first on PYTHONPATH, by `native_environment()`) hands
the names to RuntimeFinder when the program imports them. `CRICKET_NATIVE_RUNTIME=cudart`
keeps cuda-python's own runtime (which then stops at the integrity check, naming it).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import types
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..remote_imports import REMOTE_MODULES, RemoteModuleLoader

__all__ = ["RUNTIME_ENV", "RUNTIME_MODULES", "STARTUP_DIR", "RuntimeFinder", "wanted"]

RUNTIME_ENV = "CRICKET_NATIVE_RUNTIME"  # "python" (default) or "cudart"
STARTUP_DIR = Path(__file__).resolve().parent / "startup"  # holds the sitecustomize
RUNTIME_MODULES = {name: target for name, target in REMOTE_MODULES.items()
                   if target == "cricket_client.runtime"}


def wanted(env: Mapping[str, str] | None = None) -> bool:
    """Whether the Python client's runtime stands in for cuda-python's (the default)."""
    value = (os.environ if env is None else env).get(RUNTIME_ENV, "python").strip().lower()
    if value not in ("python", "cudart"):
        raise ValueError(f"{RUNTIME_ENV}={value!r}: expected 'python' or 'cudart'")
    return value == "python"


class RuntimeFinder(importlib.abc.MetaPathFinder):
    """Answers the runtime's module names with the Python client's runtime; nothing else."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        remote = RUNTIME_MODULES.get(fullname)
        if remote is None:
            return None
        return importlib.util.spec_from_loader(fullname, RemoteModuleLoader(remote))
