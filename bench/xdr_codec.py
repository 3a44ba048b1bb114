"""Encode+decode rate of a generated small struct next to a hand-written struct.Struct."""

from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import Row, rate_per_s

SAMPLE_STRUCT = struct.Struct(">iIqQdi")  # the layout of bench/sample.x, by hand
HERE = Path(__file__).parent


def _load_generated(tmp: str):
    out = Path(tmp) / "sample_rpc.py"
    subprocess.run(
        [sys.executable, "-m", "cricket_xdr", str(HERE / "sample.x"), "-o", str(out)], check=True
    )
    spec = importlib.util.spec_from_file_location("sample_rpc", out)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def run(seconds: float = 1.0) -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        gen = _load_generated(tmp)
    value = gen.sample(a=-5, b=7, c=-(1 << 40), d=1 << 60, e=2.5, f=True)
    assert gen.sample.decode(value.encode()) == value

    def generated(batch: int = 1000) -> int:
        for _ in range(batch):
            gen.sample.decode(value.encode())
        return batch

    fields = (-5, 7, -(1 << 40), 1 << 60, 2.5, 1)
    pack, unpack = SAMPLE_STRUCT.pack, SAMPLE_STRUCT.unpack

    def by_hand(batch: int = 1000) -> int:
        for _ in range(batch):
            unpack(pack(*fields))
        return batch

    ours = rate_per_s(generated, seconds)
    base = rate_per_s(by_hand, seconds)
    return [
        Row(
            name="xdr: encode+decode small struct",
            value=ours / 1e3,
            unit="k/s",
            baseline_name="hand-written struct.Struct pack+unpack, same layout",
            baseline=base / 1e3,
            ratio=base / ours,
            target="slowdown factor (lower is better)",
        )
    ]
