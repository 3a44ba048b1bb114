"""Build the native `libcuda.so.1` with cffi's embedding mode and gcc.

    python -m cricket_client.native.build [DIRECTORY]

The library links this interpreter's libpython, so it is built once per Python minor version,
into `cricket_client/native/_lib/cpXY/` (or DIRECTORY). Needs cffi, setuptools, gcc and the
Python headers (Debian: python3-dev); no CUDA toolkit, driver or header.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["build", "compile_library", "is_current", "main", "source_fingerprint"]

MODULE = "_cricket_libcuda"
SONAME = "libcuda.so.1"
FINGERPRINT = SONAME + ".sources"  # next to the library: what it was built from
NATIVE_DIR = Path(__file__).resolve().parent

# Runs once, in the interpreter that calls the library first: the running one in a Python
# program, or one the library starts in any other program.
INIT_CODE = """
import os, site, sys
_was = os.environ.pop("CRICKET_NATIVE_PYTHONPATH", None)
if _was is not None:  # PYTHONPATH as the program had it (see signatures.c_source)
    if os.environ.pop("CRICKET_NATIVE_PYTHONPATH_UNSET", None):
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = _was
for _path in os.environ.get("CRICKET_NATIVE_PATH", "").split(os.pathsep):
    if _path:
        site.addsitedir(_path)  # its .pth files too (editable installs), even if on sys.path
from cricket_client.native import entries
entries.start()
"""


def source_facts(enums: Any) -> tuple[dict[int, str], dict[int, str], str]:
    """What the C source is made from besides the signatures: CUresult names and strings of
    the generated enums module `enums`, and the soname of this interpreter's libpython."""
    names = {int(e): e.name for e in enums.CUresult}
    texts = {code: enums.ERROR_STRINGS.get(code) or "" for code in names}
    soname = sysconfig.get_config_var("INSTSONAME") or ""
    if ".so" not in soname:
        soname = f"libpython{sysconfig.get_config_var('VERSION')}.so.1.0"
    return names, texts, soname


def _link_args() -> list[str]:
    # nodelete: a dlclose (the CUDA runtime closes the driver when its start fails) must never
    # unmap code the interpreter still calls (atexit, callbacks)
    args = [f"-Wl,-soname,{SONAME}", "-Wl,-z,nodelete"]
    libdir = sysconfig.get_config_var("LIBDIR")
    if libdir and sysconfig.get_config_var("Py_ENABLE_SHARED"):
        args.append(f"-Wl,-rpath,{libdir}")
    return args


def build(directory: Path) -> Path:
    """Build the library into `directory`; its path."""
    from .. import _enums
    from . import export_tables
    from .signatures import c_source, python_declarations

    cdef = python_declarations() + export_tables.CDEF
    source = c_source(*source_facts(_enums)) + "\n" + export_tables.c_source()
    return compile_library(directory, cdef, source)


def compile_library(directory: Path, cdef: str, source: str) -> Path:
    """Compile the library from its cffi declarations and C source (only the standard library
    and cffi are imported here: setup.py calls it before the package's dependencies exist)."""
    import cffi

    ffi = cffi.FFI()
    ffi.embedding_api("")
    ffi.cdef(cdef)
    ffi.set_source(
        MODULE,
        source,
        extra_compile_args=["-O2", "-fvisibility=hidden"],
        extra_link_args=_link_args(),
    )
    ffi.embedding_init_code(INIT_CODE)
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cricket-native-") as tmp:
        built = ffi.compile(tmpdir=tmp, target=SONAME, verbose=bool(os.environ.get("CRICKET_NATIVE_VERBOSE")))
        target = directory / SONAME
        partial = directory / (SONAME + ".tmp")
        shutil.copyfile(built, partial)
        os.chmod(partial, 0o755)
        os.replace(partial, target)  # a running program keeps the old file
    (directory / FINGERPRINT).write_text(source_fingerprint() + "\n")
    link_unversioned_name(directory)
    return target


def source_fingerprint(native_dir: Path = NATIVE_DIR) -> str:
    """A digest of what the library is made from (this package's Python, which writes its C
    and implements its entries, and the client's error names): a library built from other
    sources would fail to start, or expect other entries."""
    digest = hashlib.sha256()
    for path in sorted([*native_dir.glob("*.py"), native_dir.parent / "_enums.py"]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def is_current(library: Path, native_dir: Path = NATIVE_DIR) -> bool:
    """Whether `library` was built from the sources in `native_dir` as they are now."""
    try:
        return (library.parent / FINGERPRINT).read_text().strip() == source_fingerprint(native_dir)
    except OSError:
        return False


def link_unversioned_name(directory: Path) -> None:
    """`libcuda.so` -> `libcuda.so.1` next to it: programs that load the driver by the
    unversioned name first (numba-cuda searches "libcuda.so" before "libcuda.so.1") must find
    this library, not the real driver further along the search path."""
    link = directory / "libcuda.so"
    if link.is_symlink() and os.readlink(link) == SONAME:
        return
    partial = directory / "libcuda.so.tmp"
    partial.unlink(missing_ok=True)
    partial.symlink_to(SONAME)
    os.replace(partial, link)


def main(argv: list[str] | None = None) -> int:
    from . import default_library_dir

    args = sys.argv[1:] if argv is None else argv
    directory = Path(args[0]) if args else default_library_dir()
    print(build(directory))
    return 0


if __name__ == "__main__":
    sys.exit(main())
