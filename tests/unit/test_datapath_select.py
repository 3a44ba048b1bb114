"""Which path a copy takes: size thresholds, forced modes, fallbacks, interface and RDMA
choice on fake link and device lists."""

from __future__ import annotations

import pytest

from cricket_client.datapath.routes import ARPHRD_INFINIBAND, Link, data_link, rdma_usable
from cricket_client.datapath.select import (
    MODE_ENV,
    Capabilities,
    Limits,
    Mode,
    Path,
    choose,
    mode_from_env,
)

ALL = Capabilities(shm=True, tcp=True, rdma=True)
REMOTE = Capabilities(shm=False, tcp=True, rdma=False)
ETHER = 1


def test_small_copies_travel_inside_the_rpc() -> None:
    limits = Limits()
    assert choose(limits.small - 1, ALL) is Path.RPC
    assert choose(1, ALL) is Path.RPC


def test_same_host_copies_take_shared_memory() -> None:
    assert choose(Limits().small, ALL) is Path.SHM
    assert choose(1 << 30, Capabilities(shm=True, tcp=True)) is Path.SHM


def test_remote_copies_take_parallel_tcp_from_the_threshold() -> None:
    limits = Limits()
    assert choose(limits.tcp_min - 1, REMOTE) is Path.RPC
    assert choose(limits.tcp_min, REMOTE) is Path.TCP


def test_rdma_is_chosen_only_when_both_ends_have_a_device() -> None:
    size = 32 << 20
    with_rdma = Capabilities(shm=False, tcp=True, rdma=rdma_usable(["mlx5_0"], ["mlx5_1"]))
    assert choose(size, with_rdma) is Path.RDMA
    one_sided = Capabilities(shm=False, tcp=True, rdma=rdma_usable(["mlx5_0"], []))
    assert choose(size, one_sided) is Path.TCP
    assert not rdma_usable([], ["mlx5_0"])


def test_empty_copies_always_travel_inside_the_rpc() -> None:
    for mode in Mode:
        assert choose(0, ALL, mode) is Path.RPC


@pytest.mark.parametrize(
    ("mode", "caps", "expected"),
    [
        (Mode.RPC, ALL, Path.RPC),
        (Mode.SHM, ALL, Path.SHM),
        (Mode.SHM, REMOTE, Path.RPC),  # forced but not possible: the RPC
        (Mode.TCP, ALL, Path.TCP),
        (Mode.TCP, Capabilities(shm=True), Path.RPC),
    ],
)
def test_forced_modes_apply_to_every_size(mode: Mode, caps: Capabilities, expected: Path) -> None:
    assert choose(1, caps, mode) is expected
    assert choose(1 << 30, caps, mode) is expected


def test_mode_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODE_ENV, raising=False)
    assert mode_from_env() is Mode.AUTO
    monkeypatch.setenv(MODE_ENV, "TCP")
    assert mode_from_env() is Mode.TCP
    monkeypatch.setenv(MODE_ENV, "carrier-pigeon")
    with pytest.raises(ValueError, match="CRICKET_DATA_PATH='carrier-pigeon'.*auto, rpc, shm, tcp"):
        mode_from_env()


LINKS = [
    Link(1, "lo", 772, True, ("127.0.0.1/8",)),
    Link(2, "eth0", ETHER, True, ("10.0.0.5/24",)),
    Link(3, "ib0", ARPHRD_INFINIBAND, True, ("192.168.50.5/24",)),
    Link(4, "ib1", ARPHRD_INFINIBAND, False, ("192.168.60.5/24",)),
]


def test_an_infiniband_link_on_the_servers_subnet_is_preferred() -> None:
    link = data_link(LINKS, route_index=2, server_ip="192.168.50.9")
    assert link is not None and link.name == "ib0"
    assert link.address_towards("192.168.50.9") == "192.168.50.5"


def test_without_an_infiniband_route_the_routed_link_is_used() -> None:
    link = data_link(LINKS, route_index=2, server_ip="10.0.0.9")
    assert link is not None and link.name == "eth0"


def test_a_link_that_is_down_is_not_chosen() -> None:
    link = data_link(LINKS, route_index=2, server_ip="192.168.60.9")
    assert link is not None and link.name == "eth0"


def test_an_unknown_route_gives_no_link() -> None:
    assert data_link(LINKS, route_index=99, server_ip="172.16.0.1") is None
