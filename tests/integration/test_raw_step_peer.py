"""bench.raw_step's baseline peer: a one-way write (b'W') is taken whole and not answered,
so the round trip after it reads its own echo, step after step (a peer that answered it, or
left some of its bytes unread, would hand the client the wrong bytes)."""

from __future__ import annotations

from bench.raw_socket import MESSAGE, _recv_exact, echo_peer, step_fn


def test_the_raw_step_peer_sinks_one_way_writes_and_echoes_round_trips() -> None:
    with echo_peer() as sock:
        step = step_fn(sock, payload=5000, gap_us=1.0)
        for _ in range(50):
            step()
        marker = bytes(range(MESSAGE))
        sock.sendall(marker)
        echoed = bytearray(MESSAGE)
        sock.settimeout(30)
        _recv_exact(sock, memoryview(echoed))
        assert bytes(echoed) == marker
