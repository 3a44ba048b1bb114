"""The cuda backend's kernel-node attributes over a stand-in for the driver's graph calls
(cuda-python's real structs and enums): an exec's kernel node gets the attributes set, a read
asks the driver on a scratch graph it then destroys, and values become the driver's types."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

real = pytest.importorskip("cuda.bindings.driver")

from test_cuda_graph_staging import Handle  # noqa: E402

from cricket_server.backends.base import CudaError  # noqa: E402
from cricket_server.backends.cuda import graphs as cuda_graphs  # noqa: E402
from cricket_server.backends.cuda import kernel_node_attrs  # noqa: E402
from cricket_server.backends.cuda.graphs import CudaGraphs  # noqa: E402
from cricket_server.graphs import ExecNode  # noqa: E402


class StandIn:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.values: dict[tuple[Any, int], Any] = {}

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("cu"):
            return getattr(real, name)

        def fn(*args: Any) -> tuple[Any, ...]:
            self.calls.append((name, *args))
            if name == "cuGraphKernelNodeSetAttribute":
                node, attr, value = args
                assert isinstance(attr, real.CUkernelNodeAttrID)
                assert isinstance(value, real.CUkernelNodeAttrValue)
                self.values[(node, int(attr))] = value
            if name == "cuGraphKernelNodeGetAttribute":
                node, attr = args
                return (0, self.values.get((node, int(attr)), real.CUkernelNodeAttrValue()))
            if name.startswith(("cuGraphAdd", "cuGraphCreate", "cuGraphInstantiate")):
                return (0, Handle(f"{name}#{len(self.calls)}"))
            return (0,)

        fn.__name__ = name
        return fn

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]


class Session(CudaGraphs):
    def __init__(self) -> None:
        self._layouts = SimpleNamespace(buffer=lambda func: SimpleNamespace(fill=lambda p: 0))

    def _state(self) -> Any:
        return SimpleNamespace(context=SimpleNamespace(handle="ctx"))

    def _stream(self, stream: Any) -> Any:
        return stream


Session.__abstractmethods__ = frozenset()

KERNEL = (real.CUfunction(0x55), (4, 1, 1), (256, 1, 1), 0, b"\x01" * 8)


@pytest.fixture
def drv(monkeypatch: pytest.MonkeyPatch) -> StandIn:
    fake = StandIn()
    monkeypatch.setattr(cuda_graphs, "driver", fake)
    monkeypatch.setattr(kernel_node_attrs, "driver", fake)
    return fake


def test_an_exec_sets_the_attributes_on_its_kernel_node(drv: StandIn) -> None:
    node = ExecNode(1, 0, (), kernel=KERNEL, attrs=((4, 2, 1, 1), (8, -1, 0, 0), (10, 1, 0, 0)))
    Session().graph_instantiate([node])
    sets = [c for c in drv.calls if c[0] == "cuGraphKernelNodeSetAttribute"]
    added = next(c for c in drv.calls if c[0] == "cuGraphAddKernelNode")
    assert all(c[1] == f"cuGraphAddKernelNode#{drv.calls.index(added) + 1}" for c in sets)
    cluster, priority, domain = (c[3] for c in sets)
    assert (cluster.clusterDim.x, cluster.clusterDim.y, cluster.clusterDim.z) == (2, 1, 1)
    assert priority.priority == -1
    assert domain.memSyncDomain == real.CUlaunchMemSyncDomain.CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE


def test_a_read_asks_the_driver_on_a_scratch_graph(drv: StandIn) -> None:
    node = ExecNode(1, 0, (), kernel=KERNEL, attrs=((8, -1, 0, 0),))
    assert Session().kernel_node_attribute(node, 8, "cuGraphKernelNodeGetAttribute") == (-1, 0, 0)
    assert Session().kernel_node_attribute(node, 4, "cuGraphKernelNodeGetAttribute") == (0, 0, 0)
    names = drv.names()
    assert names.count("cuGraphCreate") == names.count("cuGraphDestroy") == 2


def test_attributes_that_cannot_travel_are_refused(drv: StandIn) -> None:
    node = ExecNode(1, 0, (), kernel=KERNEL)
    with pytest.raises(CudaError, match="launch attribute 1 "):
        Session().kernel_node_attribute(node, 1, "cuGraphKernelNodeGetAttribute")
    bad = ExecNode(1, 0, (), kernel=KERNEL, attrs=((10, 7, 0, 0),))
    with pytest.raises(CudaError, match="7 is not a value of memSyncDomain"):
        Session().kernel_node_attribute(bad, 10, "cuGraphKernelNodeSetAttribute")
    assert drv.names().count("cuGraphCreate") == drv.names().count("cuGraphDestroy")
