"""Generated native entries for C structs the caller owns (tools/gen_mirrors.py): a non-const
struct the driver function takes is read through a writable view (what the function writes back
into its params object lands in the caller's C struct), and one the driver function answers is
filled from the answer. What they write is checked end to end by
tests/integration/test_native_coverage.py (native_nodes_tail_program.py)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gen_mirrors  # noqa: E402


def _entry(symbol: str) -> str:
    text = (ROOT / gen_mirrors.NATIVE_OUTPUT).read_text()
    start = text.index(f"def {symbol}(")
    return text[start : text.find("\n\n\n", start)]


def test_a_struct_the_driver_function_takes_is_passed_as_a_view() -> None:
    body = _entry("cuGraphAddMemAllocNode")
    assert "StructView(nodeParams)" in body
    assert "_write_struct" not in body


def test_a_struct_the_driver_function_answers_is_written_into_the_callers() -> None:
    body = _entry("cuGraphMemAllocNodeGetParams")
    assert "driver.cuGraphMemAllocNodeGetParams(hNode)" in body
    assert "_write_struct(params_out, v0)" in body
