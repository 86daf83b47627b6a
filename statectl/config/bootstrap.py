"""Where the Kafka cluster is: the bootstrap servers by precedence."""

from __future__ import annotations

import os


DEFAULT_BOOTSTRAP = "localhost:9092"


def resolve_bootstrap(flag: str | None, config_value: str | None = None) -> str:
    """Bootstrap servers by precedence: flag > $KAFKA_BOOTSTRAP_SERVERS > config > localhost:9092."""
    for candidate in (flag, os.environ.get("KAFKA_BOOTSTRAP_SERVERS"), config_value):
        if candidate:
            return candidate
    return DEFAULT_BOOTSTRAP
