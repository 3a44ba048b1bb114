"""Remote `cuda.bindings` modules for unmodified cuda-python programs: `install()`.

`install()` (also `cricket_client.install()`; `cricket-run` calls it) puts a finder first on
`sys.meta_path` that answers these module names for every importer in the process (the
program, its libraries, and pure-Python modules inside the `cuda.bindings` package itself, such
as the wheel's example helpers), whether or not cuda-python is installed here:

| imported as                                 | gives                                    |
| ------------------------------------------- | ---------------------------------------- |
| `cuda.bindings.driver`, `cuda.cuda`         | `cricket_client.driver`                  |
| `cuda.bindings.runtime`, `cuda.cudart`      | `cricket_client.runtime`                 |
| `cuda.bindings.cydriver`, `_v2.driver`, ... | a stand-in raising NotSupportedRemotely  |

The packages `cuda` and `cuda.bindings` stay the installed ones when cuda-python is here, and
so does every other `cuda.*` module (NVRTC, nvJitLink, NVVM, pathfinder, utils, ...): they
never call the driver. cuda-python's compiled NVRTC module imports its own driver module for
helper types, so while it loads (`LOCAL_DRIVER_USERS`) the swapped names are cuda-python's
modules again (`local_cuda()`); afterwards they are put aside and the remote modules (and the
package attributes) come back.

cuda-python's native driver and runtime bindings (`NATIVE_BINDINGS`: the Cython `cydriver`,
`cyruntime`, their loaders, the `_v2` driver API) would run on this machine's driver, so they
are stand-ins whose every attribute raises NotSupportedRemotely: a compiled module that
cimports them (cuda.core, ...) fails at import, loudly, instead of using a local GPU. Such
code needs the native door (a remote libcuda), not this swap. Not covered: libraries that
reach libcuda without cuda-python (CuPy, PyTorch, cuFile itself), and NVML
(`cuda.bindings.nvml`), which describes this machine's GPUs.

Without cuda-python, `cuda` and `cuda.bindings` are empty stand-ins and anything else under
them is a missing module. A name the remote modules do not offer raises NotSupportedRemotely
naming it. The swap is process-wide; an import in another thread while NVRTC's module loads
may see cuda-python's own driver module.
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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from .connection import ADDRESS_ENV
from .errors import NotSupportedRemotely

__all__ = [
    "REMOTE_MODULES",
    "NATIVE_BINDINGS",
    "LOCAL_DRIVER_USERS",
    "PACKAGES",
    "RemoteCudaFinder",
    "install",
    "uninstall",
]

REMOTE_MODULES: dict[str, str] = {
    "cuda.bindings.driver": "cricket_client.driver",
    "cuda.bindings.runtime": "cricket_client.runtime",
    "cuda.cuda": "cricket_client.driver",
    "cuda.cudart": "cricket_client.runtime",
}
# cuda-python's native bindings of the driver and runtime (with their submodules): whatever
# reaches the driver through them runs on this machine.
NATIVE_BINDINGS = (
    "cuda.bindings.cydriver",
    "cuda.bindings.cyruntime",
    "cuda.bindings._internal.driver",
    "cuda.bindings._internal.runtime",
    "cuda.bindings._internal.runtime_ptds",
    "cuda.bindings._lib.cyruntime",
    "cuda.bindings._v2.driver",
    "cuda.bindings._bindings.cydriver",  # the layout of older releases
    "cuda.bindings._bindings.cyruntime",
    "cuda.bindings._bindings.cyruntime_ptds",
    "cuda.ccuda",
    "cuda.ccudart",
    "cuda._cuda",
    "cuda._lib.ccudart",
)
# Compiled modules that load cuda-python's own driver module (for helper types) and never call
# the driver: they load with cuda-python's modules in place of the swapped names.
LOCAL_DRIVER_USERS = (
    "cuda.bindings.nvrtc",
    "cuda.bindings.nvjitlink",
    "cuda.bindings.nvvm",
    "cuda.bindings.nvfatbin",
    "cuda.bindings._v2.nvrtc",
    "cuda.nvrtc",
)
PACKAGES = ("cuda", "cuda.bindings")


def _is_native(name: str) -> bool:
    return any(name == n or name.startswith(n + ".") for n in NATIVE_BINDINGS)


def _swapped(name: str) -> bool:
    """A name that means a remote module or a stand-in here, cuda-python's module otherwise."""
    return name in REMOTE_MODULES or _is_native(name)


def _swapped_in(modules: Iterable[str]) -> list[str]:
    return [name for name in modules if _swapped(name)]


def _bind(name: str, module: types.ModuleType | None) -> None:
    """Set (or, for None, remove) `module` as the attribute of its parent package."""
    parent_name, _, child = name.rpartition(".")
    parent = sys.modules.get(parent_name)
    if parent is None:
        return
    if module is not None:
        setattr(parent, child, module)
    elif child in vars(parent):
        delattr(parent, child)


def _show(modules: Mapping[str, types.ModuleType]) -> None:
    """Put modules into sys.modules and onto their parents, parents first."""
    for name in sorted(modules, key=lambda n: n.count(".")):
        sys.modules[name] = modules[name]
        _bind(name, modules[name])


def _take(names: Iterable[str]) -> dict[str, types.ModuleType]:
    """Remove modules from sys.modules and from their parents; return them."""
    taken = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    for name in taken:
        _bind(name, None)
    return taken


def _is_ours(module: types.ModuleType) -> bool:
    return hasattr(module, "__cricket_remote__") or isinstance(
        getattr(module, "__loader__", None), (_NativeStandInLoader, _StandInLoader)
    )


class RemoteModuleLoader(importlib.abc.Loader):
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


class _NativeStandInLoader(importlib.abc.Loader):
    """A module in place of a native driver or runtime binding: every attribute raises."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__

        def __getattr__(attr: str) -> Any:
            raise NotSupportedRemotely(
                f"{name}.{attr} is not supported remotely: {name} is cuda-python's native "
                f"binding of this machine's CUDA driver, which would run the work on a local "
                f"GPU; use cuda.bindings.driver and cuda.bindings.runtime, or run the program "
                f"through the native door, where compiled code reaches the remote GPU too "
                f"(cricket-run -- python3 PROGRAM)"
            )

        setattr(module, "__getattr__", __getattr__)  # noqa: B010  (a module's own hook)
        module.__doc__ = f"Stand-in for {name} under cricket-run: any use raises."


class _LocalLoader(importlib.abc.Loader):
    """Loads a module of LOCAL_DRIVER_USERS with cuda-python's own driver and runtime modules
    in place while it initializes (see RemoteCudaFinder.local_cuda)."""

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
    """Answers the names of REMOTE_MODULES and NATIVE_BINDINGS; stands in for missing `cuda`
    packages; loads LOCAL_DRIVER_USERS with cuda-python's modules in place (_LocalLoader)."""

    def __init__(self) -> None:
        self._local_depth = 0
        # cuda-python's own modules of swapped names, kept aside while the remote ones are in
        # place (a compiled module cannot load twice in a process)
        self._local_modules: dict[str, types.ModuleType] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if self._local_depth:
            return None  # inside a LOCAL_DRIVER_USERS module's import: everything is local
        remote = REMOTE_MODULES.get(fullname)
        if remote is not None:
            return importlib.util.spec_from_loader(fullname, RemoteModuleLoader(remote))
        if fullname in PACKAGES:
            if importlib.machinery.PathFinder.find_spec(fullname, path) is not None:
                return None  # the installed package
            return importlib.util.spec_from_loader(fullname, _StandInLoader(), is_package=True)
        if _is_native(fullname):
            return self._native_stand_in(fullname, path)
        if fullname in LOCAL_DRIVER_USERS:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is not None and spec.loader is not None:
                spec.loader = _LocalLoader(spec.loader, self)
            return spec
        return None  # everything else loads as usual and sees the remote modules

    @staticmethod
    def _native_stand_in(
        fullname: str, path: Sequence[str] | None
    ) -> importlib.machinery.ModuleSpec | None:
        real = importlib.machinery.PathFinder.find_spec(fullname, path)
        if real is None:
            return None  # not installed here: a missing module, as without cricket-run
        locations = real.submodule_search_locations
        spec = importlib.util.spec_from_loader(
            fullname, _NativeStandInLoader(), is_package=locations is not None
        )
        if spec is not None and locations is not None:
            spec.submodule_search_locations = list(locations)
        return spec

    @contextlib.contextmanager
    def local_cuda(self) -> Iterator[None]:
        """Within the block, the swapped names are cuda-python's own modules."""
        if self._local_depth:
            self._local_depth += 1
            try:
                yield
            finally:
                self._local_depth -= 1
            return
        ours = _take(_swapped_in(list(sys.modules)))
        _show(self._local_modules)
        self._local_depth = 1
        try:
            yield
        finally:
            self._local_depth = 0
            self._local_modules.update(_take(_swapped_in(list(sys.modules))))
            _show(ours)
            self._reattach(ours)

    def _reattach(self, ours: Mapping[str, types.ModuleType]) -> None:
        """A driver or runtime module that cuda-python loaded for itself is an attribute of
        its package without cricket-run: make the remote one that attribute."""
        for name in REMOTE_MODULES:
            parent = name.rpartition(".")[0]
            if name in self._local_modules and name not in ours and parent in sys.modules:
                importlib.import_module(name)

    def keep_local(self, modules: Mapping[str, types.ModuleType]) -> None:
        """Put cuda-python's modules of swapped names aside (they were imported earlier)."""
        self._local_modules.update(modules)

    def restore_local(self) -> None:
        """Put cuda-python's modules of swapped names back (uninstall)."""
        _show(self._local_modules)
        self._local_modules.clear()


def _installed() -> RemoteCudaFinder | None:
    return next((f for f in sys.meta_path if isinstance(f, RemoteCudaFinder)), None)


def install(address: str | None = None) -> None:
    """Make `cuda.bindings.driver/runtime` and `cuda.cuda/cudart` the remote modules from
    now on in this process; `address` (host:port) sets the server (else REMOTE_GPU_ADDRESS)."""
    if address:
        os.environ[ADDRESS_ENV] = address
    finder = _installed()
    if finder is None:
        finder = RemoteCudaFinder()
        sys.meta_path.insert(0, finder)
    taken = _take(_swapped_in(list(sys.modules)))
    finder.keep_local({n: m for n, m in taken.items() if not _is_ours(m)})


def uninstall() -> None:
    """Undo install(): the names are cuda-python's modules again (those imported before, or
    looked up normally on their next import)."""
    finder = _installed()
    if finder is not None:
        sys.meta_path.remove(finder)
    _take(_swapped_in(list(sys.modules)))
    if finder is not None:
        finder.restore_local()
    for name in PACKAGES:
        module = sys.modules.get(name)
        if module is not None and isinstance(getattr(module, "__loader__", None), _StandInLoader):
            del sys.modules[name]
