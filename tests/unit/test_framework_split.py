"""bench.framework_split: every loop's self-timing program is valid Python, and its printed
split is read back."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench.framework_calls import LOOPS
from bench.framework_split import program_text, split_of


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_each_loops_program_compiles(name: str) -> None:
    text = program_text(name)
    compile(text, f"loop_{name}.py", "exec")
    assert LOOPS[name][1] in text  # the step itself is what is timed


def test_the_split_a_program_prints_is_read_back(tmp_path: Path) -> None:
    program = tmp_path / "p.py"
    program.write_text("print('set-up noise'); print('split', 12.5, 7.25, 3.0)\n")
    assert split_of([sys.executable, str(program)], {}) == (12.5, 7.25, 3.0)


def test_a_program_that_fails_says_why(tmp_path: Path) -> None:
    program = tmp_path / "p.py"
    program.write_text("raise SystemExit('no framework here')\n")
    with pytest.raises(RuntimeError, match="no framework here"):
        split_of([sys.executable, str(program)], {})
