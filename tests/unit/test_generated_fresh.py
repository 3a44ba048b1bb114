"""Every committed generated module is what cricket-xdrgen makes of its .x today."""

from __future__ import annotations

from pathlib import Path

import pytest

from cricket_xdr.compiler.driver import compile_file

ROOT = Path(__file__).resolve().parents[2]
# (source, generated module), paths relative to the repository root as `make stubs` gives them.
GENERATED = [
    ("rpc_spec/portmap.x", "cricket_xdr/portmap_rpc.py"),
    ("rpc_spec/cricket.x", "rpc_spec/cricket_rpc.py"),
    ("rpc_spec/checkpoint.x", "rpc_spec/checkpoint_rpc.py"),
]


@pytest.mark.parametrize(("source", "module"), GENERATED, ids=[m for _, m in GENERATED])
def test_generated_module_is_fresh(source: str, module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if not (ROOT / source).exists():
        pytest.skip(f"{source} does not exist yet")
    monkeypatch.chdir(ROOT)
    expected = compile_file(source)
    committed = (ROOT / module).read_text() if (ROOT / module).exists() else ""
    assert committed == expected, f"{module} is stale: run `make stubs` (cricket-xdrgen {source})"

