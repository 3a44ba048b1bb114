"""The arrows of DESIGN.md point one way: cricket_xdr imports none of the others, client and
server never import each other, and cuda-python is imported only by the server's cuda backend
(D3: the client needs no GPU, driver or cuda-python)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _imports(package: str) -> dict[str, set[str]]:
    """{file: top-level names it imports (absolute imports only)}."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    return found


FORBIDDEN = {
    "cricket_xdr": ("cricket_server", "cricket_client", "checkpoint", "rpc_spec", "cuda"),
    "cricket_client": ("cricket_server", "checkpoint", "cuda"),
    "cricket_server": ("cricket_client",),
    # The server uses checkpoint's format, reader and writer; checkpoint never the server.
    "checkpoint": ("cricket_server",),
    "rpc_spec": ("cricket_server", "cricket_client", "checkpoint", "cuda"),
}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_point_one_way(package: str) -> None:
    bad = [
        f"{file} imports {name}"
        for file, names in _imports(package).items()
        for name in names
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[package])
    ]
    assert not bad, "\n".join(bad)


def test_cuda_python_only_in_the_cuda_backend() -> None:
    bad = [
        f"{file} imports {name}"
        for package in ("cricket_server", "checkpoint")
        for file, names in _imports(package).items()
        for name in names
        if (name == "cuda" or name.startswith("cuda."))
        and not file.startswith("cricket_server/backends/cuda/")
    ]
    assert not bad, "\n".join(bad)
