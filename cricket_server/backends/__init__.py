"""Backends that execute CUDA work: `cuda` (cuda-python, the product) and `sim` (software).

`make_backend(name)` builds one: "cuda", "sim", or "auto" (cuda when a GPU answers, else sim
with a logged notice).
"""

from __future__ import annotations

import logging
from typing import Any

from .base import Backend

__all__ = ["BACKEND_NAMES", "make_backend"]

log = logging.getLogger("cricket_server.backends")

BACKEND_NAMES = ("auto", "cuda", "sim")


def make_backend(
    name: str = "auto", *, sim_memory: int | None = None, sim_devices: int = 1
) -> Backend:
    """The backend called `name`; `sim_memory` is each sim device's size in bytes,
    `sim_devices` how many devices the sim backend models."""
    if name not in BACKEND_NAMES:
        raise ValueError(f"unknown backend {name!r}: choose one of {', '.join(BACKEND_NAMES)}")
    if name == "auto":
        from .cuda import gpu_available

        if gpu_available():
            name = "cuda"
        else:
            log.warning("backend auto: no GPU answers here, using the software backend 'sim'")
            name = "sim"
    if name == "cuda":
        from .cuda import CudaBackend

        backend: Backend = CudaBackend()
        return backend
    from .sim import SimBackend

    options: dict[str, Any] = {"device_count": sim_devices}
    if sim_memory is not None:
        options["total_mem"] = sim_memory
    return SimBackend(**options)
