"""The real driver's private tables against their declarations (export_tables.py): each
declared table is offered by the real driver, and where its slot 0 holds its size, the length
declared is the real one. Only slot 0 is read; no slot is called."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cricket_client.native.export_tables import TABLES
from cricket_server.backends.cuda import gpu_available

pytestmark = pytest.mark.gpu

# Runs in a fresh process: the real libcuda.so.1, never the native library.
PROBE = r"""
import ctypes, json, sys
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
out = {}
for uuid in sys.argv[1:]:
    table = ctypes.c_void_p()
    err = cuda.cuGetExportTable(ctypes.byref(table), (ctypes.c_char * 16).from_buffer_copy(bytes.fromhex(uuid)))
    out[uuid] = [err, ctypes.c_size_t.from_address(table.value).value if not err and table.value else None]
print(json.dumps(out))
"""


def test_the_real_driver_offers_every_declared_table_with_the_declared_length() -> None:
    if not gpu_available():
        pytest.skip("needs a GPU and its driver")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *(t.uuid for t in TABLES)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    real = json.loads(done.stdout)
    wrong = []
    for table in TABLES:
        err, size = real[table.uuid]
        if err:
            wrong.append(f"{table.name}: the driver answers {err}")
        elif table.sized and size != 8 * table.length:
            wrong.append(f"{table.name}: declared {table.length} pointers, the driver's is {size} bytes")
    assert not wrong, "\n".join(wrong)
