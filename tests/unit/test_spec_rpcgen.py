"""D1: every interface file in rpc_spec/ stays rpcgen-compatible, so a C peer can be generated."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SPECS = sorted((Path(__file__).parents[2] / "rpc_spec").glob("*.x"))
# libtirpc's own <rpc/pmap_prot.h> declares the portmapper's XDR routines under the same
# names, so C generated from portmap.x is checked by rpcgen alone, not compiled beside it.
SHIPPED_BY_LIBTIRPC = {"portmap.x"}


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name)
def test_rpcgen_accepts_and_gcc_compiles(spec: Path, tmp_path: Path) -> None:
    if shutil.which("rpcgen") is None:
        if os.environ.get("CI"):
            pytest.fail("rpcgen missing in CI: .ci/run must install it")
        pytest.skip("rpcgen is not installed")
    local = tmp_path / spec.name
    shutil.copy(spec, local)
    stem = spec.stem
    subprocess.run(["rpcgen", "-N", "-h", spec.name, "-o", f"{stem}.h"], cwd=tmp_path, check=True)
    subprocess.run(["rpcgen", "-N", "-c", spec.name, "-o", f"{stem}_xdr.c"], cwd=tmp_path, check=True)
    if spec.name in SHIPPED_BY_LIBTIRPC:
        assert (tmp_path / f"{stem}_xdr.c").stat().st_size > 0
        return
    subprocess.run(
        ["gcc", "-c", "-I/usr/include/tirpc", f"{stem}_xdr.c", "-o", f"{stem}_xdr.o"],
        cwd=tmp_path,
        check=True,
    )
    assert (tmp_path / f"{stem}_xdr.o").stat().st_size > 0
