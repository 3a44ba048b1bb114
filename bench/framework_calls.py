"""Round trips a framework's small-op loop pays through the native door (numba-cuda, cuda.core).

    python -m bench.framework_calls [--steps N] [--only numba|cuda.core] [--out REPORT.json]

Each loop runs unmodified in a process of its own, locally (where a GPU answers) and under
`cricket-run` against a fresh cricket-server with the GPU hidden from it
(CUDA_VISIBLE_DEVICES=), with CRICKET_CALL_STATS writing its calls as JSON
(cricket_client.call_stats). It runs twice remotely, N and 5N steps, so that the difference
of the two counts is what the loop's 4N steps cost, without imports and set-up: per step the
calls sent, the replies waited for (round trips in the step's time) and which procedures
those were. The wall time per step comes from the longer run, against the local one.

The loops, each a small kernel and a small read per step (as a decoding step):
numba-cuda `axpy[256, 256](y, x, a)` on 64 Ki floats then `y[:1].copy_to_host(out)`, the
same kernel through cuda.core on 1 Ki floats (`launch`, `copy_to` a 4 KiB host buffer,
`stream.sync()`), and CuPy's and PyTorch's `y += a * x` on 64 Ki floats then one float read
back (their own CUDA runtime under them), and their 128x128 matrix product (cuBLAS) then one
float read back. A loop whose framework is missing or fails is
reported and skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from bench.common import Row, print_table
from bench.server_proc import cricket_server

ROOT = Path(__file__).resolve().parents[1]
STEPS = 200

_TIMED = """
import sys, time
{setup}
steps = int(sys.argv[1])
for _ in range(20):
    {step}
t0 = time.perf_counter()
for _ in range(steps):
    {step}
print("us/step", (time.perf_counter() - t0) / steps * 1e6)
"""

_CORE_SETUP = """
import numpy as np
try:
    from cuda.core import Buffer, Device, LaunchConfig, Program, ProgramOptions, launch
except ImportError:
    from cuda.core.experimental import (Buffer, Device, LaunchConfig, Program, ProgramOptions,
                                        launch)
dev = Device()
dev.set_current()
stream = dev.create_stream()
arch = "".join(str(i) for i in dev.compute_capability)
code = 'extern "C" __global__ void axpy(float *y, const float *x, float a, int n) {' \\
    ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }'
kernel = Program(code, code_type="c++", options=ProgramOptions(arch=f"sm_{arch}")) \\
    .compile("cubin").get_kernel("axpy")
n = 1024
dx, dy = dev.allocate(4 * n, stream=stream), dev.allocate(4 * n, stream=stream)
out = np.zeros(n, dtype=np.float32)
host = Buffer.from_handle(out.ctypes.data, 4 * n)
config = LaunchConfig(grid=n // 256, block=256)
a, count = np.float32(1.0001), np.int32(n)
"""

LOOPS = {
    "numba": (
        "import numpy as np\nfrom numba import cuda\n"
        "@cuda.jit\ndef axpy(y, x, a):\n    i = cuda.grid(1)\n"
        "    if i < y.size:\n        y[i] = a * x[i] + y[i]\n"
        "x = cuda.to_device(np.ones(1 << 16, dtype=np.float32))\n"
        "y = cuda.to_device(np.zeros(1 << 16, dtype=np.float32))\n"
        "out = np.zeros(1, dtype=np.float32)",
        "axpy[256, 256](y, x, 1.0001); y[:1].copy_to_host(out)",
    ),
    "cuda.core": (
        _CORE_SETUP,
        "launch(stream, config, kernel, dy, dx, a, count); dy.copy_to(host, stream=stream); "
        "stream.sync()",
    ),
    "cupy": (
        "import cupy as cp\nimport numpy as np\n"
        "x = cp.ones(1 << 16, dtype=cp.float32)\ny = cp.zeros(1 << 16, dtype=cp.float32)\n"
        "out = np.zeros(1, dtype=np.float32)",
        "y += 1.0001 * x; y[:1].get(out=out)",
    ),
    "torch": (
        "import torch\nx = torch.ones(1 << 16, device='cuda')\n"
        "y = torch.zeros(1 << 16, device='cuda')\nout = torch.zeros(1)",
        "y.add_(x, alpha=1.0001); out.copy_(y[:1])",
    ),
    "cupy-gemm": (
        "import cupy as cp\nimport numpy as np\n"
        "a = cp.ones((128, 128), dtype=cp.float32)\nc = cp.empty((128, 128), dtype=cp.float32)\n"
        "out = np.zeros(1, dtype=np.float32)",
        "cp.matmul(a, a, out=c); c[0, :1].get(out=out)",
    ),
    "torch-gemm": (
        "import torch\na = torch.ones(128, 128, device='cuda')\n"
        "c = torch.empty(128, 128, device='cuda')\nout = torch.zeros(1)",
        "torch.matmul(a, a, out=c); out.copy_(c[0, :1])",
    ),
    "torch-conv": (  # cuDNN, whose handle keeps a flag in mapped host memory (mapped_host)
        "import torch\nconv = torch.nn.Conv2d(16, 16, 3, padding=1).cuda()\n"
        "x = torch.ones(8, 16, 32, 32, device='cuda')\nout = torch.zeros(1)\n"
        "torch.set_grad_enabled(False)",
        "out.copy_(conv(x)[0, 0, 0, :1])",
    ),
}


def _program(name: str) -> str:
    setup, step = LOOPS[name]
    return textwrap.dedent(_TIMED).format(setup=setup, step=step)


def _run(args: list[str], env: dict[str, str], timeout: float = 600) -> float:
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])}...: exit {done.returncode}\n{done.stderr[-2000:]}")
    return float(done.stdout.split("us/step")[-1].split()[0])


def measure(server: str, name: str, steps: int, local: bool) -> dict[str, object]:
    """Per step of loop `name`: wall us remote (and local), calls sent and waited for."""
    with tempfile.TemporaryDirectory() as tmp:
        program = Path(tmp) / f"{name}_loop.py"
        program.write_text(_program(name))
        out: dict[str, object] = {}
        if local:
            out["local_us"] = _run([sys.executable, str(program), str(5 * steps)], dict(os.environ))
        tables = []
        for n in (steps, 5 * steps):
            target = Path(tmp) / f"calls-{n}.json"
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "CRICKET_CALL_STATS": str(target)}
            command = [sys.executable, "-m", "cricket_client.run", "--server", server, "--",
                       sys.executable, str(program), str(n)]  # fmt: skip
            out["remote_us"] = _run(command, env)
            tables.append(json.loads(target.read_text())["procedures"])
    short, long = tables
    per_step: dict[str, dict[str, float]] = {}
    for proc in set(short) | set(long):
        a, b = short.get(proc, {}), long.get(proc, {})
        diff = {k: (b.get(k, 0) - a.get(k, 0)) / (4 * steps) for k in ("sent", "waited", "known", "gathered")}
        if any(abs(v) > 1e-9 for v in diff.values()):
            per_step[proc] = diff
    out["per_step"] = per_step
    out["waited_per_step"] = sum(r["waited"] for r in per_step.values())
    out["sent_per_step"] = sum(r["sent"] for r in per_step.values())
    return out


def run(steps: int = STEPS, only: list[str] | None = None, backend: str = "cuda") -> tuple[list[Row], dict]:
    import importlib.util

    local = importlib.util.find_spec("cuda.bindings") is not None and backend == "cuda"
    rows: list[Row] = []
    report: dict[str, object] = {}
    with cricket_server(backend) as server:
        for name in only or sorted(LOOPS):
            try:
                result = measure(server, name, steps, local)
            except RuntimeError as exc:  # the framework is missing or failed: say so, go on
                print(f"framework {name}: not measured: {str(exc)[-400:]}")
                report[name] = {"error": str(exc)[-2000:], "per_step": {}}
                continue
            report[name] = result
            local_us = result.get("local_us")
            rows.append(Row(
                f"framework {name}: step ({LOOPS[name][1]})", float(result["remote_us"]), "us",  # type: ignore[arg-type]
                "local, same loop" if local_us else "", local_us,  # type: ignore[arg-type]
                float(result["remote_us"]) / float(local_us) if local_us else None, "",  # type: ignore[arg-type]
            ))  # fmt: skip
            rows.append(Row(f"framework {name}: replies waited for per step",
                            float(result["waited_per_step"]), "", "", None, None, ""))  # type: ignore[arg-type]
    return rows, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.framework_calls")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--only", choices=sorted(LOOPS), action="append")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rows, report = run(args.steps, args.only)
    print_table(rows)
    for name, result in report.items():
        print(f"== {name}: per step")
        per_step = result["per_step"]  # type: ignore[index]
        for proc, r in sorted(per_step.items(), key=lambda kv: -kv[1]["waited"]):
            print(f"  {proc:<36} sent {r['sent']:6.2f} waited {r['waited']:6.2f} "
                  f"known {r['known']:6.2f} gathered {r['gathered']:6.2f}")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
