"""Wall time of one topic-config change: `statectl topic-config` against Kafka's `kafka-configs --alter`.

Both make the same change on the same broker, in the same run:
segment.bytes=536870912 and min.cleanable.dirty.ratio=0.3 on one topic, each from a fresh process
(a Python interpreter for statectl, a JVM for Kafka's ConfigCommand), as a user would start them.
Before every timed run the two keys are removed again, so each run really changes something, and
after it the broker is asked whether the change is there. The order alternates between rounds.

statectl does more per run than ConfigCommand: it describes the topic, checks names, types and
ranges, asks the broker to validate (validate_only), alters, and reads the result back.

    .venv/bin/python benchmarks/topic_config.py [--rounds 9]

Starts its own broker on a free port with a temporary data dir and stops it at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# E402: these imports come after the sys.path insert above, which makes the checkout importable
# when the benchmark runs as a script.
from statectl.adapters.kafka.admin import (  # noqa: E402
    TopicSpec,
    alter_topic_configs,
    create_missing_topics,
    describe_topics,
)
from statectl.adapters.kafka.connect import admin_client  # noqa: E402
from statectl.adapters.local.broker import _java, broker_down, broker_up, free_port  # noqa: E402
from statectl.adapters.local.jars import KAFKA_BROKER, ensure_bundle  # noqa: E402

TOPIC = "bench-topic-config"
CHANGE = {"segment.bytes": "536870912", "min.cleanable.dirty.ratio": "0.3"}


def statectl_command(bootstrap: str) -> list[str]:
    exe = Path(sys.executable).parent / "statectl"
    head = [str(exe)] if exe.exists() else [sys.executable, "-m", "statectl"]
    sets = [a for k, v in CHANGE.items() for a in ("--set", f"{k}={v}")]
    return head + ["topic-config", TOPIC, *sets, "-b", bootstrap]


def kafka_configs_command(bootstrap: str) -> list[str]:
    classpath = os.pathsep.join(str(p) for p in ensure_bundle(KAFKA_BROKER))
    return [
        _java(),
        "-cp",
        classpath,
        "kafka.admin.ConfigCommand",
        "--bootstrap-server",
        bootstrap,
        "--entity-type",
        "topics",
        "--entity-name",
        TOPIC,
        "--alter",
        "--add-config",
        ",".join(f"{k}={v}" for k, v in CHANGE.items()),
    ]


def reset(admin) -> None:
    failed = alter_topic_configs(admin, {TOPIC: [("delete", k, None) for k in CHANGE]}, validate_only=False)
    assert not failed, failed
    deadline = time.monotonic() + 5
    while _overrides(admin) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _overrides(admin), "reset did not take effect"


def _overrides(admin) -> dict[str, str]:
    configs = describe_topics(admin, [TOPIC])[TOPIC]["configs"]
    return {k: e["value"] for k, e in configs.items() if k in CHANGE and e["source"] == "DYNAMIC_TOPIC_CONFIG"}


def timed(command: list[str], admin) -> float:
    reset(admin)
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "COLUMNS": "120"})
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{command[0]} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    deadline = time.monotonic() + 5
    while _overrides(admin) != CHANGE and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _overrides(admin) == CHANGE, f"{command[0]} did not make the change: {_overrides(admin)}"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds (after one warm-up each)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="statectl-bench-kafka-") as tmp:
        data_dir = Path(tmp)
        status = broker_up(data_dir, port=free_port(), timeout=90)
        try:
            bootstrap = status.bootstrap_servers
            admin = admin_client(bootstrap)
            create_missing_topics(admin, [TopicSpec(TOPIC, 4, 1, {"cleanup.policy": "compact"})])
            tools = {
                "statectl topic-config": statectl_command(bootstrap),
                "kafka-configs --alter": kafka_configs_command(bootstrap),
            }
            print(
                f"Kafka {status.kafka_version} on {bootstrap}; change: "
                + ", ".join(f"{k}={v}" for k, v in CHANGE.items()),
                file=sys.stderr,
            )
            for command in tools.values():  # warm-up: page cache, .pyc files, JIT-free JVM start
                timed(command, admin)
            times: dict[str, list[float]] = {name: [] for name in tools}
            for r in range(args.rounds):
                order = list(tools) if r % 2 == 0 else list(reversed(tools))
                for name in order:
                    times[name].append(timed(tools[name], admin))
                print(f"round {r + 1}: " + "  ".join(f"{n} {times[n][-1]:.3f} s" for n in tools), file=sys.stderr)
        finally:
            broker_down(data_dir)

    print(f"\n{'tool':<24}{'median':>10}{'min':>10}{'max':>10}   ({args.rounds} rounds, wall time per process)")
    for name, ts in times.items():
        print(f"{name:<24}{statistics.median(ts):>9.3f}s{min(ts):>9.3f}s{max(ts):>9.3f}s")
    ratio = statistics.median(times["statectl topic-config"]) / statistics.median(times["kafka-configs --alter"])
    verdict = "meets" if ratio <= 0.5 else "misses"
    print(f"\nratio of medians statectl / kafka-configs = {ratio:.2f}  ({verdict} the 0.5 target)")


if __name__ == "__main__":
    main()
