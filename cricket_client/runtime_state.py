"""What the remote runtime keeps: per thread its device and last error, per connection the
primary contexts it retained.

As the CUDA runtime does, the first call that needs a context uses the context current on the
connection when there is one (a driver program's), else retains the primary context of the
thread's device and makes it current; cudaSetDevice does the same for its device at once. So
driver calls see what the runtime made, and the runtime sees a context the driver made
current. The server keeps one context stack per connection, not per thread: a cudaSetDevice
in one thread moves the others of the same connection too.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field

from . import driver
from ._types import CUcontext, CUdevice, CUkernel, as_int
from .connection import Connection

__all__ = ["ThreadState", "ConnectionState", "thread_state", "connection_state", "activate"]


# Errors that leave the CUDA context unusable: every later call fails with them, and
# cudaGetLastError cannot clear them (the session must end, as a local process must exit).
STICKY_ERRORS = frozenset({214, 700, 714, 715, 716, 717, 718, 719})


class ThreadState(threading.local):
    """The calling thread's runtime state (CUDA keeps both per thread)."""

    def __init__(self) -> None:
        self.device = 0
        self._last_error = 0
        self._sticky: tuple[weakref.ref[Connection], int] | None = None

    def record(self, code: int, conn: Connection | None) -> None:
        """A failed call: its error becomes the last error; a sticky one stays with `conn`."""
        self._last_error = code
        if code in STICKY_ERRORS and conn is not None:
            self._sticky = (weakref.ref(conn), code)

    def sticky(self) -> int:
        """The sticky error of a session still open, else 0."""
        if self._sticky is None:
            return 0
        ref, code = self._sticky
        conn = ref()
        if conn is None or conn.closed:
            self._sticky = None
            return 0
        return code

    def peek(self) -> int:
        return self._last_error or self.sticky()

    def take(self) -> int:
        """The last error, reset to success (or to the sticky error, which stays)."""
        code = self.peek()
        self._last_error = 0
        return code


@dataclass
class ConnectionState:
    """The runtime's state on one connection."""

    initialized: bool = False
    ready: bool = False
    primary: dict[int, CUcontext] = field(default_factory=dict)
    functions: dict[tuple[int, int], int] = field(default_factory=dict)  # (kernel, dev) -> fn
    lock: threading.RLock = field(default_factory=threading.RLock)


_thread = ThreadState()
_connections: weakref.WeakKeyDictionary[Connection, ConnectionState] = weakref.WeakKeyDictionary()
_connections_lock = threading.Lock()


def thread_state() -> ThreadState:
    return _thread


def connection_state(conn: Connection) -> ConnectionState:
    with _connections_lock:
        state = _connections.get(conn)
        if state is None:
            state = _connections[conn] = ConnectionState()
        return state


def initialize(conn: Connection) -> int:
    """cuInit once per connection; the CUresult."""
    state = connection_state(conn)
    if state.initialized:
        return 0
    with conn.active():
        (err,) = driver.cuInit(0)
    if not err:
        state.initialized = True
    return int(err)


def activate(conn: Connection, dev: int | None = None) -> int:
    """Make a context current for the runtime; the CUresult. With `dev`, that device's primary
    context (cudaSetDevice); without, the current context if any, else the thread's device's
    primary context, once per connection."""
    state = connection_state(conn)
    if dev is None and state.ready:
        return 0
    with state.lock, conn.active():
        err = initialize(conn)
        if err:
            return err
        if dev is None:
            err, current = driver.cuCtxGetCurrent()
            if err:
                return int(err)
            if as_int(current):
                err, device = driver.cuCtxGetDevice()
                if err:
                    return int(err)
                _thread.device = as_int(device)
                state.ready = True
                return 0
            dev = _thread.device
        ctx = state.primary.get(dev)
        if ctx is None:
            err, retained = driver.cuDevicePrimaryCtxRetain(CUdevice(dev))
            if err or retained is None:
                return int(err)
            ctx = state.primary[dev] = retained
        (err,) = driver.cuCtxSetCurrent(ctx)
        if err:
            return int(err)
        _thread.device = dev
        state.ready = True
        return 0


def kernel_function(conn: Connection, kernel: int) -> tuple[int, int]:
    """(CUresult, function handle) of a library kernel in the runtime's current context."""
    state = connection_state(conn)
    key = (kernel, _thread.device)
    func = state.functions.get(key)
    if func is not None:
        return 0, func
    with conn.active():
        err, fn = driver.cuKernelGetFunction(CUkernel(kernel))
    if err:
        return int(err), 0
    state.functions[key] = as_int(fn)
    return 0, as_int(fn)


def forget_functions(conn: Connection) -> None:
    """After cudaDeviceReset or a library unload: kernel functions are looked up again."""
    connection_state(conn).functions.clear()
