"""A reference for where Java's default partitioner puts a keyed record, written here from Kafka's
``Utils.murmur2`` and ``Utils.toPositive`` and independent of statectl and librdkafka.

The integration test (tests/integration/test_produce.py) compares it with the partitions
records land in on the real broker; this file checks the reference itself against the values
Kafka's own ``UtilsTest.testMurmur2`` pins.
"""

from __future__ import annotations

import pytest

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: the 32-bit MurmurHash2 with seed 0x9747b28c, as a signed int."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    for i in range(0, length - length % 4, 4):
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * _M) & _MASK
        k ^= k >> 24  # Java's >>> on an int: an unsigned shift
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def java_partition(key: bytes, partitions: int) -> int:
    """``Utils.toPositive(Utils.murmur2(key)) % partitions``: the Java producer's partition for a key."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


@pytest.mark.parametrize(
    "text, expected",
    [
        ("21", -973932308),
        ("foobar", -790332482),
        ("a-little-bit-long-string", -985981536),
        ("a-little-bit-longer-string", -1486304829),
        ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        ("abc", 479470107),
    ],
    ids=["2-bytes", "6-bytes", "24-bytes", "26-bytes", "48-bytes", "3-bytes"],
)
def test_reference_murmur2_matches_kafkas_own_test_vectors(text, expected):
    assert murmur2(text.encode()) == expected


def test_to_positive_keeps_the_low_31_bits():
    # A negative hash is not negated (abs) but masked, as Utils.toPositive does.
    negative = murmur2(b"21")
    assert negative < 0
    assert java_partition(b"21", 1 << 31) == negative & 0x7FFFFFFF
