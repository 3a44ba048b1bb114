"""The `cuda` backend: CUDA work on this machine's GPUs through cuda-python's driver API.

`gpu_available()` answers without raising, even where cuda-python is not installed;
`CudaBackend` is imported on first use (it needs cuda-python)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backend import CudaBackend

__all__ = ["CudaBackend", "gpu_available"]


def gpu_available() -> bool:
    """True when the CUDA driver loads and sees at least one GPU."""
    try:
        from .backend import gpu_available as probe
    except ImportError:
        return False
    return probe()


def __getattr__(name: str) -> Any:
    if name == "CudaBackend":
        from .backend import CudaBackend

        return CudaBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
