"""Which path a copy takes (D8): by its size and by what this connection has set up.

`CRICKET_DATA_PATH=auto|rpc|shm|tcp` (default auto). Auto: copies under `Limits.small`
(DtoH: `Limits.dtoh_small`) travel inside the RPC; larger ones through shared memory when the server shares the host,
else RDMA when both ends have a device, else parallel TCP from `Limits.tcp_min`, else the
RPC. A forced path that this connection cannot use falls back to the RPC. Empty copies
always travel inside the RPC (CUDA's checks of the call, no data).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Path", "Mode", "Capabilities", "Limits", "choose", "mode_from_env", "MODE_ENV"]

MODE_ENV = "CRICKET_DATA_PATH"


class Path(StrEnum):
    RPC = "rpc"  # bytes inside the RPC call or reply
    SHM = "shm"  # a shared-memory segment on the common host
    TCP = "tcp"  # several data channels in parallel
    RDMA = "rdma"  # InfiniBand verbs (selection only; no transfer engine yet)


class Mode(StrEnum):
    AUTO = "auto"
    RPC = "rpc"
    SHM = "shm"
    TCP = "tcp"


@dataclass(frozen=True)
class Capabilities:
    """Paths this connection may still use (a path that failed to set up is off)."""

    shm: bool = False
    tcp: bool = False
    rdma: bool = False


@dataclass(frozen=True)
class Limits:
    small: int = 64 << 10  # HtoD below: inline RPC (one round trip beats any setup)
    # DtoH below: inline RPC. A read through shared memory answers in a reply of a few bytes
    # (the server copies into the segment, the client out of it once): on sim it beat the
    # inline reply from 4 KiB (4-32 KiB: 8-13 us less a read, bench.copy_sizes --paths rpc,shm)
    dtoh_small: int = 4 << 10
    tcp_min: int = 16 << 20  # from here, parallel data channels pay off over one stream
    rdma_min: int = 1 << 20


def mode_from_env(value: str | None = None) -> Mode:
    """The mode named by CRICKET_DATA_PATH (or `value`); ValueError naming the choices."""
    raw = (os.environ.get(MODE_ENV, "auto") if value is None else value).strip().lower() or "auto"
    try:
        return Mode(raw)
    except ValueError:
        raise ValueError(
            f"{MODE_ENV}={raw!r}: expected one of {', '.join(m.value for m in Mode)}"
        ) from None


def choose(
    size: int,
    caps: Capabilities,
    mode: Mode = Mode.AUTO,
    limits: Limits = Limits(),
    *,
    dtoh: bool = False,
) -> Path:
    """The path of one copy of `size` bytes (device to host with `dtoh`)."""
    if size <= 0 or mode is Mode.RPC:
        return Path.RPC
    if mode is Mode.SHM:
        return Path.SHM if caps.shm else Path.RPC
    if mode is Mode.TCP:
        return Path.TCP if caps.tcp else Path.RPC
    if size < (limits.dtoh_small if dtoh else limits.small):
        return Path.RPC
    if caps.shm:
        return Path.SHM
    if caps.rdma and size >= limits.rdma_min:
        return Path.RDMA
    if caps.tcp and size >= limits.tcp_min:
        return Path.TCP
    return Path.RPC
