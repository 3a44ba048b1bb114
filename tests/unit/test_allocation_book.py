"""The client's book of known allocations: which small copies may go unanswered."""

from __future__ import annotations

from types import SimpleNamespace

from cricket_client.allocations import AllocationBook


def test_covers_only_ranges_wholly_inside_one_allocation() -> None:
    book = AllocationBook()
    book.add(0x1000, 0x100)
    book.add(0x1100, 0x100)  # adjacent, a different allocation
    assert book.covers(0x1000, 0x100)
    assert book.covers(0x10FF, 1)
    assert not book.covers(0x10FF, 2)  # spans two allocations
    assert not book.covers(0xFFF, 1)
    assert not book.covers(0x1200, 1)
    assert not AllocationBook().covers(0x1000, 1)


def test_an_overlapping_add_replaces_older_ranges_and_remove_forgets() -> None:
    book = AllocationBook()
    book.add(0x1000, 0x100)
    book.add(0x2000, 0x100)
    book.add(0x1080, 0x1000)  # overlaps both (the server reused the addresses)
    assert len(book) == 1
    assert book.covers(0x1080, 0x1000)
    assert not book.covers(0x1000, 1)
    book.remove(0x1080)
    assert len(book) == 0
    book.remove(0x5000)  # unknown: nothing happens


def test_calls_teach_and_forget() -> None:
    book = AllocationBook()
    book.after("CU_MEM_ALLOC", (256,), SimpleNamespace(value=0x6000))
    book.after("CU_MEM_ALLOC_PITCH", (100, 4, 4), SimpleNamespace(value=SimpleNamespace(ptr=0x7000, pitch=512)))
    book.after("CU_MODULE_GET_GLOBAL", (1, "g"), SimpleNamespace(value=SimpleNamespace(ptr=0x8000, size=8)))
    assert book.covers(0x6000, 256) and book.covers(0x7000, 2048) and book.covers(0x8000, 8)
    book.before("CU_MEM_FREE_ASYNC", (0x6000, 0))
    assert not book.covers(0x6000, 1) and book.covers(0x7000, 1)
    book.before("CU_CTX_SET_CURRENT", (0x55,))
    assert len(book) == 0
