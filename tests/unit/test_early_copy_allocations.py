"""Which destinations a copy may return early for (cricket_client.early_copies.Allocations):
a range wholly inside an allocation the client holds, made in the current context."""

from __future__ import annotations

from cricket_client.early_copies import Allocations

BASE = 0x7000_0000_0000


def test_a_range_inside_an_allocation_is_held_and_one_crossing_its_end_is_not() -> None:
    a = Allocations()
    a.made(BASE, 4096)
    a.made(BASE + 8192, 100)
    assert a.holds(BASE, 4096)
    assert a.holds(BASE + 4000, 96)
    assert not a.holds(BASE + 4000, 97)
    assert not a.holds(BASE + 4096, 1)  # the gap between the two
    assert not a.holds(BASE - 1, 2)
    assert a.holds(BASE + 8192 + 99, 1)
    assert not a.holds(BASE + 8192 + 99, 2)


def test_a_free_forgets_its_allocation_only() -> None:
    a = Allocations()
    a.made(BASE, 64)
    a.made(BASE + 64, 64)
    a.freed(BASE)
    a.freed(BASE + 12345)  # not an allocation: nothing happens
    assert not a.holds(BASE, 1)
    assert a.holds(BASE + 64, 64)


def test_a_context_change_or_a_sticky_error_proves_nothing_any_more() -> None:
    a = Allocations()
    a.made(BASE, 64)
    a.context_may_change()
    assert not a.holds(BASE, 1)
    a.made(BASE + 64, 64)  # made in the context current now
    assert a.holds(BASE + 64, 1)
    a.broken = True
    assert not a.holds(BASE + 64, 1)


def test_forget_drops_every_allocation() -> None:
    a = Allocations()
    a.made(BASE, 64)
    a.forget()
    assert not a.holds(BASE, 1)
