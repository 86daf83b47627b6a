"""The Spark settings statectl runs jobs with, for a job started outside statectl (spark-submit, a
notebook, a plain ``python job.py``): the Kafka connector jars PySpark does not ship, the RocksDB
state store with changelog checkpointing, and the rest of statectl's session defaults."""

from __future__ import annotations

import shlex

#: Which of the session's settings a job started elsewhere needs, and why (the rest is statectl's
#: own logging and UI choices).
SETTINGS_FOR_OWN_JOBS = (
    "spark.sql.streaming.stateStore.providerClass",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
    "spark.sql.session.timeZone",
    "spark.sql.shuffle.partitions",
    "spark.sql.streaming.stopActiveRunOnRestart",
    "spark.sql.redaction.options.regex",
    "spark.redaction.regex",
)


def own_job_settings(master: str = "local[*]", object_store: bool = False) -> dict[str, str]:
    """``spark.jars`` (the cached connector bundle minus every artifact PySpark already ships, in
    any version: two copies of one library on the class path is how a job fails with a
    NoSuchMethodError) and the settings statectl gives its own sessions. ``object_store``: also
    S3A's jars and the settings of a checkpoint on S3, without the secret ones."""
    from statectl.adapters.spark.session import BASE_CONF, connector_jars, default_shuffle_partitions
    from statectl.redact import is_secret_key
    from statectl.spark_support import require_pyspark

    require_pyspark("jars spark-conf")  # the jars PySpark ships decide which connector jars are left out

    conf = {**BASE_CONF, "spark.sql.shuffle.partitions": str(default_shuffle_partitions(master))}
    settings = {"spark.jars": ",".join(str(jar) for jar in connector_jars(object_store))}
    settings.update({key: conf[key] for key in SETTINGS_FOR_OWN_JOBS})
    if object_store:
        from statectl.storage.objects import ObjectPath
        from statectl.storage.spark_conf import spark_conf_for

        store_conf = spark_conf_for(ObjectPath("s3a://bucket/checkpoint"))
        settings.update({k: v for k, v in store_conf.items() if not is_secret_key(k)})
    return settings


def as_format(settings: dict[str, str], fmt: str) -> str:
    """``conf``: spark-defaults.conf lines (``spark-submit --properties-file``); ``submit``:
    ``--conf key=value`` arguments; ``python``: the builder calls of a SparkSession."""
    if fmt == "conf":
        return "\n".join(f"{key} {value}" for key, value in settings.items())
    if fmt == "submit":
        return " \\\n".join(f"--conf {shlex.quote(f'{key}={value}')}" for key, value in settings.items())
    if fmt == "python":
        lines = [f"    .config({key!r}, {value!r})" for key, value in settings.items()]
        return "spark = (\n    SparkSession.builder\n" + "\n".join(lines) + "\n    .getOrCreate()\n)"
    raise ValueError(fmt)
