"""The native door (D10): a `libcuda.so.1` whose driver functions are the Python client's.

Programs that reach the GPU through the CUDA driver library (cuda.core, numba-cuda, the CUDA
runtime, C/C++ programs) load it in place of the real driver: `cricket-run -- COMMAND`. It is
built with cffi's embedding mode (cricket_client.native.build), once per Python minor version;
in a Python program it runs in that interpreter, in any other program it starts one.

`library_path()` finds (or builds) it; `native_environment()` is what a program needs to load
it first and find the client's packages.
"""

from __future__ import annotations

import contextlib
import os
import site
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "PATH_ENV",
    "NativeLibraryMissing",
    "default_library_dir",
    "library_path",
    "native_environment",
]

PATH_ENV = "CRICKET_NATIVE_PATH"  # where the library's interpreter finds the client
_TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"
_PACKAGE_DIR = Path(__file__).resolve().parent / "_lib" / _TAG


class NativeLibraryMissing(RuntimeError):
    """The native library is not built for this Python and cannot be built here."""


def default_library_dir() -> Path:
    """Where `make install` and `pip install` put the library for this Python: the package's
    own folder, or a user cache folder where the package's is not writable."""
    if os.access(_PACKAGE_DIR.parent.parent, os.W_OK):
        return _PACKAGE_DIR
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "cricket" / "native" / _TAG


def library_path(build: bool = True) -> Path:
    """The built `libcuda.so.1` for this Python, built first where missing (and `build`)."""
    from .build import is_current

    for folder in (_PACKAGE_DIR, default_library_dir()):
        candidate = folder / "libcuda.so.1"
        if candidate.exists():
            if build and not is_current(candidate) and os.access(folder, os.W_OK):
                # built from other sources (the client changed since): it would not start
                print(f"cricket: rebuilding {candidate} (the client's native sources changed)",
                      file=sys.stderr)
                return _build(folder)
            if not (folder / "libcuda.so").exists():  # built before the name was added
                from .build import link_unversioned_name

                with contextlib.suppress(OSError):  # a read-only install: the build made it
                    link_unversioned_name(folder)
            return candidate
    if not build:
        raise NativeLibraryMissing(
            f"the native libcuda.so.1 is not built for Python {_TAG} "
            "(run: python -m cricket_client.native.build)"
        )
    return _build(default_library_dir())


def _build(folder: Path) -> Path:
    from .build import build as build_library

    try:
        return build_library(folder)
    except Exception as exc:  # the compiler's or cffi's reason, named
        raise NativeLibraryMissing(
            f"cannot build the native libcuda.so.1 for Python {_TAG}: {exc} "
            "(it needs gcc, cffi, setuptools and the Python headers, e.g. python3-dev)"
        ) from exc


def _client_paths() -> list[str]:
    """Folders from which the library's own interpreter imports the client (site folders are
    processed, so editable installs work)."""
    root = str(Path(__file__).resolve().parents[2])
    paths = [root, *site.getsitepackages()]
    user = site.getusersitepackages()
    if isinstance(user, str) and os.path.isdir(user):
        paths.append(user)
    return [p for p in dict.fromkeys(paths) if os.path.isdir(p)]


def native_environment(env: Mapping[str, str] | None = None, library: Path | None = None) -> dict[str, str]:
    """`env` (default: this process's) with the native library first on LD_LIBRARY_PATH, the
    client's folders on CRICKET_NATIVE_PATH and, unless CRICKET_NATIVE_RUNTIME=cudart, the
    folder that makes Python programs' CUDA runtime the client's first on PYTHONPATH
    (runtime_swap). A wrong CRICKET_NATIVE_RUNTIME raises ValueError."""
    from . import runtime_swap

    out = dict(os.environ if env is None else env)
    folder = str((library or library_path()).parent)
    ld = [p for p in out.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p and p != folder]
    out["LD_LIBRARY_PATH"] = os.pathsep.join([folder, *ld])
    known = [p for p in out.get(PATH_ENV, "").split(os.pathsep) if p]
    out[PATH_ENV] = os.pathsep.join(dict.fromkeys([*_client_paths(), *known]))
    startup = str(runtime_swap.STARTUP_DIR)
    python = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p and p != startup]
    if runtime_swap.wanted(out):
        python.insert(0, startup)
    if python:
        out["PYTHONPATH"] = os.pathsep.join(python)
    else:
        out.pop("PYTHONPATH", None)
    return out
