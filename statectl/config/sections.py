"""The config sections every job shares: Kafka, Spark, trigger, and the job config they make up.

Values Spark would only refuse once a query starts (a trigger interval, a numeric Spark conf, a
starting offset, a partition count) are checked here, so a typo is a line at load time.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, PrivateAttr

from statectl.config.model import Section, Text, conf_text, text_mapping
from statectl.config.spark_values import interval_problem, spark_conf_problems


def _spark_interval(text: str) -> str:
    reason = interval_problem(text)
    if reason:
        raise ValueError(reason)
    return text


#: Spark conf name -> value; the numeric confs Spark parses are checked as Spark will.
SparkConf = text_mapping(conf_text, check=spark_conf_problems)


#: Kafka client property name -> value (checked when the clients are made: see statectl.cluster).
KafkaProperties = text_mapping(conf_text)


# ---------------------------------------------------------------- the schemas
class KafkaConfig(Section):
    bootstrap_servers: Text | None = None
    # Spark also takes per-partition JSON offsets; statectl's jobs document and use these two.
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    max_offsets_per_trigger: int | None = Field(None, ge=1)
    # Spark's Kafka source refuses minPartitions below 1 when the query starts; leave it out for
    # one Spark partition per Kafka partition.
    min_partitions: int | None = Field(None, ge=1)
    #: Kafka client properties (Java names, as in client.properties) for every client of the job:
    #: TLS, SASL. ``${ENV}`` and ``@file`` values; --client-config overrides them key by key.
    properties: KafkaProperties = Field(default_factory=dict)
    #: How long a running job waits when no broker answers before it stops with an error (Spark's
    #: own Kafka source waits forever); null: wait for as long as it takes, saying so.
    unavailable_timeout: Annotated[Text, AfterValidator(_spark_interval)] | None = "2 minutes"


def _release(value: str | None) -> str | None:
    """A Spark release as X.Y or X.Y.Z (which releases statectl models is checked where it is used)."""
    if value is not None and not re.fullmatch(r"\d+\.\d+(\.\d+)?", str(value).strip()):
        raise ValueError(f"takes a Spark release such as 3.5 or 4.2.0, not {value!r}")
    return None if value is None else str(value).strip()


def _remote(value: str | None) -> str | None:
    """A Spark Connect endpoint, sc://HOST[:PORT]."""
    if value is not None and not re.fullmatch(r"sc://[^\s/]+/?(;\S*)?", str(value).strip()):
        raise ValueError(f"takes a Spark Connect endpoint such as sc://localhost:15002, not {value!r}")
    return None if value is None else str(value).strip()


class SparkConfig(Section):
    master: Text = "local[*]"
    #: A Spark Connect engine to run on (sc://HOST:PORT) instead of a driver in statectl's process.
    remote: Annotated[Text, AfterValidator(_remote)] | None = None
    ui: bool = False
    conf: SparkConf = Field(default_factory=dict)
    #: The Spark release that restarts this job's checkpoint (3.5 ... 4.3): the release inspect-state
    #: and status give their verdict for (None: the one the checkpoint shows it was written by).
    restart_version: Annotated[Text, AfterValidator(_release)] | None = None


class TriggerConfig(Section):
    #: Spark's interval syntax ("10 seconds", "500 milliseconds"), checked as Spark will read it.
    processing_time: Annotated[Text, AfterValidator(_spark_interval)] = "1 second"


class SinkConfig(Section):
    #: exactly-once: each micro-batch's output and dead letters go to Kafka in one transaction with
    #: the batch's id, so a batch Spark runs again after a crash is written once (read_committed
    #: readers see each record once; docs/guarantees.md#exactly-once-output). at-least-once: Spark's Kafka sink,
    #: which writes a re-run batch again.
    delivery: Literal["exactly-once", "at-least-once"] = "exactly-once"

    @property
    def exactly_once(self) -> bool:
        return self.delivery == "exactly-once"


class JobConfig(Section):
    """What every job shares: where it reads and writes, where its checkpoint lives, how Spark runs."""

    job: Text
    checkpoint_dir: Text | None = None
    kafka: KafkaConfig = Field(default_factory=KafkaConfig)
    spark: SparkConfig = Field(default_factory=SparkConfig)
    trigger: TriggerConfig = Field(default_factory=TriggerConfig)
    sink: SinkConfig = Field(default_factory=SinkConfig)

    #: The YAML file the config was read from (None when built in code): a user job's
    #: ``./file.py`` is found beside it, and a user job's ``params`` problems name its lines.
    _source: Path | None = PrivateAttr(default=None)
    _raw: Any = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:
        # Where a config was read from is not part of its value (pydantic compares private attributes).
        return type(self) is type(other) and self.model_dump() == other.model_dump()

    __hash__ = None  # as pydantic models are: mutable, compared by value

    @property
    def job_name(self) -> str:
        """The job's name as statectl shows it and names its default checkpoint after."""
        return self.job

    @property
    def source(self) -> Path | None:
        return self._source

    @property
    def raw(self) -> Any:
        """The RawConfig it was validated from (the lines of its keys), when read from a file."""
        return self._raw


def is_job_reference(job: str) -> bool:
    """``my_pkg.clicks:build``, ``my_pkg.clicks``, ``./clicks.py[:build]``: a user's own job named by
    where its code is (the built-in job ids, ``leaderboard``, ``advanced-state/tombstones``, name none)."""
    text = job.strip()
    return ":" in text or text.endswith(".py") or "." in text.split("/")[-1]


def _job_name(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", value):
        raise ValueError("takes letters, digits, '.', '_' and '-' (it names the checkpoint folder)")
    return value


class UserJobConfig(JobConfig):
    """A user's own job (docs/own-jobs.md): ``job:`` names its code, ``params:`` is the job's own."""

    #: Shown in status, events and the live display, and names the default checkpoint
    #: (./.statectl/checkpoints/NAME). Default: the module's name (``clicks`` for ./clicks.py).
    name: Annotated[Text, AfterValidator(_job_name)] | None = None
    #: The job's own settings, handed to its build function as ``ctx.params``; checked against the
    #: module's ``Params`` model (pydantic) when it declares one.
    params: dict[str, Any] = Field(default_factory=dict)

    @property
    def job_name(self) -> str:
        if self.name:
            return self.name
        target = self.job.strip()
        target = target.rpartition(":")[0] if ":" in target else target
        target = target.removesuffix(".py")
        return re.split(r"[./\\]", target)[-1] or "job"


class CheckpointJobConfig(JobConfig):
    """A job known only by its checkpoint (``--checkpoint-dir`` without a JOB or YAML): a user's
    job that statectl did not launch. What the day-2 commands need (the Kafka topics and
    partitions each source read) they read from the checkpoint itself."""

    @classmethod
    def at(cls, checkpoint: Path) -> CheckpointJobConfig:
        path = checkpoint.expanduser().resolve()
        return cls(job=path.name or str(path), checkpoint_dir=str(path))
