"""statectl.adapters.kafka.offsets.watermarks asks again while a leader moves or catches up, and
only then: the errors a broker of three gives as it dies and comes back, against a stand-in
consumer (the soak sees them against the real cluster: tests/integration/test_soak.py).

Bad inputs tried: a new leader's "high watermark not caught up", a partition the client's cache
does not know yet, and an error that is no part of a leader move (raised at once)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from statectl.adapters.kafka import offsets


class _Consumer:
    def __init__(self, errors: list[int]):
        self.errors, self.asked, self.refreshed = list(errors), 0, 0

    def get_watermark_offsets(self, tp, timeout):
        self.asked += 1
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return (0, 42)

    def list_topics(self, timeout):
        self.refreshed += 1


@pytest.mark.parametrize(
    "code", [KafkaError.OFFSET_NOT_AVAILABLE, KafkaError._UNKNOWN_PARTITION, KafkaError.NOT_LEADER_FOR_PARTITION]
)
def test_a_moving_or_catching_up_leader_is_asked_again(code, monkeypatch):
    monkeypatch.setattr(offsets.time, "sleep", lambda s: None)
    consumer = _Consumer([code, code])
    assert offsets.watermarks(consumer, "t", [0]) == {0: (0, 42)}
    assert (consumer.asked, consumer.refreshed) == (3, 2)


def test_another_error_is_raised_at_once(monkeypatch):
    monkeypatch.setattr(offsets.time, "sleep", lambda s: None)
    consumer = _Consumer([KafkaError.TOPIC_AUTHORIZATION_FAILED])
    with pytest.raises(KafkaException):
        offsets.watermarks(consumer, "t", [0])
    assert consumer.asked == 1


def test_the_asking_ends_at_the_deadline(monkeypatch):
    clock = iter(range(0, 1000, 30))
    monkeypatch.setattr(offsets.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(offsets.time, "sleep", lambda s: None)
    consumer = _Consumer([KafkaError.OFFSET_NOT_AVAILABLE] * 100)
    with pytest.raises(KafkaException):
        offsets.watermarks(consumer, "t", [0])
    assert consumer.asked == 2  # at the start and 30 s on; at 60 s the deadline has come: raised
