"""The answer of the driver's INTEGRITY_CHECK table (slot 1), by which the CUDA runtime checks,
before its first device call, that the driver it loaded is NVIDIA's.

The runtime calls `integrity_check(version, unix_seconds, result)` and compares the 16 bytes
written to `result` with what it computes itself from the same facts; cudaGetDeviceCount fails
(cudaErrorIntegrityCheckFailed) when they differ. What those bytes are comes from the ZLUDA
project's public notes (export_tables.py, [Z]): for a `version` whose last decimal digit is 0
or 1 a fixed value (its byte 7 set to 24 for 1); else an HMAC (RFC 2104) over MD2 (RFC 1319),
under a fixed 16-byte key, of these facts, little-endian:

| bytes | field                                                               |
|-------|---------------------------------------------------------------------|
| 4     | the driver version (cuDriverGetVersion)                             |
| 4     | `version`, the runtime's                                            |
| 4     | the process id                                                      |
| 4     | the calling thread's pthread_t, its low 32 bits                     |
| 8     | the address of the CUDART_INTERFACE table this driver handed out    |
| 8     | the address of the INTEGRITY_CHECK table                            |
| 8     | the address of the slot's own function                              |
| 8     | `unix_seconds`                                                      |
| 28 n  | for each device: its UUID (16 bytes), PCI domain, bus, device id    |

Every fact is the one the runtime sees through this library: the server's devices and driver
version, this process's tables. It proves nothing about the GPU; it is a handshake the runtime
insists on, answered as the real driver answers it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DeviceFacts", "HashFacts", "hmac_md2", "integrity_answer", "md2"]

# RFC 1319, 3.2: the permutation of 0..255 built from the digits of pi
_S = bytes.fromhex(
    "292e43c9a2d87c013d3654a1ecf0061362a705f3c0c7738c98932bd9bc4c82ca"
    "1e9b573cfdd4e01667426f188a17e512be4ec4d6da9ede49a0fbf58ebb2fee7a"
    "a968799115b2073f94c210890b225f21807f5d9a5a903227353ecce7bff79703"
    "ff1930b348a5b5d1d75e922aac56aac64fb838d296a47db676fc6be29c7404f1"
    "459d705964718720865bcf65e62da8021b6025adaeb0b9f61c46616934407e0f"
    "5547a323dd51af3ac35cf9cebac5ea262c530d6e85288409d3dfcdf441814d52"
    "6adc37c86cc1abfa24e17b080cbdb14a7888958be363e86de9cbd5fe3b001d39"
    "f2efb70e6658d0e4a67772f8eb754b0a314450b48fed1f1adb998d339f118314"
)
_BLOCK = 16
# [Z] the key (as the notes derive it from a table of the driver) and the fixed answer
_KEY = bytes.fromhex("146addae53a9a752aa0841360bf55a9f")
_FIXED = (0x8ED383AA1F4CD1E83341181C03CB675C).to_bytes(16, "little")
_FACTS = struct.Struct("<IIIIQQQQ")
_DEVICE = struct.Struct("<16sIII")


def md2(data: bytes) -> bytes:
    """The MD2 digest of `data` (RFC 1319, with its erratum: the checksum byte is xored)."""
    pad = _BLOCK - len(data) % _BLOCK
    data = bytes(data) + bytes([pad]) * pad
    checksum = bytearray(_BLOCK)
    last = 0
    for at in range(0, len(data), _BLOCK):
        for j in range(_BLOCK):
            checksum[j] ^= _S[data[at + j] ^ last]
            last = checksum[j]
    data += bytes(checksum)
    state = bytearray(3 * _BLOCK)
    for at in range(0, len(data), _BLOCK):
        for j in range(_BLOCK):
            byte = data[at + j]
            state[_BLOCK + j] = byte
            state[2 * _BLOCK + j] = byte ^ state[j]
        t = 0
        for round_ in range(18):
            for k in range(3 * _BLOCK):
                state[k] ^= _S[t]
                t = state[k]
            t = (t + round_) & 0xFF
    return bytes(state[:_BLOCK])


def hmac_md2(key: bytes, message: bytes) -> bytes:
    """HMAC (RFC 2104) over MD2, whose block is 16 bytes; `key` at most 16 bytes."""
    if len(key) > _BLOCK:
        raise ValueError("hmac_md2: a key of at most 16 bytes")
    key = key.ljust(_BLOCK, b"\0")
    inner = md2(bytes(k ^ 0x36 for k in key) + message)
    return md2(bytes(k ^ 0x5C for k in key) + inner)


@dataclass(frozen=True)
class DeviceFacts:
    uuid: bytes  # 16 bytes, as cuDeviceGetUuid gives them
    pci_domain: int
    pci_bus: int
    pci_device: int


@dataclass(frozen=True)
class HashFacts:
    """What the answer covers besides the runtime's own arguments."""

    driver_version: int
    process_id: int
    thread_id: int  # pthread_self() (threading.get_ident() on Linux)
    cudart_table: int
    integrity_table: int
    check_function: int
    devices: Sequence[DeviceFacts]


def integrity_answer(version: int, unix_seconds: int, facts: HashFacts | None) -> bytes:
    """The 16 bytes the driver writes to `result` for the runtime's `version` and time
    (`facts` may be None for a version ending in 0 or 1: its answer is fixed)."""
    if version % 10 < 2:
        if version % 10 == 1:
            return _FIXED[:7] + bytes([24]) + _FIXED[8:]
        return _FIXED
    if facts is None:
        raise ValueError(f"integrity_answer: version {version} needs the facts")
    message = _FACTS.pack(
        facts.driver_version & 0xFFFFFFFF,
        version & 0xFFFFFFFF,
        facts.process_id & 0xFFFFFFFF,
        facts.thread_id & 0xFFFFFFFF,
        facts.cudart_table,
        facts.integrity_table,
        facts.check_function,
        unix_seconds & 0xFFFFFFFFFFFFFFFF,
    ) + b"".join(
        _DEVICE.pack(d.uuid, d.pci_domain & 0xFFFFFFFF, d.pci_bus & 0xFFFFFFFF,
                     d.pci_device & 0xFFFFFFFF)
        for d in facts.devices
    )  # fmt: skip
    return hmac_md2(_KEY, message)
