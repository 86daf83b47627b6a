"""Which Spark statectl runs on: the installed PySpark (read from its package metadata, never
imported) and the features each release has, checked with one line before Spark starts.

Pure apart from reading the installed version. Every gate lives in ``GATES``: the command line
(``require``), docs/compatibility.md and its test read the same table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from statectl.errors import UsageError

Release = tuple[int, int]

#: The releases statectl runs jobs on, the "spark" extra's range (pyspark>=3.5,<4.3).
SUPPORTED_FROM: Release = (3, 5)
SUPPORTED_BELOW: Release = (4, 3)
SPARK_EXTRA = 'pip install "statectl[spark]"'


@dataclass(frozen=True)
class InstalledSpark:
    """The PySpark this interpreter would import: ``version`` as its metadata says (``3.5.9``)."""

    version: str

    @property
    def release(self) -> Release:
        major, minor = re.match(r"(\d+)\.(\d+)", self.version).groups()
        return int(major), int(minor)

    @property
    def scala(self) -> str:
        """The Scala binary version its jars are built with: 2.12 for Spark 3.x, 2.13 from 4.0."""
        return "2.12" if self.release < (4, 0) else "2.13"


@dataclass(frozen=True)
class Gate:
    """A feature that needs a Spark release or later; ``why`` names what that release brought."""

    feature: str
    since: Release
    why: str = ""

    def message(self, installed: str) -> str:
        reason = f" ({self.why})" if self.why else ""
        return f"{self.feature} needs Spark {self.since[0]}.{self.since[1]} or later{reason}; installed: {installed}"


#: Every feature gated by release, by key. docs/compatibility.md is held to this table by its test.
GATES: dict[str, Gate] = {
    "transformWithState": Gate("transformWithStateInPandas", (4, 0), "Python transformWithState is new in 4.0"),
    # PySpark 4.0 has only the pandas API; the Row-based one came a release later.
    "transformWithState-rows": Gate("transformWithState", (4, 1), "its Row-based Python API is new in 4.1"),
    "state-rows": Gate("inspect-state --rows", (4, 0), "Spark's state data source is new in 4.0"),
    "repartition-state": Gate("repartition-state", (4, 2), "StreamingCheckpointManager"),
    "checkpoint-format-2": Gate(
        "checkpoint format 2", (4, 0), "spark.sql.streaming.stateStore.checkpointFormatVersion=2 is new in 4.0"
    ),
    "s3a-checkpoints": Gate(
        "s3a:// checkpoints for a run",
        (4, 0),
        "Spark 3.5 ships Hadoop 3.3.4, whose S3A needs the whole AWS SDK v1 bundle; "
        "statectl resolves S3A on AWS SDK v2, Hadoop 3.4.1 and later",
    ),
    "engine": Gate("statectl engine", (4, 0), "PySpark 3.5 ships no Spark Connect server; 4.0 has it in pyspark/jars"),
    "engine-run": Gate(
        "a run on a Spark Connect engine",
        (4, 1),
        "on 4.0 the engine's tasks cannot fetch the job code a run sends, and its client "
        "has no transformWithStateInPandas",
    ),
    "engine-warm-up": Gate(
        "the engine's warm-up",
        (4, 1),
        "it runs a transformWithStateInPandas query through Spark Connect, whose client has it from 4.1",
    ),
}


def installed_spark() -> InstalledSpark | None:
    """The installed PySpark, from its package metadata (PySpark is not imported), or None."""
    from importlib import metadata

    try:
        return InstalledSpark(metadata.version("pyspark"))
    except metadata.PackageNotFoundError:
        return None


def require_pyspark(command: str) -> InstalledSpark:
    """The installed PySpark, or a UsageError naming the extra that brings it (exit 2). A release
    older than 3.5 is refused the same way; a newer one than the extra allows (4.3) is let through:
    what needs no connector works on it, and the connector's resolution refuses the rest by name."""
    installed = installed_spark()
    if installed is None:
        raise UsageError(f"statectl {command} needs PySpark: {SPARK_EXTRA}")
    if installed.release < SUPPORTED_FROM:
        raise UsageError(
            f"statectl {command} needs PySpark {text(SUPPORTED_FROM)} or later; installed: {installed.version}"
        )
    return installed


def require(feature: str, installed: InstalledSpark | None = None) -> None:
    """Refuse ``GATES[feature]`` in one line (exit 2) when the installed Spark is older."""
    why = too_old(feature, installed)
    if why is not None:
        raise UsageError(why)


def too_old(feature: str, installed: InstalledSpark | None = None) -> str | None:
    """``GATES[feature]``'s one line when the installed Spark is older, else None: for a feature
    left out rather than refused."""
    gate = GATES[feature]
    installed = installed or installed_spark()
    if installed is not None and installed.release < gate.since:
        return gate.message(installed.version)
    return None


def text(release: Release) -> str:
    return f"{release[0]}.{release[1]}"
