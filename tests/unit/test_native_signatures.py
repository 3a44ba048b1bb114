"""The native library's table of driver functions: the ABI variant each (name, version) request
of cuGetProcAddress gets, and that every exported function is a driver function with a Python
implementation (no compiler, no server)."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

from cricket_client._enums import DRIVER_NAMES
from cricket_client.native.families import HEADER_NAMES
from cricket_client.native.signatures import (
    C_ONLY,
    ENTRIES,
    PER_THREAD,
    PER_THREAD_FLAG,
    VARIANTS,
    c_declarations,
    select_symbol,
    stub_symbols,
)

ENTRIES_PY = Path(__file__).resolve().parents[2] / "cricket_client" / "native" / "entries.py"


@pytest.mark.parametrize(
    ("name", "version", "symbol"),
    [
        ("cuMemAlloc", 3020, "cuMemAlloc_v2"),
        ("cuMemAlloc", 13050, "cuMemAlloc_v2"),
        ("cuMemAlloc", 2000, None),  # the 32-bit ABI of CUDA 2.x is not exported
        ("cuCtxCreate", 3020, "cuCtxCreate_v2"),
        ("cuCtxCreate", 11040, "cuCtxCreate_v3"),
        ("cuCtxCreate", 12050, "cuCtxCreate_v4"),
        ("cuCtxDestroy", 4000, "cuCtxDestroy_v2"),
        ("cuCtxSynchronize", 2000, "cuCtxSynchronize"),
        ("cuCtxSynchronize", 13000, "cuCtxSynchronize_v2"),
        ("cuCtxGetDevice", 13000, "cuCtxGetDevice_v2"),
        ("cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2"),
        ("cuEventElapsedTime", 12080, "cuEventElapsedTime_v2"),
        ("cuLaunchKernel", 4000, "cuLaunchKernel"),
        ("cuGraphExecBatchMemOpNodeSetParams", 11070, None),  # not remoted
        ("cuGraphCreate", 10000, "cuGraphCreate"),
        ("cuStreamBeginCapture", 10000, None),  # the ABI before the capture mode
        ("cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2"),
        ("cuStreamGetCaptureInfo", 11030, "cuStreamGetCaptureInfo_v2"),
        ("cuStreamGetCaptureInfo", 12030, "cuStreamGetCaptureInfo_v3"),
        ("cuGraphAddKernelNode", 10000, None),  # CUDA_KERNEL_NODE_PARAMS without kern/ctx
        ("cuGraphAddKernelNode", 12000, "cuGraphAddKernelNode_v2"),
        ("cuMemcpy2D", 3020, "cuMemcpy2D_v2"),
        ("cuMemPoolCreate", 11020, "cuMemPoolCreate"),
    ],
)
def test_cuGetProcAddress_hands_out_the_abi_the_version_asks_for(
    name: str, version: int, symbol: str | None
) -> None:
    assert select_symbol(name, version) == symbol


@pytest.mark.parametrize(
    ("name", "version", "symbol"),
    [
        ("cuLaunchKernel", 7000, "cuLaunchKernel_ptsz"),
        ("cuMemcpyHtoDAsync", 7000, "cuMemcpyHtoDAsync_v2_ptsz"),
        ("cuMemcpyHtoD", 7000, "cuMemcpyHtoD_v2_ptds"),
        ("cuLaunchKernelEx", 11060, "cuLaunchKernelEx_ptsz"),
        ("cuStreamDestroy", 4000, "cuStreamDestroy_v2"),
        ("cuCtxSynchronize", 13000, "cuCtxSynchronize_v2"),
    ],
)
def test_the_per_thread_flag_selects_the_per_thread_default_stream_forms(
    name: str, version: int, symbol: str
) -> None:
    assert select_symbol(name, version, PER_THREAD_FLAG) == symbol


def test_every_exported_function_is_a_driver_function() -> None:
    assert set(VARIANTS) <= set(DRIVER_NAMES) | HEADER_NAMES
    assert {name for name in C_ONLY if not name.endswith("_v2")} <= set(DRIVER_NAMES)


def _entries_of(module: str) -> list[str]:
    tree = ast.parse(ENTRIES_PY.with_name(module).read_text())
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(d, ast.Name) and d.id == "_entry" for d in node.decorator_list)
    ]


def test_every_exported_function_has_one_python_implementation() -> None:
    """Written by hand (entries.py, entries_families.py) or generated (_entries_generated.py,
    tools/gen_mirrors.py), never both."""
    modules = ("entries.py", "entries_families.py", "_entries_generated.py")
    implemented = [name for module in modules for name in _entries_of(module)]
    assert len(implemented) == len(set(implemented))
    assert set(implemented) == {symbol for symbol, _ in ENTRIES}


def test_every_generated_entry_calls_a_client_function() -> None:
    """The generated entries call the cricket_client.driver function of their name (ABI suffix
    dropped): all of them must exist, or the library would fail as it starts."""
    from cricket_client import driver

    source = ENTRIES_PY.with_name("_entries_generated.py").read_text()
    called = {
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        and node.value.id == "driver"
    }  # fmt: skip
    assert called
    for name in called:
        assert callable(getattr(driver, name, None)), name
    exported = next(
        ast.literal_eval(node.value)
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__"
    )
    assert set(exported) == set(_entries_of("_entries_generated.py"))


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_the_declarations_are_valid_c(tmp_path: Path) -> None:
    header = tmp_path / "cricket_cuda.h"
    header.write_text("#include <stddef.h>\n" + c_declarations() + "\n")
    subprocess.run(["gcc", "-fsyntax-only", "-Wall", "-Werror", str(header)], check=True, timeout=60)


def test_every_driver_function_not_remoted_is_exported_by_name_as_a_stub() -> None:
    """Programs that dlsym by name (numba's ctypes binding) or link against libcuda find every
    driver function; the ones not remoted answer CUDA_ERROR_NOT_SUPPORTED."""
    stubs = set(stub_symbols())
    exported = {symbol for symbol, _ in ENTRIES} | set(C_ONLY) | set(PER_THREAD.values())
    assert not stubs & exported
    assert {"cuGraphExecBatchMemOpNodeSetParams", "cuGraphicsGLRegisterBuffer", "cuIpcOpenMemHandle", "cuMemAlloc"} <= stubs
    assert "cuMemAlloc_v2" in exported
