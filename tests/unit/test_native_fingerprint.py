"""The native library remembers what it was built from, so that a changed client rebuilds it
instead of loading one that cannot start."""

from __future__ import annotations

from pathlib import Path

from cricket_client.native.build import FINGERPRINT, SONAME, is_current, source_fingerprint


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    native = tmp_path / "client" / "native"
    native.mkdir(parents=True)
    (native / "entries.py").write_text("A = 1\n")
    (native.parent / "_enums.py").write_text("CUDA_SUCCESS = 0\n")
    lib_dir = tmp_path / "lib"
    lib_dir.mkdir()
    (lib_dir / SONAME).write_bytes(b"\x7fELF")
    return native, lib_dir / SONAME


def test_a_library_is_current_until_a_source_changes(tmp_path: Path) -> None:
    native, library = _tree(tmp_path)
    (library.parent / FINGERPRINT).write_text(source_fingerprint(native) + "\n")
    assert is_current(library, native)
    (native / "entries.py").write_text("A = 2\n")
    assert not is_current(library, native)


def test_the_error_names_and_new_modules_count(tmp_path: Path) -> None:
    native, library = _tree(tmp_path)
    before = source_fingerprint(native)
    (native.parent / "_enums.py").write_text("CUDA_SUCCESS = 0\nCUDA_ERROR_X = 9\n")
    after_enums = source_fingerprint(native)
    (native / "export_slots.py").write_text("")
    assert len({before, after_enums, source_fingerprint(native)}) == 3


def test_a_library_without_a_fingerprint_is_not_current(tmp_path: Path) -> None:
    native, library = _tree(tmp_path)
    assert not is_current(library, native)
