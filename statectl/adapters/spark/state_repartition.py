"""Spark's offline state repartitioning (``StreamingCheckpointManager.repartition``, Spark 4.2+):
the only code that asks Spark to rewrite a checkpoint's state.

Spark does the work: it writes a new batch to the offset log (the last committed one with the new
``spark.sql.shuffle.partitions``), reads every state row of every operator with the state data
source, re-keys the rows to the new partitions and writes a snapshot per new partition, updates
operator metadata v2 and commits the batch. PySpark 4.2 exposes it as
``SparkSession._streamingCheckpointManager`` (its public name is still to come).
"""

from __future__ import annotations

import re

from statectl.errors import OperationalError
from statectl.text import first_error_line

#: Spark checks the session's checkpoint format against the commit log and refuses a mismatch
#: (STATE_CHECKPOINT_FORMAT_VERSION_MISMATCH) — after writing the repartition batch.
FORMAT_VERSION_CONF = "spark.sql.streaming.stateStore.checkpointFormatVersion"


def repartition_checkpoint(
    path: str,
    partitions: int,
    format_version: int,
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
    object_store: bool = False,
    remote: str | None = None,
) -> None:
    """Repartition the stopped query's checkpoint at ``path`` to ``partitions`` state partitions.

    Always with ``enforceExactlyOnceSink``: Spark refuses a checkpoint whose last batch did not
    commit instead of skipping it (the caller refuses those before). Raises OperationalError with
    Spark's reason in one line. ``remote``: on that Spark Connect engine, which must be statectl's
    (Spark Connect 4.2 has no checkpoint manager; statectl's engine runs it for its clients)."""
    settings = {**(conf or {}), FORMAT_VERSION_CONF: str(format_version)}
    if remote is not None:
        _repartition_on_engine(remote, path, partitions, settings)
        return
    from statectl.adapters.spark.session import session_with_conf

    with session_with_conf("statectl-repartition-state", master, settings, object_store) as spark:
        repartition_in_session(spark, path, partitions)


def repartition_in_session(spark, path: str, partitions: int) -> None:
    """Spark's repartitioning in a classic session whose SQL settings are already set."""
    manager = getattr(spark, "_streamingCheckpointManager", None)
    if manager is None:
        import pyspark

        raise OperationalError(
            f"PySpark {pyspark.__version__} has no offline state repartitioning "
            "(StreamingCheckpointManager.repartition comes with Spark 4.2)"
        )
    # The state data source Spark reads the state with talks to the StateStoreCoordinator,
    # which Spark registers with the streaming query manager: touch it first.
    _ = spark.streams.active
    try:
        manager.repartition(path, partitions, True)
    except Exception as exc:  # py4j and Spark errors come in many types; one sentence for the user
        raise OperationalError(f"Spark could not repartition the state: {spark_error_line(exc)}") from exc


def require_repartitioning_engine(remote: str):
    """statectl's link to ``remote``, which must be statectl's engine: Spark Connect 4.2 has no
    offline state repartitioning of its own (UsageError otherwise; OperationalError when nothing
    answers there)."""
    from statectl.adapters.spark.remote import engine_link, require_remote
    from statectl.errors import UsageError

    require_remote(remote)
    link = engine_link(remote)
    if link is None:
        raise UsageError(
            f"repartition-state on {remote}: Spark Connect 4.2 has no offline state repartitioning "
            "(no StreamingCheckpointManager); use statectl's engine (statectl engine up) or "
            "--remote none; nothing was changed"
        )
    return link


def _repartition_on_engine(remote: str, path: str, partitions: int, settings: dict[str, str]) -> None:
    link = require_repartitioning_engine(remote)
    answer = link.repartition(path, partitions, settings)
    if answer.get("error"):
        raise OperationalError(f"Spark could not repartition the state: {answer['error']}")


def spark_error_line(exc: BaseException) -> str:
    """Spark's own message (``[CONDITION] what``) without the Java class and trace around it."""
    text = None
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            text = java.getMessage()
        except Exception:  # the JVM may be gone
            text = None
    line = first_error_line(text or exc, 400)
    line = re.sub(r"^:?\s*(?:[\w$]+\.)+[\w$]*(?:Exception|Error):\s*", "", line)
    return re.sub(r"\s*SQLSTATE: \w+\s*$", "", line)
