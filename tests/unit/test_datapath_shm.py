"""The shared-memory handshake: only a client that read the segment's proof gets it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cricket_client.datapath.shm import ClientSegment
from cricket_server.datapath.shm import ServerSegment


def test_a_client_on_the_same_host_reads_the_proof_and_shares_the_bytes(tmp_path: Path) -> None:
    server = ServerSegment(1 << 20, directory=tmp_path)
    client = ClientSegment(server.name, server.size, directory=tmp_path)
    assert server.accept(client.proof)
    client.view[100:105] = b"hello"
    assert bytes(server.span("copy", 100, 5)) == b"hello"
    assert not server.path.exists()  # unlinked once both ends mapped it
    client.close()
    server.close()


def test_a_wrong_proof_is_refused(tmp_path: Path) -> None:
    server = ServerSegment(4096, directory=tmp_path)
    assert not server.accept(b"\0" * 32)
    assert not server.accepted
    server.close()


def test_a_client_elsewhere_cannot_open_the_segment(tmp_path: Path) -> None:
    server = ServerSegment(4096, directory=tmp_path)
    with pytest.raises(FileNotFoundError):
        ClientSegment(server.name, server.size, directory=tmp_path / "other-host")
    server.close()


def test_names_not_made_by_the_server_are_not_opened(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="not one cricket-server makes"):
        ClientSegment("../../etc/passwd", 4096, directory=tmp_path)


def test_spans_outside_the_segment_are_refused(tmp_path: Path) -> None:
    server = ServerSegment(4096, directory=tmp_path)
    with pytest.raises(IndexError, match="bytes 4000..4200 outside the 4096-byte shared segment"):
        server.span("cuMemcpyHtoD", 4000, 200)
    server.close()


def test_segments_of_dead_servers_are_swept(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    (tmp_path / f"cricket-{dead}-abc").write_bytes(b"x")
    (tmp_path / f"cricket-{os.getpid()}-def").write_bytes(b"x")
    server = ServerSegment(4096, directory=tmp_path)
    names = {p.name for p in tmp_path.iterdir()}
    assert f"cricket-{dead}-abc" not in names
    assert f"cricket-{os.getpid()}-def" in names and server.name in names
    server.close()
