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
from ._types import CUcontext, CUdevice, CUkernel
from .connection import Connection

__all__ = ["ThreadState", "ConnectionState", "thread_state", "connection_state", "activate"]


class ThreadState(threading.local):
    """The calling thread's runtime state (CUDA keeps both per thread)."""

    def __init__(self) -> None:
        self.device = 0
        self.last_error = 0


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
            if int(current):
                err, device = driver.cuCtxGetDevice()
                if err:
                    return int(err)
                _thread.device = int(device)
                state.ready = True
                return 0
            dev = _thread.device
        ctx = state.primary.get(dev)
        if ctx is None:
            err, ctx = driver.cuDevicePrimaryCtxRetain(CUdevice(dev))
            if err:
                return int(err)
            state.primary[dev] = ctx
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
    state.functions[key] = int(fn)
    return 0, int(fn)


def forget_functions(conn: Connection) -> None:
    """After cudaDeviceReset or a library unload: kernel functions are looked up again."""
    connection_state(conn).functions.clear()
