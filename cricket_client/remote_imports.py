"""Remote `cuda.bindings` modules for unmodified cuda-python programs: `install()`.

`install()` (also `cricket_client.install()`; `cricket-run` calls it) puts a finder first on
`sys.meta_path` that answers exactly these module names with the remote modules, whether or not
cuda-python is installed here:

| imported as                            | gives                    |
| -------------------------------------- | ------------------------ |
| `cuda.bindings.driver`, `cuda.cuda`    | `cricket_client.driver`  |
| `cuda.bindings.runtime`, `cuda.cudart` | `cricket_client.runtime` |

The packages `cuda` and `cuda.bindings` stay the installed ones when cuda-python is here, and
every other `cuda.*` module (`cuda.bindings.nvrtc`, nvJitLink, ...) stays local: they need no
GPU. cuda-python's compiled modules import the driver and runtime modules for their own helpers,
so while one of them loads, those names are the local modules again (`local_cuda()`). Without
cuda-python, `cuda` and `cuda.bindings` are empty stand-ins and anything else under them is a
missing module. A name the remote modules do not offer raises NotSupportedRemotely naming it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Iterator, Sequence
from typing import Any

from .connection import ADDRESS_ENV

__all__ = ["REMOTE_MODULES", "PACKAGES", "RemoteCudaFinder", "install", "uninstall"]

REMOTE_MODULES: dict[str, str] = {
    "cuda.bindings.driver": "cricket_client.driver",
    "cuda.bindings.runtime": "cricket_client.runtime",
    "cuda.cuda": "cricket_client.driver",
    "cuda.cudart": "cricket_client.runtime",
}
PACKAGES = ("cuda", "cuda.bindings")


class _RemoteLoader(importlib.abc.Loader):
    """Makes `cuda.bindings.driver` (etc.) a module holding the remote module's names."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        real = importlib.import_module(self.target)
        for name, value in vars(real).items():
            if not name.startswith("__") or name in ("__all__", "__doc__", "__getattr__"):
                setattr(module, name, value)
        module.__cricket_remote__ = self.target  # type: ignore[attr-defined]


class _StandInLoader(importlib.abc.Loader):
    """An empty package for `cuda` or `cuda.bindings` where cuda-python is not installed."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        module.__doc__ = (
            f"Stand-in for {module.__name__} under cricket-run (cuda-python is not installed "
            f"here): only the remote driver and runtime modules are inside."
        )


class _LocalLoader(importlib.abc.Loader):
    """Loads a local module under `cuda.` (nvrtc, nvJitLink, ...) with the local driver and
    runtime modules in sys.modules while it initializes: cuda-python's compiled modules import
    them for their own helpers, which the remote modules do not have."""

    def __init__(self, loader: Any, finder: RemoteCudaFinder) -> None:
        self.loader = loader
        self.finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        with self.finder.local_cuda():
            return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        with self.finder.local_cuda():
            self.loader.exec_module(module)


class RemoteCudaFinder(importlib.abc.MetaPathFinder):
    """Answers the names of REMOTE_MODULES; stands in for missing `cuda` packages; loads the
    rest of `cuda.*` locally (see _LocalLoader)."""

    def __init__(self) -> None:
        self._local_depth = 0
        self._local_modules: dict[str, types.ModuleType] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if self._local_depth:
            return None  # inside a local cuda-python module's import: everything is local
        remote = REMOTE_MODULES.get(fullname)
        if remote is not None:
            return importlib.util.spec_from_loader(fullname, _RemoteLoader(remote))
        if fullname in PACKAGES:
            if importlib.machinery.PathFinder.find_spec(fullname, path) is not None:
                return None  # the installed package
            return importlib.util.spec_from_loader(fullname, _StandInLoader(), is_package=True)
        if fullname.startswith("cuda."):
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is not None and spec.loader is not None:
                spec.loader = _LocalLoader(spec.loader, self)
            return spec
        return None

    @contextlib.contextmanager
    def local_cuda(self) -> Iterator[None]:
        """Within the block, the names of REMOTE_MODULES are cuda-python's local modules."""
        if self._local_depth:
            self._local_depth += 1
            try:
                yield
            finally:
                self._local_depth -= 1
            return
        remote = {n: sys.modules.pop(n) for n in REMOTE_MODULES if n in sys.modules}
        sys.modules.update(self._local_modules)
        self._local_depth = 1
        try:
            yield
        finally:
            self._local_depth = 0
            for name in REMOTE_MODULES:
                local = sys.modules.pop(name, None)
                if local is not None:
                    self._local_modules[name] = local
            sys.modules.update(remote)
            for name in REMOTE_MODULES:
                parent_name, _, child = name.rpartition(".")
                parent = sys.modules.get(parent_name)
                if parent is None:
                    continue
                if name in remote:
                    setattr(parent, child, remote[name])
                elif child in vars(parent):
                    delattr(parent, child)


def _installed() -> RemoteCudaFinder | None:
    return next((f for f in sys.meta_path if isinstance(f, RemoteCudaFinder)), None)


def _forget_local() -> None:
    """Drop already imported local (or remote) modules of those names, and their attributes."""
    for name in REMOTE_MODULES:
        sys.modules.pop(name, None)
        parent_name, _, child = name.rpartition(".")
        parent = sys.modules.get(parent_name)
        if parent is not None and child in vars(parent):
            delattr(parent, child)


def install(address: str | None = None) -> None:
    """Make `cuda.bindings.driver/runtime` and `cuda.cuda/cudart` the remote modules from
    now on in this process; `address` (host:port) sets the server (else REMOTE_GPU_ADDRESS)."""
    if address:
        os.environ[ADDRESS_ENV] = address
    if _installed() is None:
        sys.meta_path.insert(0, RemoteCudaFinder())
    _forget_local()


def uninstall() -> None:
    """Undo install(): the names are looked up normally again on their next import."""
    finder = _installed()
    if finder is not None:
        sys.meta_path.remove(finder)
    _forget_local()
    for name in PACKAGES:
        module = sys.modules.get(name)
        if module is not None and isinstance(getattr(module, "__loader__", None), _StandInLoader):
            del sys.modules[name]
