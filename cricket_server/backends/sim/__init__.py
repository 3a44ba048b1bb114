"""The `sim` backend: a software CUDA device (D7). See `backend.py`; kernels in `kernels.py`."""

from cricket_server.backends.sim.backend import SimBackend, SimSession
from cricket_server.backends.sim.kernels import KernelArgs, Launch, sim_kernel

__all__ = ["KernelArgs", "Launch", "SimBackend", "SimSession", "sim_kernel"]
