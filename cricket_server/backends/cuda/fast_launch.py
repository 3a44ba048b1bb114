"""The launches of a CU_LAUNCH_KERNEL_BATCH made by a C loop (`fast_launch.c`; the same library's
loop for CU_GRAPH_LAUNCH_BATCH is driven by `fast_graph_launch`).

Per launch the Python path costs more than the driver's own cuLaunchKernel (a tuple to
unpack, two lookups, the parameter copy and cuda-python's conversion of eleven arguments).
Here the batch's record goes to `cricket_launch_batch` whole: the session resolves each
function and stream handle once (its checks, its errors) into small tables, kept from batch
to batch until the session removes a handle or unloads a module (a framework's loop sends
one launch a batch: resolving it again each time cost more than the launch), and
the loop copies each launch's parameters and calls the driver's cuLaunchKernel directly (the
same libcuda.so.1 as cuda-python's, so the same current context). A launch the tables do not
cover, or a failed one, comes back to the caller at its index.

The C file is compiled once per source (its SHA-256 names the library) with the C compiler
(`CC`, else `cc`) into the user's cache folder (`$XDG_CACHE_HOME/cricket-server`, else
~/.cache/cricket-server, made private), used only when that folder is the user's own and
private. Without a compiler, or with CRICKET_FAST_LAUNCH=0, `load()` answers None and the
launches take the Python path; nothing else changes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..base import CudaError

__all__ = ["ENV", "FastLauncher", "StreamTable", "load"]

log = logging.getLogger(__name__)

ENV = "CRICKET_FAST_LAUNCH"
# Tables kept from batch to batch are searched linearly per launch: past this many entries
# they are emptied and filled again with what the next batch uses.
TABLE_KEEP_MAX = 32
SOURCES = (
    Path(__file__).with_name("fast_launch.c"),
    Path(__file__).with_name("launch_replay.c"),  # launch_replay.py's graphs of repeated batches
)
HEADERS = (Path(__file__).with_name("launch_record.h"),)  # what both read: in the library's name
CDEF = """
typedef int (*cricket_launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shared, void *stream,
                                 void **params, void **extra);
typedef struct { uint64_t handle; void *func; void **params; unsigned char *data;
                 uint64_t size; } cricket_fn;
typedef struct { uint64_t handle; void *stream; } cricket_stream;
uint32_t cricket_launch_batch(cricket_launch_fn launch, const unsigned char *body, size_t len,
                              uint32_t start, const cricket_fn *fns, uint32_t nfns,
                              const cricket_stream *streams, uint32_t nstreams, int *err);
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *stream, void **params, void **extra);

typedef int (*cricket_graph_launch_fn)(void *exec, void *stream);
typedef int (*cricket_copy_fn)(uint64_t dst, const void *src, size_t n, void *stream);
typedef int (*cricket_record_fn)(void *event, void *stream);
typedef int (*cricket_event_fn)(void *event);
typedef struct { cricket_graph_launch_fn launch; cricket_copy_fn copy; cricket_record_fn record;
                 cricket_event_fn query; cricket_event_fn wait; } cricket_graph_driver;
typedef struct { uint64_t handle; void *ahead; } cricket_graph;
uint32_t cricket_graph_launch_batch(const cricket_graph_driver *drv, const unsigned char *body,
                                    size_t len, uint32_t start, const cricket_graph *graphs,
                                    uint32_t ngraphs, const cricket_stream *streams,
                                    uint32_t nstreams, int *err);
int cuGraphLaunch(void *exec, void *stream);
int cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t n, void *stream);
int cuEventRecord(void *event, void *stream);
int cuEventQuery(void *event);
int cuEventSynchronize(void *event);

typedef struct { void *func; unsigned gx, gy, gz, bx, by, bz, shared; void **params;
                 void **extra; void *kern; void *ctx; } cricket_kernel_node;
typedef struct {
    int (*is_capturing)(void *stream, int *status);
    int (*create)(void **graph, unsigned flags);
    int (*add_kernel)(void **node, void *graph, void *const *deps, size_t ndeps,
                      const cricket_kernel_node *p);
    int (*instantiate)(void **exec, void *graph, unsigned long long flags);
    int (*set_kernel)(void *exec, void *node, const cricket_kernel_node *p);
    int (*launch)(void *exec, void *stream);
    int (*destroy_exec)(void *exec);
    int (*destroy_graph)(void *graph);
} cricket_replay_driver;
typedef struct { unsigned char *record; size_t len; uint32_t count; void *graph; void *exec;
                 void *stream; void **nodes; cricket_fn *fns; }
    cricket_replay;
int cricket_batch_same_shape(const unsigned char *a, const unsigned char *b, size_t len);
int cricket_replay_build(const cricket_replay_driver *drv, cricket_replay *r,
                         const unsigned char *body, size_t len, const cricket_fn *fns,
                         uint32_t nfns, const cricket_stream *streams, uint32_t nstreams);
int cricket_replay_launch(const cricket_replay_driver *drv, cricket_replay *r,
                          const unsigned char *body, size_t len);
void cricket_replay_free(const cricket_replay_driver *drv, cricket_replay *r);
int cuStreamIsCapturing(void *stream, int *status);
int cuGraphCreate(void **graph, unsigned flags);
int cuGraphAddKernelNode_v2(void **node, void *graph, void *const *deps, size_t ndeps,
                            const cricket_kernel_node *p);
int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags);
int cuGraphExecKernelNodeSetParams_v2(void *exec, void *node, const cricket_kernel_node *p);
int cuGraphExecDestroy(void *exec);
int cuGraphDestroy(void *graph);
"""
_loaded: list[Any] = []  # [(ffi, library)] once tried; [None] when it cannot be had


def _cache_dir() -> Path | None:
    """The private folder the library is kept in, or None when it is not safe to use."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "cricket-server"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.stat()
    except OSError as exc:
        log.info("fast launches off: no cache folder (%s)", exc)
        return None
    if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        log.info("fast launches off: %s is not this user's private folder", folder)
        return None
    return folder


def _compiled(sources: tuple[Path, ...], folder: Path) -> Path | None:
    """The library built from `sources` in `folder` (built now if missing)."""
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in (*sources, *HEADERS)))
    target = folder / f"fast_launch-{digest.hexdigest()[:20]}.so"
    if target.exists():
        return target
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        log.info("fast launches off: no C compiler")
        return None
    fd, tmp = tempfile.mkstemp(prefix=".fast_launch-", suffix=".so", dir=folder)
    os.close(fd)
    try:
        subprocess.run(
            [cc, "-O2", "-shared", "-fPIC", "-o", tmp, *map(str, sources)],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        os.replace(tmp, target)  # whole or not at all, whoever builds it at the same time
    except (OSError, subprocess.SubprocessError) as exc:
        log.info("fast launches off: the C loop did not build (%s)", exc)
        return None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def load() -> tuple[Any, Any] | None:
    """(ffi, library) of the C loop, or None (off, or it cannot be built here); built and
    opened once per process."""
    if os.environ.get(ENV, "1").strip() == "0":
        return None
    if not _loaded:
        _loaded.append(_open())
    return _loaded[0]  # type: ignore[no-any-return]


def _open() -> tuple[Any, Any] | None:
    try:
        import cffi

        folder = _cache_dir()
        path = _compiled(SOURCES, folder) if folder is not None else None
        if path is None:
            return None
        ffi = cffi.FFI()
        ffi.cdef(CDEF)
        return ffi, ffi.dlopen(str(path))
    except (ImportError, OSError) as exc:
        log.info("fast launches off: %s", exc)
        return None


class StreamTable:
    """The streams table of a C loop: each stream handle of a batch and its CUstream
    (`stream(obj)` gives a backend stream's)."""

    def __init__(self, ffi: Any, stream: Callable[[Any], int] | None) -> None:
        self._ffi = ffi
        self._stream = stream
        self._err = ffi.new("int *")

    def reset(self) -> None:
        """An empty table (a new batch: handles may mean other objects than in the last)."""
        self._streams: list[tuple[int, int]] = []
        self._stream_array: Any = self._ffi.NULL
        self.stream_handles: set[int] = set()

    def add_stream(self, handle: int, obj: Any) -> None:
        """A stream handle and its backend stream."""
        assert self._stream is not None
        self.add_stream_raw(handle, self._stream(obj))

    def add_stream_raw(self, handle: int, stream: int) -> None:
        """A stream handle and its CUstream."""
        self._streams.append((handle, stream))
        self.stream_handles.add(handle)
        array = self._ffi.new("cricket_stream[]", len(self._streams))
        for slot, (h, s) in zip(array, self._streams, strict=True):
            slot.handle, slot.stream = h, self._ffi.cast("void *", s)
        self._stream_array = array


class FastLauncher(StreamTable):
    """The C loop for one batch at a time, with the tables it reads (see the module doc).

    `launch` is the driver's cuLaunchKernel as a C function pointer (`driver_launch`), or a
    stand-in of the same type in tests; `describe(code)` names a CUresult; `function(obj)`
    gives a backend function's (CUfunction, kernelParams, parameter memory, size) and
    `stream(obj)` a backend stream's CUstream."""

    def __init__(
        self,
        ffi: Any,
        lib: Any,
        launch: Any,
        describe: Callable[[int], str] = str,
        *,
        function: Callable[[Any], tuple[int, int, int, int]] | None = None,
        stream: Callable[[Any], int] | None = None,
    ) -> None:
        super().__init__(ffi, stream)
        self._run = lib.cricket_launch_batch
        self._launch = launch
        self._describe = describe
        self._function = function
        self.reset()

    def reset(self) -> None:
        """Empty tables (a new batch: handles may mean other objects than in the last)."""
        super().reset()
        self._fns: list[tuple[int, int, int, int, int]] = []
        self._fn_array: Any = self._ffi.NULL
        self.function_handles: set[int] = set()
        self.kept: object = None  # the token under which the tables were filled

    def keep_for(self, token: object) -> None:
        """Keep the tables when `token` is the one they were filled under (the caller's word
        that their handles still name the same objects) and they are small enough to search
        per launch; else empty them. Either way they are filled under `token` from now on."""
        full = len(self._fns) + len(self._streams) > TABLE_KEEP_MAX
        if token is None or token != self.kept or full:
            self.reset()
        self.kept = token

    def add_function(self, handle: int, obj: Any) -> None:
        """A function handle and its backend function (`function` says what the loop needs)."""
        assert self._function is not None
        self.add_function_raw(handle, *self._function(obj))

    def add_function_raw(self, handle: int, func: int, params: int, data: int, size: int) -> None:
        """A function handle: its CUfunction, kernelParams, parameter memory and size."""
        self._fns.append((handle, func, params, data, size))
        self.function_handles.add(handle)
        array = self._ffi.new("cricket_fn[]", len(self._fns))
        for slot, (h, f, p, d, n) in zip(array, self._fns, strict=True):
            slot.handle, slot.size = h, n
            slot.func = self._ffi.cast("void *", f)
            slot.params = self._ffi.cast("void **", p)
            slot.data = self._ffi.cast("unsigned char *", d)
        self._fn_array = array

    def tables(self) -> tuple[tuple[Any, int], tuple[Any, int]]:
        """(functions, count) and (streams, count): the tables as the C functions take them."""
        return (self._fn_array, len(self._fns)), (self._stream_array, len(self._streams))

    def run(self, body: Any, start: int) -> tuple[int, int]:
        """Launch from `start` on: (index of the first launch not made, its CUresult or 0)."""
        data = self._ffi.from_buffer(body)
        index = self._run(
            self._launch, data, len(data), start, self._fn_array, len(self._fns),
            self._stream_array, len(self._streams), self._err,
        )  # fmt: skip
        return int(index), int(self._err[0])

    def error(self, code: int) -> CudaError:
        """The CudaError of a launch the driver refused with `code`."""
        return CudaError(code, f"cuLaunchKernel: {self._describe(code)}")


_LIBRARIES: list[Any] = []


def driver_functions(ffi: Any, ctype: str, functions: tuple[tuple[str, str], ...]) -> Any:
    """A new `ctype` struct whose fields hold the driver's functions (`functions`: (field,
    function name) pairs), from the driver library cuda-python uses (loaded once per process:
    one library, one current context; it stays open with the process)."""
    libcuda = ffi.dlopen("libcuda.so.1")
    table = ffi.new(f"{ctype} *")
    for field, name in functions:
        setattr(table, field, ffi.addressof(libcuda, name))
    _LIBRARIES.append(libcuda)
    return table


def driver_launch(ffi: Any) -> Any:
    """cuLaunchKernel of the driver library cuda-python uses (the process has it loaded
    once: one library, one current context), as a cricket_launch_fn."""
    libcuda = ffi.dlopen("libcuda.so.1")
    return ffi.cast("cricket_launch_fn", ffi.addressof(libcuda, "cuLaunchKernel"))
