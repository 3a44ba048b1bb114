"""The kinds of handle the protocol carries: a handle's top byte names its kind.

    | bits 63..56 | bits 55..0                       |
    | kind tag    | counter (1, 2, ... never reused) |

The server issues handles (`cricket_server.resources`); a checkpoint stores them and its
verifier checks their tags (`checkpoint.validate`). Both read the tags from here.
"""

from __future__ import annotations

import enum

__all__ = ["KIND_SHIFT", "COUNTER_MASK", "HandleKind", "kind_of"]

KIND_SHIFT = 56
COUNTER_MASK = (1 << KIND_SHIFT) - 1


class HandleKind(enum.IntEnum):
    CONTEXT = 0x01
    MODULE = 0x02
    FUNCTION = 0x03
    LIBRARY = 0x04
    KERNEL = 0x05
    STREAM = 0x06
    EVENT = 0x07
    ARRAY = 0x40  # arrays, textures, surfaces: tags 0x40-0x4f
    GRAPH = 0x08
    GRAPH_EXEC = 0x09
    GRAPH_NODE = 0x0A
    MEMHANDLE = 0x20  # a physical allocation (cuMemCreate)
    MEMPOOL = 0x21  # a memory pool (cuMemPoolCreate, a device's default pool)
    MIPMAP = 0x41  # a mipmapped array (its levels are arrays)
    GREEN_CTX = 0x11  # a green context (cuGreenCtxCreate)

    @property
    def label(self) -> str:
        return self.name.lower()


_KINDS = {kind.value: kind for kind in HandleKind}


def kind_of(handle: int) -> HandleKind | None:
    """The kind tagged into `handle`, or None when the tag names no kind."""
    return _KINDS.get(handle >> KIND_SHIFT)
