"""docs/coverage.md and the README's coverage line are what tools/gen_coverage.py makes of the
client modules and the installed cuda-bindings today (`make coverage` rewrites both)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest
from bindings_mirror import need_same_release

from cricket_client.standins import stand_in

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gen_coverage  # noqa: E402

STALE = "stale: run `make coverage` (python tools/gen_coverage.py)"


def test_coverage_doc_and_readme_line_are_fresh() -> None:
    need_same_release()
    text, line = gen_coverage.generate()
    assert (ROOT / gen_coverage.OUTPUT).read_text() == text, f"{gen_coverage.OUTPUT} is {STALE}"
    readme = (ROOT / gen_coverage.README).read_text().splitlines()
    assert line in readme, f"the 'Coverage: ' line of {gen_coverage.README} is {STALE}"


def test_every_exported_mirror_counts_as_remoted() -> None:
    pytest.importorskip("cuda.bindings")
    from cuda.bindings import driver as real

    from cricket_client import driver

    for name in gen_coverage.bindings_functions(real):
        assert (gen_coverage.reason_of(name, driver) is None) == (name in driver.SUPPORTED), name


def test_a_stand_in_is_listed_under_its_reason_not_counted() -> None:
    client = ModuleType("fake_client")

    @stand_in("unshareable")
    def cuMemAllocManaged(dptr: int, bytesize: int, flags: int) -> tuple[int, None]:
        return (801, None)

    def cuMemAlloc(bytesize: int) -> tuple[int, int]:
        return (0, 1)

    client.cuMemAllocManaged = cuMemAllocManaged  # type: ignore[attr-defined]
    client.cuMemAlloc = cuMemAlloc  # type: ignore[attr-defined]
    assert gen_coverage.reason_of("cuMemAlloc", client) is None
    assert gen_coverage.reason_of("cuMemAllocManaged", client) == "unshareable"
    assert gen_coverage.reason_of("cuGraphicsMapResources", client) == "graphics"
    assert gen_coverage.reason_of("cuLaunchHostFunc", client) == "callbacks"
    assert gen_coverage.reason_of("cuGraphCreate", client) == "todo"


def test_a_stand_in_with_an_unknown_reason_fails_the_generator() -> None:
    client = ModuleType("fake_client")
    client.cuMemAllocManaged = stand_in("no such reason")(lambda: None)  # type: ignore[attr-defined]
    with pytest.raises(SystemExit, match="no reason of gen_coverage.py"):
        gen_coverage.reason_of("cuMemAllocManaged", client)
