"""Streams and events of the sim device, with CUDA's ordering rules.

Each stream is a FIFO worked off by a thread of its own that runs only while the stream has
queued work, and lingers for `LINGER_S` after its queue empties so that a loop's next launch
wakes it instead of starting a thread (a start waits for the new thread to run: about 0.1 ms
on a 2-core machine, once per launch on an idle stream); a stream idle longer holds no
thread, so a session's thousands of streams cost threads only for those busy at once (at
most `--max-streams`). A synchronous copy on an idle stream runs on the calling thread
(`SimStream.run`). A work item may also wait for items of other streams (its dependencies,
fixed when it is issued):

- an item on the legacy default stream waits for everything issued before it on every
  blocking stream, and every item on a blocking stream waits for everything issued before
  it on the legacy stream (CU_STREAM_NON_BLOCKING streams take part in neither);
- cuStreamWaitEvent adds an item that waits for the event's last record;
- an event record is an item that stamps the host time when the stream reaches it.

A failing item (a kernel that touched unmapped memory) makes the error sticky for the
context, as on a GPU: later items are skipped and synchronizing calls raise it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from cricket_server.backends.base import CUDA_ERROR_OUT_OF_MEMORY, CudaError

CU_STREAM_NON_BLOCKING = 0x1
CU_EVENT_BLOCKING_SYNC = 0x1
CU_EVENT_DISABLE_TIMING = 0x2
CU_EVENT_INTERPROCESS = 0x4
CUDA_ERROR_LAUNCH_FAILED = 719
LINGER_S = 0.05  # how long a stream's worker waits for more work once its queue is empty


class Work:
    """One queued operation: runs `fn` once every dependency is done."""

    __slots__ = ("deps", "done", "fn")

    def __init__(self, fn: Callable[[], None], deps: list[Work]) -> None:
        self.fn = fn
        self.deps = deps
        self.done = threading.Event()


class Context:
    """What all streams of one device context share: the sticky error and the stream list."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.error: CudaError | None = None
        self.streams: list[SimStream] = []
        self.cancelled = threading.Event()  # set on close: long-running kernels may stop
        self.lock = threading.Lock()

    def fail(self, error: CudaError) -> None:
        with self.lock:
            if self.error is None:
                self.error = error

    def live(self) -> list[SimStream]:
        """The streams whose workers still run (destroyed ones until their work is done)."""
        with self.lock:
            return list(self.streams)

    def check(self) -> None:
        if self.error is not None:
            raise self.error


class SimStream:
    """A FIFO of work items executed in order by a worker thread, started when work is
    queued on an idle stream; once the queue is empty the worker parks for `LINGER_S` and
    takes the next work handed to it, or ends."""

    def __init__(self, context: Context, flags: int, priority: int, legacy: bool = False) -> None:
        self.context = context
        self.flags = flags
        self.priority = priority
        self.legacy = legacy
        self.tail: Work | None = None
        self._queue: deque[Work] = deque()
        self._lock = threading.Lock()  # guards _queue, _thread, _parked, _closed
        self._wake = threading.Condition(self._lock)  # a parked worker waits here
        self._thread: threading.Thread | None = None  # who works off the queue now
        self._parked: threading.Thread | None = None  # a worker waiting for work, not working
        self._last: threading.Thread | None = None  # the latest worker (for join)
        self._closed = False
        with context.lock:
            context.streams.append(self)

    @property
    def blocking(self) -> bool:
        return not self.legacy and not self.flags & CU_STREAM_NON_BLOCKING

    def _deps(self, extra_deps: list[Work] | None) -> list[Work]:
        deps = list(extra_deps or ())
        if self.legacy:
            deps += [s.tail for s in self.context.live() if s.blocking and s.tail is not None]
        elif self.blocking:
            deps += [s.tail for s in self.context.live() if s.legacy and s.tail is not None]
        return [d for d in deps if not d.done.is_set()]

    def submit(self, fn: Callable[[], None], extra_deps: list[Work] | None = None) -> Work:
        """Queue `fn` behind everything CUDA orders it after; return its work item."""
        work = Work(fn, self._deps(extra_deps))
        with self._lock:
            self._queue.append(work)
            if self._thread is None:
                self._start_worker()
        self.tail = work
        return work

    def run(self, fn: Callable[[], None]) -> None:
        """`fn` in stream order, done on return (a synchronous copy). When nothing is queued
        here and nothing it must follow is pending, it runs on the calling thread (no worker
        to start and wake); work queued meanwhile waits for it."""
        deps = self._deps(None)
        with self._lock:
            inline = self._thread is None and not self._queue and not deps
            if inline:
                work = Work(fn, [])
                self._thread = threading.current_thread()  # later submits queue behind it
                self.tail = work
        if not inline:
            self.submit(fn).done.wait()
            return
        closed = False
        try:
            self._execute(fn)
        finally:
            work.done.set()
            with self._lock:
                self._thread = None
                if self._queue:
                    self._start_worker()
                else:
                    closed = self._closed
        if closed:
            self._retire()

    def _start_worker(self) -> None:
        """Hand the queue to the parked worker, or start one (under `_lock`)."""
        parked = self._parked
        if parked is not None:
            self._parked = None
            self._thread = parked
            self._wake.notify()
            return
        thread = threading.Thread(
            target=self._run, name=f"sim-stream-{self.context.name}", daemon=True
        )
        self._thread = thread
        try:
            thread.start()
        except RuntimeError as exc:  # out of threads: the work is not queued
            self._thread = None
            self._queue.pop()
            raise CudaError(
                CUDA_ERROR_OUT_OF_MEMORY, f"sim: no thread to run the stream's work ({exc})"
            ) from None
        self._last = thread

    def idle(self) -> bool:
        return self.tail is None or self.tail.done.is_set()

    def wait(self) -> None:
        if self.tail is not None:
            self.tail.done.wait()

    def close(self) -> None:
        """Leave the context once the queued work is done (cuStreamDestroy does not wait).

        The stream stays in the context's list until then, so cuCtxSynchronize and the
        legacy stream still wait for its queued work."""
        with self._lock:
            self._closed = True
            idle = self._thread is None
            self._dismiss()
        if idle:
            self._retire()

    def join(self) -> None:
        """Wait until the queued work is done and the worker thread has ended (a parked
        worker ends at once)."""
        with self._lock:
            self._dismiss()
            thread = self._last
        if thread is not None:
            thread.join()

    def _dismiss(self) -> None:
        """Let a parked worker end now (under `_lock`)."""
        if self._parked is not None:
            self._parked = None
            self._wake.notify()

    def _retire(self) -> None:
        with self.context.lock:
            if self in self.context.streams:
                self.context.streams.remove(self)

    def _execute(self, fn: Callable[[], None]) -> None:
        """Run one item unless the context failed; its failure becomes the context's."""
        if self.context.error is None:
            try:
                fn()
            except CudaError as exc:
                self.context.fail(exc)
            except Exception as exc:  # a bug in a host kernel: report, keep the worker
                self.context.fail(
                    CudaError(
                        CUDA_ERROR_LAUNCH_FAILED,
                        f"sim: work item failed with {type(exc).__name__}: {exc}",
                    )
                )

    def _run(self) -> None:
        me = threading.current_thread()
        while True:
            with self._lock:
                if not self._queue and not self._park(me):
                    closed = self._closed
                    break
                work = self._queue.popleft()
            for dep in work.deps:
                dep.done.wait()
            self._execute(work.fn)
            work.done.set()
        if closed:
            self._retire()

    def _park(self, me: threading.Thread) -> bool:
        """The queue is empty (under `_lock`): give the queue up, wait up to `LINGER_S` to
        be handed it again; False when the worker is to end."""
        self._thread = None
        if self._closed:
            return False
        self._parked = me
        self._wake.wait(LINGER_S)
        if self._thread is me:  # handed new work
            return True
        if self._parked is me:  # nobody came
            self._parked = None
        return False


class SimEvent:
    """An event: the work item of its last record and the host time stamped there."""

    def __init__(self, flags: int) -> None:
        self.flags = flags
        self.record: Work | None = None
        self._stamp: dict[str, float] = {}

    @property
    def timing(self) -> bool:
        return not self.flags & CU_EVENT_DISABLE_TIMING

    @property
    def time(self) -> float | None:
        """perf_counter() seconds when the stream reached the last record, or None."""
        return self._stamp.get("t")

    def record_on(self, stream: SimStream) -> None:
        stamp: dict[str, float] = {}

        def stamp_time() -> None:
            stamp["t"] = time.perf_counter()

        self._stamp = stamp
        self.record = stream.submit(stamp_time)

    def done(self) -> bool:
        return self.record is None or self.record.done.is_set()

    def wait(self) -> None:
        if self.record is not None:
            self.record.done.wait()
