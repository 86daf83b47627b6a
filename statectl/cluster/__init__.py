"""How statectl reaches a Kafka cluster: its bootstrap servers and the client settings (TLS, SASL)
every client statectl makes takes from one place."""

from __future__ import annotations

from dataclasses import dataclass, field

from statectl.cluster.settings import PLAINTEXT, ClientSettings


@dataclass(frozen=True)
class Cluster:
    """A Kafka cluster as statectl's clients connect to it. Prints as its bootstrap servers."""

    bootstrap: str
    settings: ClientSettings = field(default=PLAINTEXT)

    def __str__(self) -> str:
        return self.bootstrap

    @property
    def secured(self) -> bool:
        return self.settings.secured

    def librdkafka(self) -> dict[str, str]:
        """The confluent-kafka (librdkafka) config of every producer, consumer and admin client."""
        return {"bootstrap.servers": self.bootstrap, **self.settings.librdkafka}

    def spark_options(self) -> dict[str, str]:
        """The ``kafka.``-prefixed options of Spark's Kafka source and sink."""
        return {
            "kafka.bootstrap.servers": self.bootstrap,
            **{f"kafka.{key}": value for key, value in self.settings.java.items()},
        }


def as_cluster(target: Cluster | str) -> Cluster:
    """A bare bootstrap string is a plaintext cluster with no client settings."""
    return target if isinstance(target, Cluster) else Cluster(str(target))
