"""Exactly-once output against a real broker, without Spark: a batch written once however often it
is asked for, a zombie fenced, a transaction left open by a killed writer aborted and invisible to
read_committed readers, and a user's job writing through ``ctx.kafka_sink``.

Faults tried: a batch written again by a new writer (as after a crash), a second writer of the same
transactional id while the first holds a transaction open (as a run started twice), a batch id
asked for out of order (older than the marker).
"""

from __future__ import annotations

import threading
import time
import uuid

from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
from statectl.adapters.kafka.connect import require_broker
from statectl.adapters.kafka.transactions import HOLD_ENV, BatchTransactions, Fenced, WrittenBatch
from tests.integration.test_faults import read_records


def _topic(bootstrap: str, partitions: int = 3) -> str:
    name = f"eos-{uuid.uuid4().hex[:8]}"
    create_missing_topics(require_broker(bootstrap), [TopicSpec(name, partitions)])
    return name


def _records(batch: int, n: int, topic: str) -> list[tuple[str, str, str]]:
    return [(topic, f"k{i}", f"batch-{batch}-{i}") for i in range(n)]


def test_a_batch_is_written_once_however_often_it_is_asked_for(bootstrap):
    topic = _topic(bootstrap)
    txn = f"statectl.test.{uuid.uuid4()}"
    first = BatchTransactions(bootstrap, txn, topic).open()
    assert first.last is None
    assert first.write(0, 1_000, _records(0, 50, topic)) == 50
    assert first.write(1, 2_000, _records(1, 50, topic)) == 50
    first.close()

    again = BatchTransactions(bootstrap, txn, topic).open()  # a restart: Spark runs batch 1 again
    assert again.last == WrittenBatch(1, 2_000)
    assert again.write(1, 2_000, _records(1, 50, topic)) is None
    assert again.write(2, 3_000, _records(2, 50, topic)) == 50
    again.close()
    assert len(read_records(bootstrap, topic)) == 150

    # A checkpoint rolled back to batch 0 plans batch 1 anew (another batch timestamp): written again.
    rolled_back = BatchTransactions(bootstrap, txn, topic).open()
    assert rolled_back.last == WrittenBatch(2, 3_000)
    assert rolled_back.write(1, 9_000, _records(1, 50, topic)) == 50
    rolled_back.close()

    records = read_records(bootstrap, topic)
    assert len(records) == 200
    per_batch = {b: sorted(v for *_, v, rb in records if rb == b) for b in (0, 1, 2)}
    assert [len(v) for v in per_batch.values()] == [50, 100, 50]
    # Keys go where a Java client puts them (murmur2): the same key, the same partition, every batch.
    assert {(p, k) for p, _, k, _, b in records if b == 0} == {(p, k) for p, _, k, _, b in records if b == 2}


def test_a_second_writer_fences_the_first_and_its_open_transaction_never_shows(bootstrap, monkeypatch):
    topic = _topic(bootstrap)
    txn = f"statectl.test.{uuid.uuid4()}"
    zombie = BatchTransactions(bootstrap, txn, topic).open()
    assert zombie.write(0, 1_000, _records(0, 10, topic)) == 10
    monkeypatch.setenv(HOLD_ENV, "1:6")  # batch 1 is held open, its records sent
    failure: list[BaseException] = []

    def write_held() -> None:
        try:
            zombie.write(1, 2_000, _records(1, 20, topic))
        except BaseException as exc:  # noqa: BLE001 - the thread hands it to the test
            failure.append(exc)

    thread = threading.Thread(target=write_held)
    thread.start()
    deadline = time.monotonic() + 20
    while len(read_records(bootstrap, topic, committed=False)) < 30 and time.monotonic() < deadline:
        time.sleep(0.2)
    successor = BatchTransactions(bootstrap, txn, topic).open()  # aborts the zombie's open transaction
    thread.join(30)
    assert failure and isinstance(failure[0], Fenced), failure
    assert "another run took over the transactional id" in str(failure[0])
    assert successor.last == WrittenBatch(0, 1_000)
    assert successor.write(1, 2_000, _records(1, 20, topic)) == 20
    successor.close()

    committed = read_records(bootstrap, topic)
    everything = read_records(bootstrap, topic, committed=False)
    assert sorted(b for *_, b in committed) == [0] * 10 + [1] * 20
    # The aborted records really were written: a read_uncommitted reader sees them.
    assert len(everything) == 50
