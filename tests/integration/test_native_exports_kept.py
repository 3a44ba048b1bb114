"""No native entry is lost: every function the native libcuda.so.1 exported before its generic
entries were generated (native_exports_before.json, taken from that build's `nm -D` and its
cuGetProcAddress table) is still exported, what answered then still answers (has an
implementation, not the NOT_SUPPORTED stub), and cuGetProcAddress hands out the same symbols."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from server_harness import LIMIT, ROOT

from cricket_client.native import library_path, native_environment, signatures

BEFORE = json.loads((Path(__file__).with_name("native_exports_before.json")).read_text())
ANSWERED = sorted(n for n, kind in BEFORE["exported"].items() if kind == "answers")


def _exported(library: Path) -> set[str]:
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[2] for line in out.splitlines() if len(line.split()) == 3 and line.split()[1] == "T"}


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm (binutils)")
def test_every_function_exported_before_is_still_exported() -> None:
    missing = set(BEFORE["exported"]) - _exported(library_path())
    assert not missing, f"no longer exported: {sorted(missing)}"


def test_what_answered_before_is_still_an_entry_not_a_stub() -> None:
    entries = {s for s, _ in signatures.ENTRIES} | set(signatures.C_ONLY)
    entries |= set(signatures.PER_THREAD.values())
    assert not set(ANSWERED) - entries
    assert not set(ANSWERED) & set(signatures.stub_symbols())


def test_cu_get_proc_address_hands_out_the_same_symbols() -> None:
    for name, variants in BEFORE["proc_address"].items():
        for since, symbol in variants:
            for flags, form in ((0, symbol), (2, BEFORE["per_thread"].get(symbol, symbol))):
                assert signatures.select_symbol(name, since, flags) == form, (name, since, flags)


# In a process with the library loaded: every entry that answered before has its Python
# implementation attached (an unattached `extern "Python"` would answer from cffi's default).
_ATTACHED = textwrap.dedent(
    """
    import ctypes, json, sys
    lib = ctypes.CDLL(sys.argv[1])
    # cuGetProcAddress starts the library's Python side (no server needed)
    lib.cuGetProcAddress(b"cuInit", ctypes.byref(ctypes.c_void_p()), 12000, ctypes.c_uint64(0))
    from cricket_client.native import entries
    names = json.loads(sys.argv[2])
    print(json.dumps(sorted(n for n in names if n not in entries.IMPLEMENTED)))
    """
)


def test_every_entry_that_answered_before_has_its_implementation() -> None:
    calls = [n for n in ANSWERED if n in {s for s, _ in signatures.ENTRIES}]
    done = subprocess.run(
        [sys.executable, "-c", _ATTACHED, str(library_path()), json.dumps(calls)],
        capture_output=True, text=True, timeout=4 * LIMIT, cwd=ROOT,
        env=native_environment(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
