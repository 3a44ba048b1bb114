"""cricket-run and cricket_client.install(): which modules a program gets, with and without
cuda-python on the client, and the command line. Each case runs in a fresh interpreter (the
import system is process-wide); none needs a server (connections open on first call)."""

from __future__ import annotations

import configparser
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NO_SERVER = "127.0.0.1:9"  # never contacted: these programs make no CUDA call


def _python(code: str, *, without_cuda_python: bool = False, tmp: Path | None = None) -> subprocess.CompletedProcess[str]:
    if without_cuda_python:
        assert tmp is not None
        site = tmp / "site"
        site.mkdir(exist_ok=True)
        spec = importlib.util.find_spec("xdrlib3")
        assert spec is not None and spec.origin is not None
        if not (site / "xdrlib3").exists():
            (site / "xdrlib3").symlink_to(Path(spec.origin).parent)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": f"{site}:{ROOT}"}
        args = [sys.executable, "-S", "-c", textwrap.dedent(code)]
    else:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        args = [sys.executable, "-c", textwrap.dedent(code)]
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_install_gives_remote_driver_and_runtime_under_every_name() -> None:
    result = _python("""
        import cricket_client
        cricket_client.install()
        import cuda.bindings.driver
        from cuda.bindings import driver, runtime
        from cuda import cuda, cudart
        print(cuda.cuInit is cricket_client.driver.cuInit, driver.cuInit is cuda.cuInit)
        print(runtime.cudaMalloc is cricket_client.runtime.cudaMalloc, cudart.cudaMalloc is runtime.cudaMalloc)
        print(driver.__name__, runtime.__name__)
    """)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "True True", "True True", "cuda.bindings.driver cuda.bindings.runtime"
    ]


def test_nvrtc_stays_local_and_works() -> None:
    pytest.importorskip("cuda.bindings.nvrtc")
    result = _python("""
        import cricket_client
        cricket_client.install()
        from cuda.bindings import driver, nvrtc
        err, major, minor = nvrtc.nvrtcVersion()
        print(err == nvrtc.nvrtcResult.NVRTC_SUCCESS, major >= 12)
        print(hasattr(nvrtc, "__cricket_remote__"), driver.__cricket_remote__)
    """)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["True True", "False cricket_client.driver"]


def test_local_modules_imported_before_install_are_replaced_and_uninstall_restores() -> None:
    pytest.importorskip("cuda.bindings.driver")
    result = _python("""
        from cuda.bindings import driver as local
        import cricket_client
        from cricket_client import remote_imports
        remote_imports.install()
        from cuda.bindings import driver
        print(driver is not local, hasattr(driver, "__cricket_remote__"))
        remote_imports.uninstall()
        from cuda.bindings import driver as again
        print(hasattr(again, "__cricket_remote__"))
    """)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["True True", "False"]


def test_without_cuda_python_the_remote_modules_still_import(tmp_path: Path) -> None:
    result = _python("""
        import importlib.util
        print(importlib.util.find_spec("cuda") is None)
        import cricket_client
        cricket_client.install()
        from cuda.bindings import driver, runtime
        from cuda import cudart
        print(driver.__cricket_remote__, cudart.__cricket_remote__)
        try:
            import cuda.bindings.nvrtc
        except ModuleNotFoundError as exc:
            print("missing:", exc.name)
    """, without_cuda_python=True, tmp=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "True", "cricket_client.driver cricket_client.runtime", "missing: cuda.bindings.nvrtc"
    ]


def test_a_function_the_remote_modules_lack_fails_naming_it(tmp_path: Path) -> None:
    result = _python("""
        import cricket_client
        cricket_client.install()
        from cuda.bindings import driver
        driver.cuGraphicsGLRegisterBuffer(0, 0)
    """, without_cuda_python=True, tmp=tmp_path)  # fmt: skip
    assert result.returncode == 1
    assert "NotSupportedRemotely" in result.stderr
    assert "cuda.bindings.driver.cuGraphicsGLRegisterBuffer is not supported remotely" in result.stderr


def _run(*args: str, env_address: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "REMOTE_GPU_ADDRESS"}
    if env_address:
        env["REMOTE_GPU_ADDRESS"] = env_address
    return subprocess.run(
        [sys.executable, "-m", "cricket_client.run", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_cricket_run_runs_the_script_as_main_with_its_arguments(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    (tmp_path / "helper_mod.py").write_text("VALUE = 42\n")
    script.write_text(textwrap.dedent("""
        import os, sys
        import helper_mod  # the script's folder is on sys.path
        from cuda.bindings import runtime
        print(__name__, sys.argv[1:], helper_mod.VALUE, os.environ["REMOTE_GPU_ADDRESS"])
        print(runtime.__cricket_remote__)
        sys.exit(3)
    """))
    result = _run("--server", NO_SERVER, str(script), "a", "--flag")
    assert result.returncode == 3, result.stderr
    assert result.stdout.splitlines() == [
        f"__main__ ['a', '--flag'] 42 {NO_SERVER}", "cricket_client.runtime"
    ]


def test_cricket_run_runs_a_module(tmp_path: Path) -> None:
    result = _run("-m", "json.tool", "--help", env_address=NO_SERVER)
    assert result.returncode == 0, result.stderr
    assert "json.tool" in result.stdout


def test_cricket_run_refuses_without_a_script_or_a_server(tmp_path: Path) -> None:
    result = _run("--server", NO_SERVER)
    assert result.returncode == 2 and "name a script" in result.stderr
    script = tmp_path / "p.py"
    script.write_text("print(1)\n")
    result = _run(str(script))
    assert result.returncode == 2 and "REMOTE_GPU_ADDRESS" in result.stderr
    result = _run("--server", NO_SERVER, str(tmp_path / "missing.py"))
    assert result.returncode == 2 and "missing.py: no such file" in result.stderr


def test_cricket_run_is_a_console_script() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    scripts = config["options.entry_points"]["console_scripts"]
    assert "cricket-run = cricket_client.run:main" in scripts.splitlines()


def test_options_end_where_the_program_begins() -> None:
    from cricket_client.run import split_argv

    assert split_argv(["--server", "h:1", "prog.py", "--server", "x", "-h"]) == (
        ["--server", "h:1"], ["prog.py", "--server", "x", "-h"]
    )  # fmt: skip
    assert split_argv(["-m", "pkg.mod", "--help"]) == (["-m", "pkg.mod"], ["--help"])
    assert split_argv(["--server=h:1", "--", "-weird.py"]) == (["--server=h:1"], ["-weird.py"])
