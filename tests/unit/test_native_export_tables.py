"""The declarations of the CUDA runtime's private tables (cricket_client.native.export_tables):
ids, sizes, slots, that each implementation exists, and (compiled with gcc, no Python inside)
that every slot of every table answers through the one dispatch function with its arguments."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cricket_client.native.at_exit import AFTER_EXIT_C
from cricket_client.native.context_storage import STORAGE_C
from cricket_client.native.export_tables import TABLES, TRACED, c_source, table_by_id
from cricket_client.native.known_context import KNOWN_C

SLOTS_PY = Path(__file__).resolve().parents[2] / "cricket_client" / "native" / "export_slots.py"


def test_ids_and_names_are_unique_and_written_as_the_notes_write_them() -> None:
    assert len({t.uuid for t in TABLES}) == len({t.name for t in TABLES}) == len(TABLES)
    for table in TABLES:
        assert re.fullmatch(r"[0-9a-f]{32}", table.uuid), table.name
    cudart = table_by_id(bytes.fromhex("6bd5fb6c5bf4e74a8987d93912fd9df9"))
    assert cudart is not None and cudart[1].name == "CUDART_INTERFACE"
    assert cudart[1].guid == "{6BD5FB6C-5BF4-E74A-8987-D93912FD9DF9}"
    assert table_by_id(bytes(16)) is None


def test_slots_lie_inside_their_table_and_the_size_slot_is_never_a_function() -> None:
    for table in TABLES:
        indices = [s.index for s in table.slots]
        assert len(indices) == len(set(indices)), table.name
        assert all(0 <= i < table.length for i in indices), table.name
        if table.sized:
            assert 0 not in indices, table.name
        slots = table.all_slots()
        assert [s.index for s in slots] == list(range(1 if table.sized else 0, table.length))
        for slot in table.slots:
            assert slot.source, (table.name, slot.index)
    cls = next(t for t in TABLES if t.name == "CONTEXT_LOCAL_STORAGE_INTERFACE_V0301")
    assert not cls.sized and [s.name for s in cls.slots] == ["put", "delete", "get"]


def _implementations() -> set[str]:
    tree = ast.parse(SLOTS_PY.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "IMPLEMENTATIONS":
            assert isinstance(node.value, ast.Dict)
            return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    raise AssertionError("export_slots.IMPLEMENTATIONS not found")


def test_every_declared_implementation_exists_and_has_a_signature() -> None:
    known = _implementations()
    declared = {s.implementation for t in TABLES for s in t.slots if s.implementation}
    assert declared <= known, declared - known
    for table in TABLES:
        for slot in table.slots:
            if slot.implementation:
                assert slot.params is not None, (table.name, slot.index)


def test_every_slot_the_runtime_was_seen_calling_is_declared_with_its_signature() -> None:
    by_name = {t.name: t for t in TABLES}
    for name, index in TRACED:
        slot = by_name[name].slot(index)
        assert slot.name != "unknown" and slot.params is not None, (name, index)


HARNESS = r"""
#include <stdint.h>
#include <stdio.h>
typedef int CUresult; typedef int CUdevice;
typedef struct CUctx_st *CUcontext; typedef struct CUmod_st *CUmodule; typedef struct CUstream_st *CUstream;
#include <stdlib.h>
#include <pthread.h>
#define CRICKET_ENTER
#define CRICKET_LEAVE(r) return r;
static volatile int cricket_finalized = 0, cricket_forked = 0, cricket_other_python = 0;
%s
%s
static int seen_t = -1, seen_s = -1, seen_n = -1; static uintptr_t seen[8];
static uintptr_t py_export_slot(int t, int s, uintptr_t *a, int n) {
    seen_t = t; seen_s = s; seen_n = n;
    for (int i = 0; i < n; i++) seen[i] = a[i];
    return 801;
}
int main(void) {
%s
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_every_slot_answers_through_the_dispatch_with_its_arguments(tmp_path: Path) -> None:
    checks = []
    for t, table in enumerate(TABLES):
        if table.sized:
            checks.append(
                f'    if ((uintptr_t)cricket_xt_{t}[0] != sizeof(void *) * {table.length}) '
                f'{{ puts("size {table.name}"); return 1; }}'
            )
        for slot in table.all_slots():
            n = 6 if slot.params is None else len([p for p in slot.params.split(",") if p.strip()])
            args = ", ".join(str(100 + i) for i in range(n))
            ptr_type = "uintptr_t (*)(" + ", ".join(["uintptr_t"] * n or ["void"]) + ")"
            call = f"(({ptr_type})cricket_xt_{t}[{slot.index}])({args})"
            if slot.implementation == "cls_get":  # answered in C: nothing stored for (101, 102)
                checks.append(f'    if ({call} != 400) {{ puts("storage get"); return 1; }}')
                continue
            checks.append(f"    {call};")
            want = " && ".join([f"seen_t == {t}", f"seen_s == {slot.index}", f"seen_n == {n}"]
                               + [f"seen[{i}] == {100 + i}" for i in range(n)])
            checks.append(f'    if (!({want})) {{ puts("slot {table.name} {slot.index}"); return 1; }}')
        checks.append(f"    if (cricket_export_table({t}) != (uintptr_t)cricket_xt_{t}) return 2;")
    checks.append(f"    if (cricket_export_table({len(TABLES)}) != 0) return 3;")
    source = tmp_path / "tables.c"
    source.write_text(HARNESS % (KNOWN_C + AFTER_EXIT_C + STORAGE_C, c_source(), "\n".join(checks)))
    binary = tmp_path / "tables"
    subprocess.run(["gcc", "-Wall", "-Werror", "-Wno-unused-function", "-o", str(binary), str(source)],
                   check=True, capture_output=True, text=True)  # fmt: skip
    done = subprocess.run([str(binary)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout
