"""Run cuda-python's binding tests locally and remotely and compare them, test by test.

    python3 tools/run_binding_tests.py TESTS_DIR [--backend cuda|sim] [--no-local]
                                       [--door python|native] [--out DIR]
                                       [--timeout SECONDS] [FILE ...]

TESTS_DIR is a folder holding the test files of NVIDIA/cuda-python's cuda_bindings/tests
(test_cuda.py, test_cudart.py, test_kernelParams.py, test_interoperability.py by default, with
their conftest.py; a `cuda_python_test_helpers` folder two levels up is found by that conftest).
The files are run as they are, never copied into the project.

Local run: `python -m pytest FILES` in TESTS_DIR, with this machine's GPU.
Remote run: a cricket-server with the backend named (`cuda`: this machine's GPU) on a free
loopback port, and `python -m cricket_client.run --server ADDR -m pytest FILES` (`--door
python`: cuda.bindings swapped for the Python client's modules) or `... --server ADDR --
python -m pytest FILES` (`--door native`: the real cuda.bindings.driver on the project's
native libcuda.so.1, cuda.bindings.runtime the Python client's as cricket-run gives Python
programs there; CRICKET_NATIVE_RUNTIME=cudart keeps cuda-python's), with CUDA_VISIBLE_DEVICES= in the client's environment only, so that nothing the tests do can reach
a GPU of the client. Both runs write JUnit XML to --out (default: a temporary folder), which
this script reads to print every test's local and remote outcome, the counts, and the tests
that pass locally and not remotely. It needs python3 with pytest, numpy and cuda-bindings; the
project is found next to this script. Exit status: 0 when every test that passes locally
passes remotely, 1 otherwise, 2 when a run could not be made.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILES = (
    "test_cuda.py",
    "test_cudart.py",
    "test_kernelParams.py",
    "test_interoperability.py",
)
OUTCOMES = ("passed", "failed", "error", "skipped", "absent")
START_LIMIT = 120.0  # seconds the server may take to get ready


def pytest_command(out: Path, junit: Path, files: list[str], tests: Path) -> list[str]:
    """pytest's arguments: quiet, no cache, every outcome reported, JUnit XML, and an empty
    ini file so that no configuration from the folders above applies."""
    ini = out / "pytest.ini"
    ini.write_text("[pytest]\n")
    return ["-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "--tb=short", "-c", str(ini),
            "--rootdir", str(tests), f"--junitxml={junit}", *files]  # fmt: skip


def environment(**extra: str) -> dict[str, str]:
    """This environment with the project on PYTHONPATH (after what is there already)."""
    env = {k: v for k, v in os.environ.items() if k != "REMOTE_GPU_ADDRESS"}
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([*paths, str(ROOT)])
    env.update(extra)
    return env


def run(
    name: str, command: list[str], env: dict[str, str], cwd: Path, log: Path, timeout: float
) -> int:
    print(f"== {name}: {' '.join(command)}", flush=True)
    with open(log, "wb") as out:
        try:
            done = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=timeout, check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            print(f"== {name}: did not finish within {timeout:g} s (log: {log})", flush=True)
            return -1
    tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
    print(f"== {name}: exit {done.returncode}; {tail[0]} (log: {log})", flush=True)
    return done.returncode


class ServerProcess:
    """cricket-server on a free loopback port, in a process group of its own."""

    def __init__(self, backend: str, out: Path) -> None:
        ready = out / "server.ready"
        ready.unlink(missing_ok=True)
        self.log = out / "server.log"
        command = [sys.executable, "-m", "cricket_server", "--backend", backend,
                   "--listen", "127.0.0.1:0", "--ready-file", str(ready)]  # fmt: skip
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(command, cwd=ROOT, env=environment(), stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + START_LIMIT
        while not ready.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"cricket-server did not get ready; its log:\n{self.log.read_text()}"
                )
            time.sleep(0.1)
        self.address = ready.read_text().strip()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()


def outcomes(junit: Path) -> dict[str, str]:
    """test id (file::name) -> passed, failed, error or skipped, from a JUnit XML report; a
    file that failed to import appears as one errored entry named after it."""
    if not junit.exists():
        return {}
    result: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1] or case.get("file", "")
        test_id = f"{module}::{case.get('name', '')}" if module else case.get("name", "")
        kinds = {child.tag for child in case}
        if "error" in kinds:
            result[test_id] = "error"
        elif "failure" in kinds:
            result[test_id] = "failed"
        elif "skipped" in kinds:
            result[test_id] = "skipped"
        else:
            result[test_id] = "passed"
    return result


def compare(local: dict[str, str], remote: dict[str, str], have_local: bool) -> int:
    """Print the per-test table and the counts; the number of tests passing locally only."""
    names = sorted(set(local) | set(remote))
    width = max((len(n) for n in names), default=10)
    print(f"\n{'test':<{width}}  {'local':<8} remote")
    for name in names:
        here, there = local.get(name, "absent"), remote.get(name, "absent")
        mark = "  <-- passes locally only" if here == "passed" and there != "passed" else ""
        print(f"{name:<{width}}  {here if have_local else '-':<8} {there}{mark}")
    local_counts, remote_counts = Counter(local.values()), Counter(remote.values())
    print("\ncounts   " + "  ".join(f"{o:>7}" for o in OUTCOMES[:-1]))
    if have_local:
        print("local    " + "  ".join(f"{local_counts[o]:>7}" for o in OUTCOMES[:-1]))
    print("remote   " + "  ".join(f"{remote_counts[o]:>7}" for o in OUTCOMES[:-1]))
    if not have_local:
        return 0
    lost = [n for n in names if local.get(n) == "passed" and remote.get(n) != "passed"]
    gained = [n for n in names if remote.get(n) == "passed" and local.get(n) != "passed"]
    both = sum(1 for n in names if local.get(n) == "passed" and remote.get(n) == "passed")
    print(
        f"\npass in both: {both}; pass locally only: {len(lost)}; pass remotely only: {len(gained)}"
    )
    for name in lost:
        print(f"  local only: {name} (remote: {remote.get(name, 'absent')})")
    for name in gained:
        print(f"  remote only: {name} (local: {local.get(name, 'absent')})")
    return len(lost)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("tests", type=Path, help="the folder of cuda_bindings/tests files")
    parser.add_argument("files", nargs="*", help=f"test files (default: {' '.join(DEFAULT_FILES)})")
    parser.add_argument("--backend", default="cuda", choices=("cuda", "sim"), help="server backend")
    parser.add_argument("--no-local", action="store_true", help="skip the local run (no GPU here)")
    parser.add_argument("--door", default="python", choices=("python", "native"),
                        help="the remote run's door: Python modules swapped, or the native "
                        "libcuda.so.1 under the real cuda.bindings")
    parser.add_argument(
        "--out", type=Path, help="folder for logs and JUnit XML (default: temporary)"
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    args = parser.parse_args(argv)
    tests = args.tests.resolve()
    files = list(args.files or DEFAULT_FILES)
    missing = [f for f in files if not (tests / f).is_file()]
    if missing:
        parser.error(f"not in {tests}: {', '.join(missing)}")
    out = (args.out or Path(tempfile.mkdtemp(prefix="binding-tests-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    local_xml, remote_xml = out / "local.xml", out / "remote.xml"
    for stale in (local_xml, remote_xml):
        stale.unlink(missing_ok=True)
    if not args.no_local:
        command = [sys.executable, *pytest_command(out, local_xml, files, tests)]
        run("local", command, environment(), tests, out / "local.log", args.timeout)
    try:
        server = ServerProcess(args.backend, out)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        door = ["--", sys.executable] if args.door == "native" else []
        command = [sys.executable, "-m", "cricket_client.run", "--server", server.address,
                   *door, *pytest_command(out, remote_xml, files, tests)]  # fmt: skip
        run("remote", command, environment(CUDA_VISIBLE_DEVICES=""), tests, out / "remote.log",
            args.timeout)  # fmt: skip
    finally:
        server.stop()
    local, remote = outcomes(local_xml), outcomes(remote_xml)
    if not remote or (not args.no_local and not local):
        print(f"no JUnit report from a run; see the logs in {out}", file=sys.stderr)
        return 2
    lost = compare(local, remote, not args.no_local)
    print(f"\nlogs and reports: {out}")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
