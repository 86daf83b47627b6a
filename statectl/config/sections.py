"""The config sections every job shares: Kafka, Spark, trigger, and the job config they make up."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


# ---------------------------------------------------------------- the schemas
@dataclass
class KafkaConfig:
    bootstrap_servers: str | None = None
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None

    def problems(self) -> list[tuple[str, str]]:
        out = []
        if self.max_offsets_per_trigger is not None and self.max_offsets_per_trigger < 1:
            out.append(("max_offsets_per_trigger", "must be at least 1"))
        return out


@dataclass
class SparkConfig:
    master: str = "local[*]"
    ui: bool = False
    conf: dict[str, str] = field(default_factory=dict)


@dataclass
class TriggerConfig:
    processing_time: str = "1 second"


@dataclass
class JobConfig:
    """What every job shares: where it reads and writes, where its checkpoint lives, how Spark runs."""

    job: str
    checkpoint_dir: str | None = None
    kafka: KafkaConfig = field(default_factory=KafkaConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    trigger: TriggerConfig = field(default_factory=TriggerConfig)
