"""cricket_client.driver's cuGetErrorString and cuGetErrorName give the local driver's text
and name for every CUresult the driver knows (GPU machine only: the local driver answers)."""

from __future__ import annotations

import pytest

from cricket_client import driver as remote
from cricket_server.backends.cuda import gpu_available

pytestmark = pytest.mark.gpu


def test_error_texts_and_names_are_the_local_drivers() -> None:
    if not gpu_available():
        pytest.skip("no GPU here")
    from cuda.bindings import driver as local

    assert int(local.cuInit(0)[0]) == 0
    differ = []
    for code in local.CUresult:
        err, text = local.cuGetErrorString(code)
        if int(err) != 0:
            continue  # a code the installed driver does not know
        mine = remote.cuGetErrorString(int(code))[1]
        if mine != text or remote.cuGetErrorName(int(code))[1] != local.cuGetErrorName(code)[1]:
            differ.append((code.name, text, mine))
    assert not differ, differ
