"""Fixtures shared by unit tests."""

from __future__ import annotations

from typing import Any

import pytest

from cricket_server.backends.cuda import fast_launch


@pytest.fixture(scope="session")
def loop() -> tuple[Any, Any]:
    """(ffi, library) of the server's C launch loops (`fast_launch`), built here once."""
    made = fast_launch.load()
    if made is None:
        pytest.skip("no C compiler: the C loops cannot be built here")
    return made
