"""The launches of a CU_GRAPH_LAUNCH_BATCH made by the C loop of `fast_launch.c`.

Per graph launch the Python path costs about twice the driver's own work (the call's decoding
and checks, the input copy, four cuda-python calls). Here the session checks each exec and
stream handle of a batch once and puts them in small tables; the loop copies each launch's
input bytes into the exec's next slot and makes its input copies, the slot's event record and
cuGraphLaunch with the driver's own functions (the libcuda.so.1 cuda-python loaded, so the
same current context), sharing each exec's `graph_inputs.LaunchState` with the Python path.
An exec the tables cannot hold (host memory in page-locked stages) or a launch the loop
hands back (another input length, a change of stream, a failed driver call) is made or
reported by the caller at its index, as `fast_launch.FastLauncher`'s are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base import CudaError
from .fast_launch import StreamTable, driver_functions

__all__ = ["DRIVER_FUNCTIONS", "FastGraphLauncher", "driver_table"]


# cricket_graph_driver's fields and the driver's functions that fill them
DRIVER_FUNCTIONS = (
    ("launch", "cuGraphLaunch"),
    ("copy", "cuMemcpyHtoDAsync_v2"),
    ("record", "cuEventRecord"),
    ("query", "cuEventQuery"),
    ("wait", "cuEventSynchronize"),
)


class FastGraphLauncher(StreamTable):
    """The C loop for one batch at a time, with the tables it reads (see the module doc).

    `drv` is a cricket_graph_driver (`driver_table`, or stand-ins in tests); `state(obj)` is
    the address of a backend exec's LaunchState, or None where the loop cannot launch it."""

    def __init__(
        self,
        ffi: Any,
        lib: Any,
        drv: Any,
        describe: Callable[[int], str] = str,
        *,
        state: Callable[[Any], int | None],
        stream: Callable[[Any], int] | None = None,
    ) -> None:
        super().__init__(ffi, stream)
        self._run = lib.cricket_graph_launch_batch
        self._drv = drv
        self._describe = describe
        self._state = state
        self.reset()

    def reset(self) -> None:
        """Empty tables (a new batch: handles may mean other objects than in the last)."""
        super().reset()
        self._graphs: list[tuple[int, int]] = []
        self._graph_array: Any = self._ffi.NULL

    def add_exec(self, handle: int, obj: Any) -> bool:
        """An exec handle and its backend exec; False when the loop cannot launch it."""
        address = self._state(obj)
        if address is None:
            return False
        self._graphs.append((handle, address))
        array = self._ffi.new("cricket_graph[]", len(self._graphs))
        for slot, (h, a) in zip(array, self._graphs, strict=True):
            slot.handle, slot.ahead = h, self._ffi.cast("void *", a)
        self._graph_array = array
        return True

    def run(self, body: Any, start: int) -> tuple[int, int]:
        """Launch from `start` on: (index of the first launch not made, its CUresult or 0)."""
        data = self._ffi.from_buffer(body)
        index = self._run(
            self._drv, data, len(data), start, self._graph_array, len(self._graphs),
            self._stream_array, len(self._streams), self._err,
        )  # fmt: skip
        return int(index), int(self._err[0])

    def error(self, code: int) -> CudaError:
        """The CudaError of a launch the driver refused with `code`."""
        return CudaError(code, f"cuGraphLaunch: {self._describe(code)}")


def driver_table(ffi: Any) -> Any:
    """A cricket_graph_driver of the driver's functions (`fast_launch.driver_functions`)."""
    return driver_functions(ffi, "cricket_graph_driver", DRIVER_FUNCTIONS)
