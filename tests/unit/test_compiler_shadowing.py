"""Fields named like Python builtins (`bytes`, `str`, `list`) do not change the types of the
annotations that follow them in the generated class, and the module type-checks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_compiler_generated import load_generated

SPEC = """
struct counts {
    unsigned hyper bytes;
    opaque payload<>;
    string str<>;
    string label<16>;
    int list<>;
    int more<>;
};
union pick switch (int bytes) {
case 1:
    opaque data<>;
default:
    void;
};
"""


def test_fields_named_like_builtins(tmp_path: Path) -> None:
    source = tmp_path / "shadow.x"
    source.write_text(SPEC)
    module = load_generated(source, tmp_path, "shadow_rpc")
    value = module.counts(bytes=7, payload=b"abc", str="s", label="l", list=[1], more=[2, 3])
    assert module.counts.decode(value.encode()) == value
    assert isinstance(value.encode(), bytes)
    chosen = module.pick(bytes=1, value=b"xy")
    assert module.pick.decode(chosen.encode()).data == b"xy"
    mypy = subprocess.run(
        [sys.executable, "-m", "mypy", "--ignore-missing-imports", str(tmp_path / "shadow_rpc.py")],
        capture_output=True,
        text=True,
    )
    assert mypy.returncode == 0, mypy.stdout
