"""How far CuPy and PyTorch get through the native libcuda.so.1, step by step.

    python tests/gpu/native_framework_probe.py --server HOST:PORT

Each step runs in a fresh process under `cricket-run --server ADDR -- python -c ...` with the
GPU hidden from it (CUDA_VISIBLE_DEVICES=), so that nothing can run locally. The report gives,
per framework, the steps that passed, the first one that failed with its error, and what the
library logged: driver functions that are not remoted, and the private tables
(cuGetExportTable) the CUDA runtime asked for, by UUID.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STEPS: dict[str, list[tuple[str, str]]] = {
    "cupy": [
        ("import", "import cupy"),
        ("device count", "import cupy; print(cupy.cuda.runtime.getDeviceCount())"),
        ("array creation", "import cupy; a = cupy.arange(10, dtype=cupy.float32); print(a.get())"),
        ("elementwise kernel", "import cupy; a = cupy.arange(10.0); print((a * 2 + 1).get())"),
        ("cuBLAS matmul", "import cupy; a = cupy.ones((64, 64)); print(float((a @ a).sum()))"),
    ],
    "torch": [
        ("import", "import torch"),
        ("cuda available", "import torch; print(torch.cuda.is_available(), torch.cuda.device_count())"),
        ("tensor on cuda", "import torch; t = torch.arange(10.0, device='cuda'); print(t.cpu())"),
        ("matmul", "import torch; a = torch.ones(64, 64, device='cuda'); print(float((a @ a).sum()))"),
    ],
}

_LOGGED = re.compile(
    r"(\w+ is not supported remotely[^\n]*|cuGetExportTable \{[0-9a-f]+\}[^\n]*"
    r"|cuGetExportTable: table \w+ \{[0-9A-F-]+\} slot \d+[^\n]*)"
)


def run_step(server: str, code: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    command = [sys.executable, "-m", "cricket_client.run", "--server", server, "--",
               sys.executable, "-c", code]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return subprocess.CompletedProcess(command, -1, out, err + f"\n(timed out after {timeout:g} s)")


def probe(server: str, framework: str, timeout: float = 300.0) -> dict[str, object]:
    passed: list[str] = []
    report: dict[str, object] = {"framework": framework, "passed": passed}
    for name, code in STEPS[framework]:
        done = run_step(server, code, timeout)
        logged = list(dict.fromkeys(_LOGGED.findall(done.stderr)))
        if done.returncode == 0:
            passed.append(name)
            if logged:
                report.setdefault("logged while passing", []).extend(logged)  # type: ignore[union-attr]
            continue
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        report["first failing step"] = name
        report["error"] = lines[-1] if lines else f"exit status {done.returncode}"
        report["logged"] = logged
        break
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--only", choices=sorted(STEPS), action="append")
    args = parser.parse_args()
    for framework in args.only or sorted(STEPS):
        report = probe(args.server, framework)
        print(f"== {framework}")
        for key, value in report.items():
            if key == "framework":
                continue
            if isinstance(value, list):
                print(f"  {key}:")
                for item in value:
                    print(f"    - {item}")
            else:
                print(f"  {key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
