"""setuptools hook: `pip install` from source also builds the native libcuda.so.1 (gcc, cffi,
the Python headers) into cricket_client/native/_lib/cpXY/ (cricket_client.native.build)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> ModuleType:
    """A module of the package loaded by its file (the package's dependencies are not
    installed while it is being built)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _native(module: str) -> ModuleType:
    """A module of cricket_client/native loaded by its file, in a package of its own: its
    relative imports of the other pure-data modules (families, launch_pack, at_exit,
    context_storage, known_context) resolve there."""
    package = "_cricket_build_native"
    if package not in sys.modules:
        folder = ModuleType(package)
        folder.__path__ = [str(HERE / "cricket_client" / "native")]
        sys.modules[package] = folder
    return importlib.import_module(f"{package}.{module}")


class BuildWithNative(build_py):
    def run(self) -> None:
        super().run()
        enums = _load("_cricket_build_enums", HERE / "cricket_client" / "_enums.py")
        signatures = _native("signatures")
        builder = _native("build")
        tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
        folder = Path(self.build_lib) / "cricket_client" / "native" / "_lib" / tag
        tables = _native("export_tables")
        source = signatures.c_source(*builder.source_facts(enums)) + "\n" + tables.c_source()
        try:
            builder.compile_library(folder, signatures.python_declarations() + tables.CDEF, source)
        except Exception as exc:  # the Python-only client installs and works without it
            print(
                f"warning: the native libcuda.so.1 was not built ({exc}); it needs gcc and the "
                "Python headers (Debian: python3-dev). `cricket-run -- COMMAND` builds it on "
                "first use once they are there.",
                file=sys.stderr,
            )


class WithNativeLibrary(Distribution):
    """The wheel holds a library for one Python and platform: it is tagged so."""

    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildWithNative}, distclass=WithNativeLibrary)
