"""Builds the C peers of alltypes.x: rpcgen -N -M output compiled against libtirpc.

    python tests/interop/cbuild.py [OUT_DIR]      (default tests/interop/build/)

Produces `server`, `client` and `codec` (see tests/interop/c/*.c) in OUT_DIR.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEC = HERE / "alltypes.x"
C_DIR = HERE / "c"
TIRPC_INCLUDE = Path("/usr/include/tirpc")

# rpcgen output flag -> file it writes
RPCGEN_OUTPUTS = {
    "-h": "alltypes.h",
    "-c": "alltypes_xdr.c",
    "-l": "alltypes_clnt.c",
    "-m": "alltypes_svc.c",
}
CFLAGS = ["-std=gnu11", "-O1", "-g", "-Wall", "-Wno-unused-variable", f"-I{TIRPC_INCLUDE}"]
LIBS = ["-ltirpc", "-lpthread"]


class BuildError(RuntimeError):
    """rpcgen or gcc failed; the message holds the command and its output."""


@dataclass(frozen=True)
class CPeers:
    """Paths of the built programs."""

    server: Path
    client: Path
    codec: Path


def missing_tools() -> list[str]:
    """What the build needs and this machine lacks (Debian package in parentheses)."""
    missing = [
        f"{tool} ({pkg})"
        for tool, pkg in (("rpcgen", "rpcsvc-proto"), ("gcc", "gcc"))
        if shutil.which(tool) is None
    ]
    if not (TIRPC_INCLUDE / "rpc" / "rpc.h").exists():
        missing.append(f"{TIRPC_INCLUDE}/rpc/rpc.h (libtirpc-dev)")
    return missing


def _run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")


def build(out_dir: Path) -> CPeers:
    """Runs rpcgen on alltypes.x and compiles the three programs into out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SPEC, out_dir / SPEC.name)
    for flag, output in RPCGEN_OUTPUTS.items():
        (out_dir / output).unlink(missing_ok=True)  # rpcgen will not write over a file
        _run(["rpcgen", "-N", "-M", flag, "-o", output, SPEC.name], out_dir)
    cc = ["gcc", *CFLAGS, f"-I{out_dir}", f"-I{C_DIR}"]
    common = [str(out_dir / "alltypes_xdr.c"), str(C_DIR / "cases.c")]
    programs = {
        "server": [
            str(C_DIR / "server.c"),
            str(out_dir / "alltypes_svc.c"),
            str(out_dir / "alltypes_xdr.c"),
        ],
        "client": [str(C_DIR / "client.c"), str(out_dir / "alltypes_clnt.c"), *common],
        "codec": [str(C_DIR / "codec.c"), *common],
    }
    for program, sources in programs.items():
        _run([*cc, "-o", str(out_dir / program), *sources, *LIBS, "-lm"], out_dir)
    return CPeers(out_dir / "server", out_dir / "client", out_dir / "codec")


if __name__ == "__main__":
    peers = build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "build")
    print(peers)
