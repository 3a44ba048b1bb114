"""The INTEGRITY_CHECK answer (cricket_client.native.integrity): MD2 as RFC 1319 defines it,
the HMAC over it as the public interoperability notes give it (their published sample), the
fixed answers, and that every fact it covers changes the answer."""

from __future__ import annotations

import dataclasses

import pytest

from cricket_client.native.integrity import (
    DeviceFacts,
    HashFacts,
    hmac_md2,
    integrity_answer,
    md2,
)

# RFC 1319, appendix A.5 (the test suite)
RFC_1319 = [
    (b"", "8350e5a3e24c153df2275c9f80692773"),
    (b"a", "32ec01ec4a6dac72c0ab96fb34c0b5d1"),
    (b"abc", "da853b0d3f88d99b30283a69e6ded6bb"),
    (b"message digest", "ab4f496bfb2a530b219ff33031fe06b0"),
    (b"abcdefghijklmnopqrstuvwxyz", "4e8ddff3650292ab5a4108c3aa47940b"),
    (
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        "da33def2a42df13975352846c30338cd",
    ),
    (b"1234567890" * 8, "d5976f79d83d3a0dc9806c3c66f3efd8"),
]

# The sample the public notes publish (a Windows process, CUDA 11.8 runtime, driver 12.2)
SAMPLE = HashFacts(
    driver_version=12020,
    process_id=0x4D08,
    thread_id=0x2B78,
    cudart_table=0x7FF8C80717F0,
    integrity_table=0x7FF8C825E4B0,
    check_function=0x7FF8C7DD0AD0,
    devices=[DeviceFacts(bytes.fromhex("6722cbcfc661f29274d6ed232a32131c"), 0, 4, 0)],
)
SAMPLE_VERSION, SAMPLE_TIME = 0x2B4A, 0x64A365EE
SAMPLE_ANSWER = 0xEAF1313342BFCD84A7C34628F214707A


@pytest.mark.parametrize(("message", "digest"), RFC_1319)
def test_md2_gives_the_rfc_1319_digests(message: bytes, digest: str) -> None:
    assert md2(message).hex() == digest


def test_the_answer_matches_the_published_sample() -> None:
    answer = integrity_answer(SAMPLE_VERSION, SAMPLE_TIME, SAMPLE)
    assert int.from_bytes(answer, "little") == SAMPLE_ANSWER


def test_every_fact_changes_the_answer() -> None:
    base = integrity_answer(SAMPLE_VERSION, SAMPLE_TIME, SAMPLE)
    assert integrity_answer(SAMPLE_VERSION, SAMPLE_TIME + 1, SAMPLE) != base
    assert integrity_answer(SAMPLE_VERSION + 10, SAMPLE_TIME, SAMPLE) != base
    for field in ("driver_version", "process_id", "thread_id", "cudart_table",
                  "integrity_table", "check_function"):  # fmt: skip
        changed = dataclasses.replace(SAMPLE, **{field: getattr(SAMPLE, field) + 1})
        assert integrity_answer(SAMPLE_VERSION, SAMPLE_TIME, changed) != base, field
    other = DeviceFacts(bytes(16), 0, 5, 0)
    for devices in ([other], [*SAMPLE.devices, other], []):
        changed = dataclasses.replace(SAMPLE, devices=devices)
        assert integrity_answer(SAMPLE_VERSION, SAMPLE_TIME, changed) != base


def test_only_the_low_32_bits_of_the_thread_count() -> None:
    wide = dataclasses.replace(SAMPLE, thread_id=(0x7F12 << 32) | SAMPLE.thread_id)
    assert integrity_answer(SAMPLE_VERSION, SAMPLE_TIME, wide) == integrity_answer(
        SAMPLE_VERSION, SAMPLE_TIME, SAMPLE
    )


def test_versions_ending_in_0_and_1_get_fixed_answers_without_facts() -> None:
    zero = integrity_answer(13000, 1, None)
    assert zero == integrity_answer(12040, 99, None)  # whatever the version and time
    one = integrity_answer(13001, 1, None)
    assert one[7] == 24 and one[:7] == zero[:7] and one[8:] == zero[8:]
    with pytest.raises(ValueError, match="13002"):
        integrity_answer(13002, 1, None)


def test_hmac_md2_takes_keys_up_to_one_block() -> None:
    assert hmac_md2(b"k", b"m") == hmac_md2(b"k" + bytes(15), b"m")  # zero-padded to 16
    assert hmac_md2(b"k", b"m") != hmac_md2(b"j", b"m")
    with pytest.raises(ValueError, match="16 bytes"):
        hmac_md2(bytes(17), b"m")
