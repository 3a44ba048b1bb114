"""Comparing the client's generated mirrors of cuda.bindings (cricket_client/_enums.py,
_runtime_enums.py) with the cuda-bindings installed for the tests.

The mirrors are generated from one cuda-bindings release (their DO NOT EDIT header and
CUDA_BINDINGS_VERSION name it) and setup.cfg pins the development dependency to its
major.minor. Against that release the comparisons are exact; against another one (a patch
release, or an install that ignored the pin) only what both know must agree: a newer release
may add enum members, and that is no fault of the mirror.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Any

import pytest

from cricket_client import _enums

GENERATED_FROM = _enums.CUDA_BINDINGS_VERSION


def installed() -> str:
    """The version of the installed cuda-bindings (skips the test without one)."""
    bindings = pytest.importorskip("cuda.bindings")
    return str(bindings.__version__)


def same_release() -> bool:
    """Whether the installed cuda-bindings is the release the mirrors were generated from."""
    return installed() == GENERATED_FROM


def need_same_release() -> None:
    """Skip a test that holds only for the release the mirrors were generated from."""
    if not same_release():
        pytest.skip(
            f"cuda-bindings {installed()} is installed, the mirrors come from {GENERATED_FROM}: "
            "regenerate them (tools/gen_driver_enums.py, tools/gen_runtime_enums.py) to compare"
        )


def assert_members_agree(ours: Mapping[str, int], theirs: Mapping[str, int]) -> None:
    """Every name both have has one value; against the generating release, the same names."""
    differing = {n: (ours[n], theirs[n]) for n in ours.keys() & theirs.keys() if ours[n] != theirs[n]}
    assert not differing, f"(ours, cuda-bindings {installed()}) differ: {differing}"
    if same_release():
        assert ours.keys() == theirs.keys(), (
            f"only ours: {sorted(ours.keys() - theirs.keys())}, "
            f"only cuda-bindings': {sorted(theirs.keys() - ours.keys())}"
        )


_STRUCT_PARAMETER = re.compile(r"(\w+) (\w+): (?:Optional\[)?(\w+)\]?")


def struct_parameters(real_function: Any, ours: Any) -> dict[str, Any]:
    """Parameter name -> an empty struct of our module, for each parameter cuda-bindings'
    `real_function` declares as a struct (its signature line: `Type name: Optional[Type]`)."""
    first = (real_function.__doc__ or "").splitlines()[:1]
    found = {}
    for ctype, name, annotated in _STRUCT_PARAMETER.findall(first[0] if first else ""):
        cls = getattr(ours, annotated, None)
        if ctype == annotated and isinstance(cls, type) and not issubclass(cls, (int, enum.Enum)):
            found[name] = cls()
    return found
