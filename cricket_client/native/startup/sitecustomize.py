"""Runs first in Python programs under `cricket-run -- ...` (the native door): the CUDA runtime
module, once imported, is the Python client's (cricket_client.native.runtime_swap says why);
then the `sitecustomize` this one shadows runs as it would have. Nothing of the client is
imported before the program imports the runtime."""

import importlib.machinery
import importlib.util
import os
import sys

_RUNTIME_NAMES = ("cuda.bindings.runtime", "cuda.cudart")
_HERE = os.path.dirname(os.path.realpath(__file__))


class CricketRuntimeFinder:
    """Hands the runtime's module names to cricket_client.native.runtime_swap."""

    @staticmethod
    def find_spec(fullname, path, target=None):  # type: ignore[no-untyped-def]
        if fullname not in _RUNTIME_NAMES:
            return None
        try:
            from cricket_client.native import runtime_swap
        except ImportError:  # where the native library finds the client (its init code too)
            import site

            for folder in os.environ.get("CRICKET_NATIVE_PATH", "").split(os.pathsep):
                if folder:
                    site.addsitedir(folder)
            from cricket_client.native import runtime_swap
        return runtime_swap.RuntimeFinder().find_spec(fullname, path, target)


def _chain() -> None:
    """Run the sitecustomize that this one shadows."""
    rest = [p for p in sys.path if os.path.realpath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


if os.environ.get("CRICKET_NATIVE_RUNTIME", "python").strip().lower() != "cudart":
    sys.meta_path.insert(0, CricketRuntimeFinder())  # type: ignore[arg-type]
_chain()
