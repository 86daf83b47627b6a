"""The run's watch over Kafka (for all brokers stopped mid-run): when it says Kafka
is gone and back, when it gives up, and how that reads. Pure: a fake clock and scripted probes.

Bad inputs tried: a probe that raises instead of answering, a timeout of null (wait), a probe
that answers slower than the interval, flapping (lost, back, lost again restarts the count).
"""

from __future__ import annotations

import pytest

from statectl.config.sections import KafkaConfig
from statectl.render.run import kafka_connection_text
from statectl.run.events_file import validate_event
from statectl.run.kafka_watch import KafkaWatch, Reachability
from statectl.run.lifecycle import Lifecycle, State, kafka_connection
from statectl.run.runner import kafka_lost_error


@pytest.mark.parametrize(
    "probes, timeout, changes, down_since, expired_at_30",
    [
        ([(True, 0), (True, 2)], 15, [None, None], None, False),
        ([(False, 0), (False, 2), (False, 4)], 15, ["lost", None, None], 0, True),
        ([(True, 0), (False, 2), (True, 4)], 15, [None, "lost", "back"], None, False),
        # Lost again after coming back: the count starts over at the second outage.
        ([(False, 0), (True, 2), (False, 20)], 15, ["lost", "back", "lost"], 20, False),
        ([(False, 0), (False, 10)], None, ["lost", None], 0, False),
    ],
    ids=["answers", "gone", "gone-then-back", "flapping", "wait-forever"],
)
def test_reachability_counts_from_the_first_unanswered_probe(probes, timeout, changes, down_since, expired_at_30):
    state = Reachability(timeout)
    assert [state.observe(answered, at) for answered, at in probes] == changes
    assert state.down_since == down_since
    assert state.expired(30) is expired_at_30


def test_expiry_is_exactly_at_the_timeout():
    state = Reachability(15)
    state.observe(False, 100.0)
    assert (state.expired(114.9), state.expired(115.0)) == (False, True)
    assert state.down_for(112.5) == 12.5


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_watch_reports_lost_and_back_once_each_and_a_raising_probe_counts_as_no_answer():
    clock, heard = _Clock(), []
    answers = iter([True, "raise", False, False, True, True])

    def probe():
        value = next(answers)
        if value == "raise":
            raise RuntimeError("librdkafka trouble")
        return value

    watch = KafkaWatch(probe, 15.0, on_change=lambda *a: heard.append(a), clock=clock)
    for at in (0, 2, 4, 6, 8, 10):
        clock.now = at
        watch.check()
        if at == 6:
            assert watch.down_for() == 4 and not watch.expired()
    assert heard == [("lost", 0.0, 15.0), ("back", 6.0, 15.0)]
    assert watch.down_for() == 0 and not watch.expired()


def test_watch_expires_after_the_timeout_and_never_when_waiting():
    clock = _Clock()
    giving_up = KafkaWatch(lambda: False, 15.0, clock=clock)
    waiting = KafkaWatch(lambda: False, None, clock=clock)
    for at in (0, 5, 10, 15):
        clock.now = at
        giving_up.check()
        waiting.check()
    assert giving_up.expired() and not waiting.expired()
    assert waiting.down_for() == 15


@pytest.mark.parametrize(
    "reachable, down, timeout, text",
    [
        (
            False,
            2.0,
            120.0,
            "no Kafka broker answers: the run stops if none answers for 120.0 s (kafka.unavailable_timeout)",
        ),
        (False, 2.0, None, "no Kafka broker answers: waiting for the brokers (kafka.unavailable_timeout: null)"),
        (True, 34.2, 120.0, "Kafka answers again after 34.2 s without a broker"),
    ],
    ids=["lost", "lost-waiting", "back"],
)
def test_kafka_connection_event_is_valid_and_reads_plainly(reachable, down, timeout, text):
    event = kafka_connection("q", "r", reachable, down, timeout, when=1.0)
    lifecycle = Lifecycle()
    lifecycle.apply({"type": "batch_progress"})
    assert not lifecycle.apply(event)
    event["state"] = lifecycle.state.value
    assert event["state"] == State.RUNNING.value  # Kafka going away does not move the lifecycle
    assert validate_event(event) == []
    assert kafka_connection_text(event) == text


@pytest.mark.parametrize(
    "value, problem",
    [("2 minutes", None), (None, None), ("15 seconds", None), ("15 secnds", "did you mean"), ("", "empty")],
    ids=["default", "wait", "seconds", "typo", "empty"],
)
def test_unavailable_timeout_is_checked_when_the_config_loads(value, problem):
    if problem is None:
        assert KafkaConfig(unavailable_timeout=value).unavailable_timeout == value
    else:
        with pytest.raises(ValueError, match=problem):
            KafkaConfig(unavailable_timeout=value)
    assert KafkaConfig().unavailable_timeout == "2 minutes"


def test_the_error_says_what_happened_what_is_kept_and_what_to_do():
    assert kafka_lost_error("127.0.0.1:9092,127.0.0.1:9093", "15 seconds") == (
        "no Kafka broker at 127.0.0.1:9092,127.0.0.1:9093 answered for 15 seconds (kafka.unavailable_timeout), so "
        "the query was stopped; what it committed is kept and the unfinished batch runs again: start the job again "
        "once the brokers are back (kafka.unavailable_timeout: null waits for them instead)"
    )
