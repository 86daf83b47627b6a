"""The least a Python process can do to send a file's lines with confluent-kafka: no CLI, no topic
checks, no progress, no accounting beyond the flush. `benchmarks/produce.py --ceiling` runs it
beside statectl and kcat, to show how close to kcat any Python tool on this stack can get.

    python benchmarks/_bare_produce.py BOOTSTRAP TOPIC FILE PROCESSES PARTITIONS

With PROCESSES > 1 the lines are split between forked processes, each with its own producer
and its own partitions. Exit 1 if a record was refused or not acknowledged.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def send(bootstrap: str, topic: str, values: list[bytes], partitions: list[int]) -> bool:
    from statectl.adapters.kafka.produce import fast_producer  # statectl's producer settings, nothing else

    producer = fast_producer(bootstrap, **{"delivery.report.only.error": True})
    for i, lo in enumerate(range(0, len(values), 10_000)):
        chunk = [{"value": v} for v in values[lo : lo + 10_000]]
        if producer.produce_batch(topic, chunk, partition=partitions[i % len(partitions)]) != len(chunk):
            return False
        producer.poll(0)
    return producer.flush(60) == 0


def main() -> int:
    bootstrap, topic, path = sys.argv[1:4]
    processes, partitions = int(sys.argv[4]), int(sys.argv[5])
    values = Path(path).read_bytes().split(b"\n")
    if values and values[-1] == b"":
        values.pop()
    children = []
    for k in range(1, processes):
        # Forked before any Kafka client exists: librdkafka's threads do not survive a fork.
        pid = os.fork()
        if pid == 0:
            part = values[len(values) * k // processes : len(values) * (k + 1) // processes]
            os._exit(0 if send(bootstrap, topic, part, list(range(k, partitions, processes))) else 1)
        children.append(pid)
    ok = send(bootstrap, topic, values[: len(values) // processes], list(range(0, partitions, processes)))
    for pid in children:
        ok = os.waitpid(pid, 0)[1] == 0 and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
