"""Each generated mirror takes the parameters of the cuda.bindings function it stands for: the
same names, in the same order (a program calling with keywords runs unchanged)."""

from __future__ import annotations

import inspect

import pytest

from cricket_client import _driver_generated, _runtime_generated

real = pytest.importorskip("cuda.bindings.driver")
real_runtime = pytest.importorskip("cuda.bindings.runtime")


@pytest.mark.parametrize("name", _driver_generated.__all__)
def test_generated_driver_mirror_has_cuda_bindings_parameters(name: str) -> None:
    assert hasattr(real, name), f"cuda.bindings.driver has no {name}"
    theirs = list(inspect.signature(getattr(real, name)).parameters)
    ours = list(inspect.signature(getattr(_driver_generated, name)).parameters)
    assert ours == theirs


@pytest.mark.parametrize("name", _runtime_generated.__all__)
def test_generated_runtime_mirror_has_cuda_bindings_parameters(name: str) -> None:
    assert hasattr(real_runtime, name), f"cuda.bindings.runtime has no {name}"
    theirs = list(inspect.signature(getattr(real_runtime, name)).parameters)
    ours = list(inspect.signature(getattr(_runtime_generated, name)).parameters)
    assert ours == theirs
