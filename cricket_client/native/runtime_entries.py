"""Public driver functions that the CUDA runtime calls at its start and the Python client does
not remote: answered by the native library itself (C ABI here, implementations in
export_slots.py). Pure data."""

from __future__ import annotations

__all__ = ["RUNTIME_ENTRIES"]

# (exported symbol, C parameters), as signatures.ENTRIES
RUNTIME_ENTRIES: list[tuple[str, str]] = [
    # CUmoduleLoadingMode: the client sends every image whole at its load (eager)
    ("cuModuleGetLoadingMode", "int *mode"),
]
