"""The Spark bundles made for the installed PySpark, without a JVM: which connector releases are
tried and in what order, the Scala version and the exclusions per release, the manifest a
resolution leaves, and the S3A bundle per Hadoop. Maven is a script here that knows which
releases "Central" has; the real resolution is exercised by `statectl jars fetch` in each
version's venv.

Bad inputs tried: a Spark 4.3 (no connector of its line: one line, no other line's connector), a
release Central lacks together with its token provider, a Maven that fails for another reason than
a missing artifact, a stale "not found" marker, a Hadoop statectl knows no S3A for, a version with a
build suffix.
"""

from __future__ import annotations

import json
import os
import stat
import time

import pytest

from statectl.adapters.local import jars
from statectl.adapters.local.jars import (
    Artifact,
    cached_jars,
    cached_release,
    connector_candidates,
    ensure_bundle,
    first_versions,
    installed_hadoop,
    known_missing,
    missing_artifacts,
    next_versions,
    shipped_by_spark,
    spark_kafka_bundle,
    spark_s3_bundle,
)
from statectl.errors import JarResolutionError, UsageError
from statectl.spark_support import InstalledSpark

SQL_212, TOKEN_212 = "spark-sql-kafka-0-10_2.12", "spark-token-provider-kafka-0-10_2.12"
SQL_213, TOKEN_213 = "spark-sql-kafka-0-10_2.13", "spark-token-provider-kafka-0-10_2.13"


@pytest.mark.parametrize(
    "version, expected",
    [
        ("3.5.9", ["3.5.9", "3.5.8", "3.5.7", "3.5.6", "3.5.5", "3.5.4", "3.5.3", "3.5.2", "3.5.1", "3.5.0"]),
        ("4.0.5", ["4.0.5", "4.0.4", "4.0.3", "4.0.2", "4.0.1", "4.0.0"]),
        ("4.2.0", ["4.2.0"]),
        ("4.3.0", ["4.3.0"]),
        ("4.1.0.dev1", ["4.1.0"]),
    ],
    ids=["3.5.9", "4.0.5", "4.2.0", "4.3.0-no-earlier", "build-suffix"],
)
def test_candidates_stay_in_the_minor_line_newest_first(version, expected):
    assert connector_candidates(version) == expected


@pytest.mark.parametrize(
    "version, scala, sql, token",
    [
        ("3.5.9", "2.12", SQL_212, TOKEN_212),
        ("4.0.5", "2.13", SQL_213, TOKEN_213),
        ("4.2.0", "2.13", SQL_213, TOKEN_213),
    ],
    ids=["3.5", "4.0", "4.2"],
)
def test_the_kafka_bundle_follows_the_installed_scala_and_version(version, scala, sql, token, tmp_path, monkeypatch):
    monkeypatch.setenv("STATECTL_JAR_CACHE", str(tmp_path))
    bundle = spark_kafka_bundle(InstalledSpark(version))
    assert [(a.artifact, a.version) for a in bundle.artifacts] == [(sql, version), (token, version)]
    assert all(("org.apache.spark", f"spark-tags_{scala}") in a.exclusions for a in bundle.artifacts)
    assert bundle.directory == tmp_path / f"spark-kafka-{version}-{jars.SPARK_BUNDLE_REVISION}"
    assert bundle.releases == tuple(connector_candidates(version))


def test_what_spark_ships_is_excluded_with_its_own_scala_version():
    assert ("org.apache.spark", "spark-tags_2.12") in shipped_by_spark("2.12")
    assert ("org.apache.spark", "spark-tags_2.13") not in shipped_by_spark("2.12")
    assert {("org.apache.hadoop", "*"), ("org.scala-lang", "*"), ("org.slf4j", "*"), ("org.lz4", "*")} <= set(
        shipped_by_spark("2.13")
    )


# Maven's error lines, as Maven 3.8 writes them on this machine's partial mirror of Central.
BOTH_MISSING = (
    "[ERROR] Failed to execute goal on project spark-kafka: Could not resolve dependencies for project "
    "statectl.adapters.local.jars:spark-kafka:pom:1: The following artifacts could not be resolved: "
    "org.apache.spark:spark-sql-kafka-0-10_2.13:jar:4.0.5, "
    "org.apache.spark:spark-token-provider-kafka-0-10_2.13:jar:4.0.5: "
    "org.apache.spark:spark-sql-kafka-0-10_2.13:jar:4.0.5 was not found in https://repo.maven.apache.org"
    "/maven2 during a previous attempt."
)
TOKEN_MISSING = (
    "[ERROR] Failed to execute goal on project spark-kafka: Could not resolve dependencies for project "
    "statectl.adapters.local.jars:spark-kafka:pom:1: org.apache.spark:spark-token-provider-kafka-0-10_2.13"
    ":jar:4.0.4 was not found in https://repo.maven.apache.org/maven2 during a previous attempt."
)
NETWORK = (
    "[ERROR] Failed to execute goal ... Could not transfer metadata: repo.maven.apache.org: "
    "Temporary failure in name resolution"
)


@pytest.mark.parametrize(
    "output, expected",
    [
        (BOTH_MISSING, {SQL_213, TOKEN_213}),
        (TOKEN_MISSING, {TOKEN_213}),
        (NETWORK, set()),
    ],
    ids=["both", "token-provider", "network"],
)
def test_the_missing_artifacts_are_read_from_mavens_line(output, expected):
    assert missing_artifacts(output) == expected


@pytest.mark.parametrize(
    "versions, missing, expected",
    [
        ({SQL_213: "4.0.5", TOKEN_213: "4.0.5"}, {SQL_213, TOKEN_213}, {SQL_213: "4.0.4", TOKEN_213: "4.0.4"}),
        ({SQL_213: "4.0.4", TOKEN_213: "4.0.4"}, {TOKEN_213}, {SQL_213: "4.0.4", TOKEN_213: "4.0.3"}),
        ({SQL_213: "4.0.4", TOKEN_213: "4.0.0"}, {TOKEN_213}, None),
        ({SQL_213: "4.0.0", TOKEN_213: "4.0.0"}, {SQL_213}, None),
        ({SQL_213: "4.0.5", TOKEN_213: "4.0.5"}, set(), None),
    ],
    ids=[
        "connector-missing-both-move",
        "token-provider-alone-moves",
        "token-provider-at-x.y.0",
        "connector-at-x.y.0",
        "nothing-named",
    ],
)
def test_next_versions(versions, missing, expected):
    assert next_versions(spark_kafka_bundle(InstalledSpark("4.0.5")), versions, missing) == expected


def _mark_missing(repository, artifact: str, version: str, age_s: float = 0.0) -> None:
    jar = Artifact("org.apache.spark", artifact, version).local_jar(repository)
    jar.parent.mkdir(parents=True, exist_ok=True)
    marker = jar.with_name(jar.name + ".lastUpdated")
    marker.write_text("")
    then = time.time() - age_s
    os.utime(marker, (then, then))


def test_releases_maven_did_not_find_today_are_passed_over_without_a_maven_run(tmp_path):
    bundle = spark_kafka_bundle(InstalledSpark("3.5.9"))
    _mark_missing(tmp_path, SQL_212, "3.5.9")
    _mark_missing(tmp_path, SQL_212, "3.5.8")
    _mark_missing(tmp_path, TOKEN_212, "3.5.7")
    assert first_versions(bundle, tmp_path) == {SQL_212: "3.5.7", TOKEN_212: "3.5.6"}


def test_a_day_old_not_found_is_asked_again(tmp_path):
    _mark_missing(tmp_path, SQL_212, "3.5.9", age_s=2 * 86400)
    assert not known_missing(Artifact("org.apache.spark", SQL_212, "3.5.9"), tmp_path)
    assert first_versions(spark_kafka_bundle(InstalledSpark("3.5.9")), tmp_path) == {
        SQL_212: "3.5.9",
        TOKEN_212: "3.5.9",
    }


FAKE_MVN = """#!/bin/sh
# Central as this test has it: the jars of the versions in $FAKE_CENTRAL, nothing else.
for a in "$@"; do
  case $a in
    -f) next=pom ;;
    -DoutputDirectory=*) out=${a#-DoutputDirectory=} ;;
    *) [ "$next" = pom ] && pom=$a; next= ;;
  esac
done
echo "$@" >> "$FAKE_LOG"
[ -n "$FAKE_BROKEN" ] && { echo "[ERROR] Failed to execute goal: $FAKE_BROKEN"; exit 1; }
missing=""
for dep in $(sed 's#<dependency>#\\n#g' "$pom" | sed 1d |
    sed -n 's#.*<artifactId>\\([^<]*\\)</artifactId><version>\\([^<]*\\)</version>.*#\\1:\\2#p'); do
  case " $FAKE_CENTRAL " in *" $dep "*) ;; *) missing="$missing org.apache.spark:${dep%%:*}:jar:${dep##*:}," ;; esac
done
if [ -n "$missing" ]; then
  echo "[ERROR] Failed to execute goal on project x: Could not resolve dependencies for project y:" \\
    "The following artifacts could not be resolved:$missing was not found"
  exit 1
fi
mkdir -p "$out"
for dep in $(sed 's#<dependency>#\\n#g' "$pom" | sed 1d |
    sed -n 's#.*<artifactId>\\([^<]*\\)</artifactId><version>\\([^<]*\\)</version>.*#\\1-\\2#p'); do
  : > "$out/$dep.jar"
done
"""


@pytest.fixture
def central(tmp_path, monkeypatch):
    """A fake ``mvn`` on PATH, an empty jar cache and Maven repository; returns the run log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(FAKE_MVN)
    mvn.chmod(mvn.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "mvn.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("STATECTL_JAR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(jars, "maven_repository", lambda: tmp_path / "m2")
    notices: list[str] = []
    monkeypatch.setattr(jars, "_notice", notices.append)
    return log, notices


def _central_has(monkeypatch, *releases: str) -> None:
    monkeypatch.setenv("FAKE_CENTRAL", " ".join(releases))


def test_the_installed_release_is_used_when_central_has_it_quietly(central, monkeypatch):
    log, notices = central
    _central_has(monkeypatch, f"{SQL_213}:4.2.0", f"{TOKEN_213}:4.2.0")
    bundle = spark_kafka_bundle(InstalledSpark("4.2.0"))
    assert [j.name for j in ensure_bundle(bundle)] == [f"{SQL_213}-4.2.0.jar", f"{TOKEN_213}-4.2.0.jar"]
    assert notices == [] and cached_release(bundle) == "4.2.0"


def test_the_newest_patch_of_the_line_is_used_said_once_and_recorded(central, monkeypatch):
    log, notices = central
    # 4.0.5 has neither jar; 4.0.4 has the connector but not its token provider, which only 4.0.0 has.
    _central_has(monkeypatch, f"{SQL_213}:4.0.4", f"{SQL_213}:4.0.3", f"{TOKEN_213}:4.0.0")
    bundle = spark_kafka_bundle(InstalledSpark("4.0.5"))
    found = ensure_bundle(bundle)
    assert [j.name for j in found] == [f"{SQL_213}-4.0.4.jar", f"{TOKEN_213}-4.0.0.jar"]
    assert notices == [
        "note: Maven Central has no org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.5; Spark 4.0.5 "
        "runs with 4.0.4, the newest 4.0.x release it has"
    ]
    manifest = json.loads(bundle.manifest.read_text())
    assert manifest["release"] == "4.0.4" and manifest["version"] == "4.0.5-3"
    assert manifest["artifacts"] == [f"org.apache.spark:{SQL_213}:4.0.4", f"org.apache.spark:{TOKEN_213}:4.0.0"]
    runs = len(log.read_text().splitlines())
    assert runs == 6  # 4.0.5, then 4.0.4 with token providers 4.0.4 .. 4.0.0
    # Later runs: the manifest, no Maven, no notice.
    notices.clear()
    assert ensure_bundle(bundle) == found == cached_jars(bundle)
    assert len(log.read_text().splitlines()) == runs and notices == []


def test_another_minor_line_is_never_used(central, monkeypatch):
    log, notices = central
    _central_has(monkeypatch, f"{SQL_213}:4.2.0", f"{TOKEN_213}:4.2.0")
    with pytest.raises(JarResolutionError) as raised:
        ensure_bundle(spark_kafka_bundle(InstalledSpark("4.3.0")))
    assert str(raised.value) == (
        "the Kafka connector for Spark 4.3.0 could not be resolved from Maven Central "
        "(org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0, nor an earlier 4.3.x); "
        "statectl runs jobs on PySpark 3.5 to 4.2"
    )
    assert len(log.read_text().splitlines()) == 1 and notices == []


def test_a_maven_failure_that_is_not_a_missing_artifact_stops_at_once(central, monkeypatch):
    log, _ = central
    monkeypatch.setenv("FAKE_BROKEN", "Could not transfer metadata: Temporary failure in name resolution")
    with pytest.raises(
        JarResolutionError, match="could not resolve the spark-kafka jars from Maven Central: .*name resolution"
    ):
        ensure_bundle(spark_kafka_bundle(InstalledSpark("3.5.9")))
    assert len(log.read_text().splitlines()) == 1


def test_maven_runs_are_bounded(central, monkeypatch):
    log, _ = central
    _central_has(monkeypatch)
    with pytest.raises(JarResolutionError, match="Kafka connector for Spark 3.5.9"):
        ensure_bundle(spark_kafka_bundle(InstalledSpark("3.5.9")))
    assert len(log.read_text().splitlines()) == jars.MAX_MAVEN_RUNS


@pytest.mark.parametrize("hadoop, sdk", [("3.4.1", "2.24.6"), ("3.4.2", "2.29.52"), ("3.5.0", "2.35.4")])
def test_the_s3a_bundle_follows_pysparks_hadoop(hadoop, sdk):
    bundle = spark_s3_bundle(InstalledSpark("4.1.4"), hadoop)
    versions = {a.artifact: a.version for a in bundle.artifacts}
    assert versions["hadoop-aws"] == hadoop and versions["s3"] == versions["sts"] == sdk
    assert "spark-hadoop-cloud_2.13" in versions and bundle.version == f"4.1.4-{hadoop}-{sdk}"


def test_a_hadoop_without_a_known_s3a_is_one_line():
    with pytest.raises(JarResolutionError, match="no S3A connector for Hadoop 3.3.4"):
        spark_s3_bundle(InstalledSpark("3.5.9"), "3.3.4")


def test_s3a_checkpoints_on_spark_35_are_refused_by_the_gate(monkeypatch):
    monkeypatch.setattr(jars, "installed_spark", lambda: InstalledSpark("3.5.9"))
    assert [b.name for b in jars.spark_bundles()] == ["spark-kafka"]
    with pytest.raises(UsageError, match=r"^s3a:// checkpoints for a run needs Spark 4.0 or later .*installed: 3.5.9$"):
        jars.spark_bundles(object_store=True)
    assert "spark-s3" not in jars.bundles()


def test_the_installed_hadoop_is_read_from_pysparks_jars(tmp_path):
    (tmp_path / "hadoop-client-api-3.3.4.jar").write_bytes(b"")
    (tmp_path / "hadoop-client-runtime-3.3.4.jar").write_bytes(b"")
    assert installed_hadoop(tmp_path) == "3.3.4"
    assert installed_hadoop(tmp_path / "none") is None


def test_spark_35s_restore_log_lines_are_read():
    """3.5 names the store in the message and not the query's run; 4.x in the logger's name."""
    from statectl.run.restore_tracking import parse_load_line

    prefix = "26/11/29 01:18:25.699 INFO Executor task launch worker for task 1.0 in stage 3.0 (TID 4) "
    replay = parse_load_line(
        prefix + "RocksDB StateStoreId(opId=0,partId=1,name=default): replaying changelog from version 0 -> 3"
    )
    loaded = parse_load_line(prefix + "RocksDB StateStoreId(opId=2,partId=0,name=left-keyToNumValues): Loaded 3")
    assert (replay.kind, replay.operator_id, replay.partition, replay.run_id, replay.stage) == (
        "replay_file",
        0,
        1,
        "",
        3,
    )
    assert (loaded.kind, loaded.operator_id, loaded.store, loaded.version) == ("loaded", 2, "left-keyToNumValues", 3)


def test_a_watermarked_key_in_the_plan_is_the_column():
    from statectl.checkpoint.restart_check import state_keys_in_plan

    plan = (
        "StateStoreSave [window#29-T10000ms, page#12], state info [ checkpoint = file:/ck/state, runId = x, "
        "opId = 0, ver = 6, numPartitions = 2], Update, 0, 0, 2"
    )
    assert state_keys_in_plan(plan) == {0: ["window", "page"]}
