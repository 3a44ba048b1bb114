"""A codec's pack/unpack are built on first use; threads that use it first at the same time
(two clients' first calls of one procedure, two sessions' first checkpoint) all get the
built functions, never a half-built codec."""

from __future__ import annotations

import threading
import time
from typing import Any

from cricket_xdr import xdr

THREADS = 8


class SlowlyBuilt(xdr.Codec):
    """An int codec whose build takes a while, as a large struct's does on a busy machine."""

    name = "slowly_built"

    def _build(self) -> tuple[Any, Any]:
        time.sleep(0.2)
        return xdr.xdr_int.pack, xdr.xdr_int.unpack


def test_threads_using_a_codec_first_at_once_all_encode_and_decode() -> None:
    codec = SlowlyBuilt()
    start = threading.Barrier(THREADS)
    results: list[object] = []

    def use(i: int) -> None:
        start.wait()
        try:
            results.append(codec.decode(codec.encode(i)) == i)
        except Exception as e:  # what a half-built codec raised
            results.append(e)

    threads = [threading.Thread(target=use, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == [True] * THREADS
