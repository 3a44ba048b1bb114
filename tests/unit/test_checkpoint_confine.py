"""`confine_checkpoint_path`: every client-named checkpoint path lies inside a root that the
server's user alone may write, by default `default_checkpoint_root()`, and passes through no
symbolic link below it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cricket_server.backends.base import CUDA_ERROR_INVALID_VALUE, CudaError
from cricket_server.limits import confine_checkpoint_path, default_checkpoint_root


def test_default_root_is_the_users_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "state" / "cricket" / "checkpoints"
    assert default_checkpoint_root() == str(root)
    assert confine_checkpoint_path("mine", None) == str(root / "mine")
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_checkpoint_root() == str(tmp_path / "home/.local/state/cricket/checkpoints")


@pytest.mark.parametrize("path", ["/etc/cricket", "../escape", "a/../../escape", ".", ""])
def test_paths_outside_the_root_are_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(CudaError, match="not inside the server's checkpoint root") as refused:
        confine_checkpoint_path(path, str(tmp_path))
    assert refused.value.code == CUDA_ERROR_INVALID_VALUE


def test_relative_and_absolute_paths_inside(tmp_path: Path) -> None:
    assert confine_checkpoint_path("a/b", str(tmp_path)) == str(tmp_path / "a" / "b")
    assert confine_checkpoint_path(str(tmp_path / "c"), str(tmp_path)) == str(tmp_path / "c")


def test_no_symbolic_link_below_the_root_is_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "out").symlink_to(outside)
    (root / "inner").mkdir()
    (root / "in").symlink_to(root / "inner")
    for path in ("out", "out/x", "in/x", str(root / "out" / "y")):
        with pytest.raises(CudaError, match="symbolic link"):
            confine_checkpoint_path(path, str(root))


def test_a_root_others_may_write_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o777)
    with pytest.raises(CudaError, match="writable by it alone"):
        confine_checkpoint_path("x", str(root))
    root.chmod(0o700)
    assert confine_checkpoint_path("x", str(root)) == str(root / "x")
