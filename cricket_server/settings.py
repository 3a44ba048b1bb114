"""What a client set on its contexts, functions and streams besides their flags, kept so a
checkpoint can restore it: cache configurations, stream attributes, peer access.

Entries are (handle, what) -> value; peer access is a set of (context, peer context). Handles
are never reused, so an entry of a handle that is gone is dropped when the table is read.

    | what                      | handle   | value                          |
    | CTX_CACHE_CONFIG          | context  | CUfunc_cache                   |
    | FUNC_CACHE_CONFIG         | function | CUfunc_cache                   |
    | STREAM_ATTRIBUTE + id     | stream   | the scalar CUstreamAttrValue   |
    | PEER_ACCESS               | context  | the peer context's handle      |
"""

from __future__ import annotations

from collections.abc import Callable

CTX_CACHE_CONFIG = 1
FUNC_CACHE_CONFIG = 2
PEER_ACCESS = 3
STREAM_ATTRIBUTE = 0x100  # + CUstreamAttrID

Setting = tuple[int, int, int]  # (handle, what, value)


class SettingsTable:
    """One session's settings; see the module docstring."""

    def __init__(self) -> None:
        self._values: dict[tuple[int, int], int] = {}
        self._peers: set[tuple[int, int]] = set()

    def get(self, handle: int, what: int, default: int = 0) -> int:
        return self._values.get((handle, what), default)

    def set(self, handle: int, what: int, value: int) -> None:
        self._values[(handle, what)] = value

    def has_peer(self, ctx: int, peer: int) -> bool:
        return (ctx, peer) in self._peers

    def add_peer(self, ctx: int, peer: int) -> None:
        self._peers.add((ctx, peer))

    def remove_peer(self, ctx: int, peer: int) -> None:
        self._peers.discard((ctx, peer))

    def items(self, live: Callable[[int], bool]) -> list[Setting]:
        """Every setting whose handles are still live, sorted; stale ones are dropped."""
        self._values = {k: v for k, v in self._values.items() if live(k[0])}
        self._peers = {p for p in self._peers if live(p[0]) and live(p[1])}
        found = [(h, what, v) for (h, what), v in self._values.items()]
        found += [(ctx, PEER_ACCESS, peer) for ctx, peer in self._peers]
        return sorted(found)

    def forget(self, handle: int) -> None:
        """Drop the values set on `handle` (its peer access is removed one by one)."""
        self._values = {k: v for k, v in self._values.items() if k[0] != handle}

    def clear(self) -> None:
        self._values.clear()
        self._peers.clear()
