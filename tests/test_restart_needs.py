"""What a restart needs: the session settings a checkpoint depends on, the
Spark versions that can restart it, in inspect-state's restore plan (text and --json), and
`statectl run` setting the checkpoint format itself.

What the table below encodes was checked on PySpark 4.2.0 with real checkpoints, each restarted in
a fresh JVM: a format-2 aggregation restarts only with checkpointFormatVersion=2 ("Error reading
streaming state file of …/1.changelog does not exist" without it); a format-1 aggregation fails
when the session sets 2 (CANNOT_COMMIT); a changelog checkpoint restarts with changelog
checkpointing off; a session with the HDFS provider and 5 shuffle partitions restarts a RocksDB
checkpoint pinned at 2 as RocksDB with 2.

Bad inputs tried: format 1 and 2, RocksDB with and without changelogs, HDFS, transformWithState,
dropDuplicatesWithinWatermark, an offset log that pins no provider or no partition count, a
stateless checkpoint, no checkpoint at all (a new query); for `run`, a job config that sets
format 2 on a format-1 checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statectl.checkpoint.layout import (
    HDFS_PROVIDER_CLASS,
    PROVIDER_CONF,
    ROCKSDB_PROVIDER_CLASS,
    SHUFFLE_PARTITIONS,
)
from statectl.checkpoint.reader import read_layout
from statectl.checkpoint.restart_needs import (
    CHANGELOG_CONF,
    FORMAT_CONF,
    PINNED,
    RECOMMENDED,
    REQUIRED,
    restart_needs,
    restart_session_conf,
)
from statectl.errors import OperationalError
from tests.checkpoint_factory import OperatorSpec, build_checkpoint, write

TWS = OperatorSpec(name="transformWithStateInPandasExec", state_variables=(("count", "ValueState", False),))


def unpin(root: Path, *keys: str) -> None:
    """Offset log entries without ``keys`` in their pinned confs (as older writers left them)."""
    for path in sorted((root / "offsets").iterdir()):
        if path.name.startswith("."):
            continue
        version, meta, *rest = path.read_text().split("\n")
        doc = json.loads(meta)
        for key in keys:
            doc["conf"].pop(key, None)
        write(path, "\n".join([version, json.dumps(doc, separators=(",", ":")), *rest]))


R, P, C = REQUIRED, PINNED, RECOMMENDED
CASES = {
    "rocksdb-format1-changelog": (
        {},
        (),
        [
            (FORMAT_CONF, "1", R),
            (PROVIDER_CONF, ROCKSDB_PROVIDER_CLASS, P),
            (CHANGELOG_CONF, "true", C),
            (SHUFFLE_PARTITIONS, "2", P),
        ],
        [("before 3.5", "no", "changelog checkpointing"), ("3.5 and newer", "yes", "")],
        "3.5",
    ),
    "rocksdb-format2": (
        {"format_version": 2},
        (),
        [
            (FORMAT_CONF, "2", R),
            (PROVIDER_CONF, ROCKSDB_PROVIDER_CLASS, P),
            (CHANGELOG_CONF, "true", C),
            (SHUFFLE_PARTITIONS, "2", P),
        ],
        [
            ("before 4.0", "no", "checkpoint format 2"),
            ("4.0–4.2", f"only with {FORMAT_CONF}=2", ""),
            ("4.3 and newer", "yes", ""),
        ],
        "4.0",
    ),
    "rocksdb-no-changelog": (
        {"changelog": False},
        (),
        [
            (FORMAT_CONF, "1", R),
            (PROVIDER_CONF, ROCKSDB_PROVIDER_CLASS, P),
            (CHANGELOG_CONF, "false", C),
            (SHUFFLE_PARTITIONS, "2", P),
        ],
        [("before 3.2", "no", "the RocksDB state store"), ("3.2 and newer", "yes", "")],
        "3.2",
    ),
    "hdfs": (
        {"provider": "hdfs"},
        (),
        [(FORMAT_CONF, "1", R), (PROVIDER_CONF, HDFS_PROVIDER_CLASS, P), (SHUFFLE_PARTITIONS, "2", P)],
        [("any", "yes", "")],
        None,
    ),
    "transform-with-state": (
        {"operators": (TWS,)},
        (),
        [
            (FORMAT_CONF, "1", R),
            (PROVIDER_CONF, ROCKSDB_PROVIDER_CLASS, P),
            (CHANGELOG_CONF, "true", C),
            (SHUFFLE_PARTITIONS, "2", P),
        ],
        [("before 4.0", "no", "transformWithState"), ("4.0 and newer", "yes", "")],
        "4.0",
    ),
    "dedupe-within-watermark-hdfs": (
        {"provider": "hdfs", "operators": (OperatorSpec(name="dedupeWithinWatermark"),)},
        (),
        [(FORMAT_CONF, "1", R), (PROVIDER_CONF, HDFS_PROVIDER_CLASS, P), (SHUFFLE_PARTITIONS, "2", P)],
        [("before 3.5", "no", "dropDuplicatesWithinWatermark"), ("3.5 and newer", "yes", "")],
        "3.5",
    ),
    "nothing-pinned": (
        {"changelog": False},
        (PROVIDER_CONF, SHUFFLE_PARTITIONS),
        [
            (FORMAT_CONF, "1", R),
            (PROVIDER_CONF, ROCKSDB_PROVIDER_CLASS, R),
            (CHANGELOG_CONF, "false", C),
            (SHUFFLE_PARTITIONS, "2", R),
        ],
        [("before 3.2", "no", "the RocksDB state store"), ("3.2 and newer", "yes", "")],
        "3.2",
    ),
    "stateless": ({"operators": ()}, (), [(SHUFFLE_PARTITIONS, "2", P)], [("any", "yes", "")], None),
}


@pytest.mark.parametrize("kind", list(CASES), ids=list(CASES))
def test_restart_needs(tmp_path, kind):
    build, unpinned, settings, versions, minimum = CASES[kind]
    build_checkpoint(tmp_path / "ckpt", batches=4, **build)
    unpin(tmp_path / "ckpt", *unpinned)
    needs = restart_needs(read_layout(tmp_path / "ckpt"))
    assert [(s.key, s.value, s.status) for s in needs.settings] == settings
    assert [(v.versions, v.restarts, v.why) for v in needs.versions] == versions
    assert needs.minimum_version == minimum
    assert needs.session_conf == {k: v for k, v, status in settings if status == REQUIRED}


def test_a_new_query_needs_nothing():
    assert restart_session_conf(None) == {}


def test_inspect_state_json_and_text_show_what_a_restart_needs(tmp_path, cli):
    build_checkpoint(tmp_path / "ckpt", batches=4, format_version=2)
    doc = json.loads(cli("inspect-state", str(tmp_path / "ckpt"), "--json").stdout)
    needs = doc["restore_plan"]["restart_needs"]
    assert needs["session_conf"] == {FORMAT_CONF: "2"}
    assert needs["minimum_spark_version"] == "4.0"
    assert needs["settings"][0] == {
        "key": FORMAT_CONF,
        "value": "2",
        "status": "required",
        "why": "not in the offset log; without it Spark 4.0–4.2 look for format-1 file names and fail "
        '("…/1.changelog does not exist"); 4.3 detects the format',
    }
    text = cli("inspect-state", str(tmp_path / "ckpt")).stdout
    assert "Restart needs: session settings (the offset log pins some of them, not all)" in text
    assert f"set it       {FORMAT_CONF}=2" in text
    assert (
        f"Spark versions: before 4.0 no (checkpoint format 2) · 4.0–4.2 only with {FORMAT_CONF}=2 · 4.3 and newer yes"
    ) in text


# ------------------------------------------------------------------------------------------
# statectl run sets the format the checkpoint was written in


class _SessionAsked(OperationalError):
    """Raised by the stand-in for spark_session: the run stops there, before any JVM."""

    def __init__(self, conf):
        super().__init__("session asked")
        self.conf = conf


class _Job:
    check_checkpoint = None

    def topics(self, config):
        return []


class _Topics:
    def apply(self):
        return None


def _session_conf_of_run(monkeypatch, checkpoint: Path, overrides: list[str]) -> dict:
    """The SQL confs `statectl run` asks Spark for, with the broker, topics and Spark stood in."""
    from statectl.adapters.kafka import connect as kafka
    from statectl.adapters.spark import session as spark
    from statectl.jobs.registry import default_config, load_job_config
    from statectl.run import runner

    def session(**kwargs):
        raise _SessionAsked(kwargs["conf"])

    monkeypatch.setattr(spark, "require_master", lambda master: None)
    monkeypatch.setattr(spark, "spark_session", session)
    monkeypatch.setattr(kafka, "require_broker", lambda cluster: object())
    monkeypatch.setattr(kafka, "require_operations", lambda *args: None)
    monkeypatch.setattr(runner, "_plan_topics", lambda *args: _Topics())
    config = load_job_config(default_config("leaderboard"), overrides)
    request = runner.RunRequest(config=config, checkpoint_dir=checkpoint, cluster=object(), listen=False, job=_Job())
    with pytest.raises(_SessionAsked) as asked:
        runner.run_job(request)
    return {k: str(v) for k, v in asked.value.conf.items()}


@pytest.mark.parametrize(
    "format_version, overrides, expected",
    [
        (2, [], "2"),
        (1, [f"spark.conf.{FORMAT_CONF}=2"], "1"),
        (None, [f"spark.conf.{FORMAT_CONF}=2"], "2"),
        (None, [], None),
    ],
    ids=["format2-checkpoint", "format1-checkpoint-config-says-2", "new-checkpoint-config-says-2", "new-checkpoint"],
)
def test_run_sets_the_format_the_checkpoint_needs(tmp_path, monkeypatch, format_version, overrides, expected):
    checkpoint = tmp_path / "ckpt"
    if format_version is not None:
        build_checkpoint(checkpoint, batches=3, format_version=format_version)
    conf = _session_conf_of_run(monkeypatch, checkpoint, overrides)
    assert conf.get(FORMAT_CONF) == expected
