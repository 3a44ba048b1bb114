"""The device memory this client knows to be allocated, so a small synchronous host-to-device
copy into it can go without waiting for its reply (D6: whatever the client can check locally
it checks before sending).

Only what the client saw allocated is known: cuMemAlloc, cuMemAllocPitch, module globals.
Anything that may end or change it forgets conservatively: a free names the allocation's
base (forgotten when the call is made, even stream-ordered); a module or library unload and
any change of contexts (create, destroy, set, push, pop, primary release/reset) forget
everything, as does a reconnect to a restored session. A copy whose bytes are not wholly inside one known allocation takes the
synchronous path and gets CUDA's own answer at once.
"""

from __future__ import annotations

import bisect
import threading
from typing import Any

__all__ = ["AllocationBook", "MEMORY_CALLS"]

_FORGET_ALL = frozenset({
    "CU_CTX_CREATE", "CU_CTX_DESTROY", "CU_CTX_SET_CURRENT", "CU_CTX_PUSH_CURRENT",
    "CU_CTX_POP_CURRENT", "CU_DEVICE_PRIMARY_CTX_RELEASE", "CU_DEVICE_PRIMARY_CTX_RESET",
    "CU_MODULE_UNLOAD", "CU_LIBRARY_UNLOAD",
})
_FREES = frozenset({"CU_MEM_FREE", "CU_MEM_FREE_ASYNC"})
_ALLOCATIONS = frozenset({"CU_MEM_ALLOC", "CU_MEM_ALLOC_PITCH", "CU_MODULE_GET_GLOBAL"})
MEMORY_CALLS = _FORGET_ALL | _FREES | _ALLOCATIONS
"""Procedures the book watches (`AllocationBook.before` / `.after`)."""


class AllocationBook:
    """Known allocations as sorted, non-overlapping [base, base + size) ranges."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bases: list[int] = []
        self._ends: list[int] = []

    def __len__(self) -> int:
        return len(self._bases)

    def add(self, base: int, size: int) -> None:
        """Remember [base, base + size); an overlapping older entry is forgotten."""
        if size <= 0:
            return
        with self._lock:
            end = base + size
            i = bisect.bisect_left(self._bases, base)
            lo = i - 1 if i and self._ends[i - 1] > base else i
            hi = bisect.bisect_left(self._bases, end, lo)
            self._bases[lo:hi] = [base]
            self._ends[lo:hi] = [end]

    def remove(self, base: int) -> None:
        """Forget the allocation starting at `base` (nothing if unknown)."""
        with self._lock:
            i = bisect.bisect_left(self._bases, base)
            if i < len(self._bases) and self._bases[i] == base:
                del self._bases[i], self._ends[i]

    def before(self, proc: str, args: tuple[Any, ...]) -> None:
        """A MEMORY_CALLS procedure is about to be sent: forget what it may end."""
        if proc in _FREES:
            self.remove(int(args[0]))
        elif proc in _FORGET_ALL:
            self.clear()

    def after(self, proc: str, args: tuple[Any, ...], reply: Any) -> None:
        """A MEMORY_CALLS procedure succeeded: learn what it allocated."""
        if proc == "CU_MEM_ALLOC":
            self.add(int(reply.value), int(args[0]))
        elif proc == "CU_MEM_ALLOC_PITCH":
            self.add(int(reply.value.ptr), int(reply.value.pitch) * int(args[1]))
        elif proc == "CU_MODULE_GET_GLOBAL":
            self.add(int(reply.value.ptr), int(reply.value.size))

    def clear(self) -> None:
        with self._lock:
            self._bases.clear()
            self._ends.clear()

    def covers(self, ptr: int, size: int) -> bool:
        """Whether [ptr, ptr + size) lies wholly inside one known allocation."""
        i = bisect.bisect_right(self._bases, ptr) - 1
        try:
            return i >= 0 and ptr + size <= self._ends[i]
        except IndexError:  # changed by another thread meanwhile: do not trust it
            return False
