"""Resolve the JVM jars statectl needs from Maven Central, once, into a local cache.

Three bundles: the Apache Kafka broker runtime (KRaft), Spark's Kafka connector, and Spark's S3A
connector (only when a run's checkpoint is on S3). The two Spark bundles are made for the PySpark
installed beside statectl (its release, its Scala version, its Hadoop) and cached per installed
Spark version. Resolution runs ``mvn dependency:copy-dependencies`` on a generated POM; the result
lands in a versioned directory with a manifest, written atomically, so later runs never touch the
network.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from statectl.errors import JarResolutionError, UsageError
from statectl.paths import jar_cache
from statectl.spark_support import (
    GATES,
    SPARK_EXTRA,
    SUPPORTED_BELOW,
    SUPPORTED_FROM,
    InstalledSpark,
    installed_spark,
    require,
    text,
)

KAFKA_VERSION = "4.3.1"
LOG4J_VERSION = "2.25.4"
#: What a Spark bundle's cache directory holds, after the installed Spark version: bumped when that changes.
SPARK_BUNDLE_REVISION = "3"
#: Maven runs a resolution may take before giving up (a release Maven Central lacks costs one,
#: some seconds; one it lacked within the day is passed over without).
MAX_MAVEN_RUNS = 8
#: The AWS SDK v2 release each Hadoop's hadoop-aws is built against (its POM's bundle version),
#: by the Hadoop PySpark ships (pyspark/jars/hadoop-client-api-<version>.jar): 4.0, 4.1, 4.2.
AWS_SDK_FOR_HADOOP = {"3.4.1": "2.24.6", "3.4.2": "2.29.52", "3.5.0": "2.35.4"}
#: The abortable-stream checkpoint file manager. Maven Central has no spark-hadoop-cloud for 4.2;
#: the 4.1.2 jar alone (no dependencies) holds it and only uses Hadoop's public API.
SPARK_HADOOP_CLOUD_VERSION = "4.1.2"
_SDK_SHIPPED_BY_SPARK = (
    ("io.netty", "*"),
    ("org.apache.httpcomponents", "*"),
    ("commons-codec", "*"),
    ("commons-logging", "*"),
    ("org.slf4j", "*"),
)


def shipped_by_spark(scala: str) -> tuple[tuple[str, str], ...]:
    """What PySpark's own jars already are (Hadoop, Scala, slf4j, lz4, snappy; spark-tags of its
    Scala version): a bundle leaves them out so no second, older copy lands on the classpath (or in
    the cache)."""
    return (
        ("org.apache.hadoop", "*"),
        ("org.slf4j", "*"),
        ("org.scala-lang", "*"),
        ("org.scala-lang.modules", "*"),
        ("at.yawk.lz4", "*"),
        ("org.lz4", "*"),
        ("org.xerial.snappy", "*"),
        ("com.google.code.findbugs", "*"),
        ("org.apache.spark", f"spark-tags_{scala}"),
    )


@dataclass(frozen=True)
class Artifact:
    group: str
    artifact: str
    version: str
    exclusions: tuple[tuple[str, str], ...] = ()

    def pom_xml(self) -> str:
        excl = "".join(
            f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>" for g, a in self.exclusions
        )
        excl = f"<exclusions>{excl}</exclusions>" if excl else ""
        return (
            f"<dependency><groupId>{self.group}</groupId><artifactId>{self.artifact}</artifactId>"
            f"<version>{self.version}</version>{excl}</dependency>"
        )

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    def local_jar(self, repository: Path) -> Path:
        """Where Maven keeps this artifact's jar in the local ``repository``."""
        return repository.joinpath(
            *self.group.split("."), self.artifact, self.version, f"{self.artifact}-{self.version}.jar"
        )


@dataclass(frozen=True)
class JarBundle:
    name: str
    version: str
    artifacts: tuple[Artifact, ...] = field(default_factory=tuple)
    #: The releases the artifacts of ``releases[0]``'s version may be taken at, newest first, when
    #: Maven Central lacks that one: the patch releases of the installed Spark's minor line (a
    #: connector of another line is never used). Empty: the artifacts as they are, or nothing.
    releases: tuple[str, ...] = ()
    #: The one line when no release resolves.
    unresolved: str = ""

    @property
    def directory(self) -> Path:
        return jar_cache() / f"{self.name}-{self.version}"

    @property
    def manifest(self) -> Path:
        return self.directory / "manifest.json"

    def at(self, versions: dict[str, str]) -> tuple[Artifact, ...]:
        """The artifacts with the versions ``versions`` gives by artifact id."""
        return tuple(replace(a, version=versions.get(a.artifact, a.version)) for a in self.artifacts)


KAFKA_BROKER = JarBundle(
    "kafka-broker",
    KAFKA_VERSION,
    (
        Artifact("org.apache.kafka", "kafka_2.13", KAFKA_VERSION),
        # The broker logs through slf4j 1.x; without a binding it would log nothing at all.
        Artifact("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J_VERSION),
    ),
)


def connector_candidates(version: str) -> list[str]:
    """The connector releases to try for the installed Spark ``version``, in order: that release,
    then the earlier patch releases of its minor line, newest first (``3.5.9`` -> ``3.5.9, 3.5.8,
    ... 3.5.0``); never another minor line. A build suffix (``4.1.0.dev1``) is dropped."""
    match = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    if match is None:
        return [version]
    major, minor, patch = (int(g) for g in match.groups())
    return [f"{major}.{minor}.{p}" for p in range(patch, -1, -1)]


def _kafka_artifacts(scala: str, release: str) -> tuple[Artifact, ...]:
    shipped = shipped_by_spark(scala)
    return (
        Artifact("org.apache.spark", f"spark-sql-kafka-0-10_{scala}", release, exclusions=shipped),
        Artifact("org.apache.spark", f"spark-token-provider-kafka-0-10_{scala}", release, exclusions=shipped),
    )


def spark_kafka_bundle(spark: InstalledSpark) -> JarBundle:
    """Spark's Kafka connector for the installed ``spark``: its own release, else the newest
    patch release of its minor line Maven Central has; cached under the installed version."""
    releases = tuple(connector_candidates(spark.version))
    artifacts = _kafka_artifacts(spark.scala, releases[0])
    return JarBundle(
        "spark-kafka",
        f"{spark.version}-{SPARK_BUNDLE_REVISION}",
        artifacts,
        releases,
        unresolved=(
            f"the Kafka connector for Spark {spark.version} could not be resolved from Maven Central "
            f"({artifacts[0].coordinates}, nor an earlier {_line(releases[0])}); statectl runs jobs on "
            f"PySpark {text(SUPPORTED_FROM)} to {SUPPORTED_BELOW[0]}.{SUPPORTED_BELOW[1] - 1}"
        ),
    )


def installed_hadoop(jars_dir: Path) -> str | None:
    """The Hadoop release PySpark ships, from ``hadoop-client-api-<version>.jar`` in its jars."""
    for jar in sorted(jars_dir.glob("hadoop-client-api-*.jar")):
        return jar.name[len("hadoop-client-api-") : -len(".jar")]
    return None


def spark_s3_bundle(spark: InstalledSpark, hadoop: str) -> JarBundle:
    """What Spark needs for s3a:// checkpoints, resolved only when a run uses one: hadoop-aws of
    the Hadoop PySpark ships, the individual AWS SDK v2 modules S3A calls (s3, the transfer
    manager, sts for assumed roles) instead of the SDK bundle (all of AWS's services), and the
    rename-free checkpoint file manager. Hadoop 3.4.1 (Spark 4.0) is the first whose S3A is on
    SDK v2; the gate ``s3a-checkpoints`` refuses older Sparks before this is asked."""
    sdk = AWS_SDK_FOR_HADOOP.get(hadoop)
    if sdk is None:
        raise JarResolutionError(
            f"statectl knows no S3A connector for Hadoop {hadoop} (PySpark {spark.version}'s); "
            f"s3a:// checkpoints need the Hadoop of PySpark 4.0, 4.1 or 4.2 "
            f"({', '.join(AWS_SDK_FOR_HADOOP)})"
        )
    return JarBundle(
        "spark-s3",
        f"{spark.version}-{hadoop}-{sdk}",
        (
            Artifact(
                "org.apache.hadoop",
                "hadoop-aws",
                hadoop,
                exclusions=(("software.amazon.awssdk", "bundle"), ("org.wildfly.openssl", "*"), *_SDK_SHIPPED_BY_SPARK),
            ),
            *(
                Artifact("software.amazon.awssdk", name, sdk, exclusions=_SDK_SHIPPED_BY_SPARK)
                for name in ("s3", "s3-transfer-manager", "sts")
            ),
            Artifact(
                "org.apache.spark",
                f"spark-hadoop-cloud_{spark.scala}",
                SPARK_HADOOP_CLOUD_VERSION,
                exclusions=(("*", "*"),),
            ),
        ),
    )


def spark_bundles(object_store: bool = False) -> list[JarBundle]:
    """The Spark bundles for the installed PySpark: the Kafka connector, and with ``object_store``
    the S3A connector (gate ``s3a-checkpoints`` first: Spark 3.5's Hadoop has no SDK v2 S3A)."""
    spark = installed_spark()
    if spark is None:
        raise UsageError(f"Spark's jars need PySpark: {SPARK_EXTRA}")
    found = [spark_kafka_bundle(spark)]
    if object_store:
        require("s3a-checkpoints", spark)
        found.append(spark_s3_bundle(spark, installed_hadoop(pyspark_jars_dir()) or "unknown"))
    return found


def bundles() -> dict[str, JarBundle]:
    """Every bundle ``statectl jars fetch`` resolves: the broker's, and the Spark ones for the
    installed PySpark (the S3A one where its Spark can use it)."""
    found = [KAFKA_BROKER]
    spark = installed_spark()
    if spark is not None:
        found += spark_bundles(object_store=spark.release >= GATES["s3a-checkpoints"].since)
    return {b.name: b for b in found}


def _pom(bundle_name: str, artifacts: tuple[Artifact, ...]) -> str:
    deps = "".join(a.pom_xml() for a in artifacts)
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        f"<groupId>statectl.adapters.local.jars</groupId><artifactId>{bundle_name}</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{deps}</dependencies></project>"
    )


def cached_jars(bundle: JarBundle) -> list[Path] | None:
    """The bundle's jars if a complete resolution is cached, else None."""
    try:
        names = json.loads(bundle.manifest.read_text())["jars"]
    except (OSError, ValueError, KeyError):
        return None
    paths = [bundle.directory / n for n in names]
    return paths if all(p.is_file() for p in paths) else None


def cached_release(bundle: JarBundle) -> str | None:
    """The release a cached bundle's main artifact is of (its manifest's), None if not cached."""
    try:
        found = json.loads(bundle.manifest.read_text())
    except (OSError, ValueError):
        return None
    return found.get("release") or found.get("version")


def _stderr_notice(line: str) -> None:
    sys.stderr.write(line + "\n")


_notice: Callable[[str], None] = _stderr_notice


def on_notice(show: Callable[[str], None]) -> None:
    """Where a resolution's notices go (a connector of an earlier patch release): the command line
    hands its message path; plain stderr otherwise."""
    global _notice
    _notice = show


def maven_repository() -> Path:
    """Maven's local repository (the default one: statectl's settings name no other)."""
    return Path.home() / ".m2" / "repository"


#: How long Maven trusts a failed look-up (its default update interval): the same here.
_MISS_TRUSTED_S = 86400.0


def known_missing(artifact: Artifact, repository: Path, now: float | None = None) -> bool:
    """Maven looked for ``artifact`` within the last day and did not find it: its ``.lastUpdated``
    marker and no jar. A release passed over this way costs no Maven run."""
    import time

    jar = artifact.local_jar(repository)
    if jar.is_file():
        return False
    now = time.time() if now is None else now
    for marker in (jar.with_name(jar.name + ".lastUpdated"), jar.with_suffix(".pom.lastUpdated")):
        try:
            if now - marker.stat().st_mtime < _MISS_TRUSTED_S:
                return True
        except OSError:
            continue
    return False


_COORDINATES = re.compile(r"([\w.\-]+):([\w.\-]+):(?:jar|pom):([\w.\-]+)")


def missing_artifacts(output: str) -> set[str]:
    """The artifact ids Maven's error line names as not resolved (missing from the repository, or
    not downloaded before in offline mode)."""
    return {m.group(2) for m in _COORDINATES.finditer(output) if not m.group(1).startswith("statectl.")}


def next_versions(bundle: JarBundle, versions: dict[str, str], missing: set[str]) -> dict[str, str] | None:
    """The versions to try after ``versions`` failed with ``missing``: the main artifact (the
    first) one release earlier, the others with it; or, with the main one found, each missing
    other one alone one release earlier (spark-token-provider has releases spark-sql-kafka lacks,
    and the reverse). None when there is nothing earlier, or Maven named none of them (the network
    or Maven failed)."""
    releases = list(bundle.releases)
    main = bundle.artifacts[0].artifact
    moving = [main] if main in missing else sorted(a for a in missing if a in versions and a != main)
    if not moving:
        return None
    after = dict(versions)
    for artifact in moving:
        index = releases.index(versions[artifact]) + 1
        if index >= len(releases):
            return None
        after[artifact] = releases[index]
    if main in missing:
        after = {a: after[main] for a in after}
    return after


def first_versions(bundle: JarBundle, repository: Path, now: float | None = None) -> dict[str, str] | None:
    """The versions to try first: for each artifact that follows ``bundle.releases``, the newest
    Maven has not failed to find within the day (passed over without a Maven run)."""
    versions = {a.artifact: a.version for a in bundle.artifacts if a.version in bundle.releases}
    while True:
        missing = {
            a.artifact for a in bundle.at(versions) if a.artifact in versions and known_missing(a, repository, now)
        }
        if not missing:
            return versions
        after = next_versions(bundle, versions, missing)
        if after is None:
            return None
        versions = after


def ensure_bundle(bundle: JarBundle, timeout: float = 900.0, max_runs: int = MAX_MAVEN_RUNS) -> list[Path]:
    """Return the bundle's jars, resolving them with Maven on first use: its own release, else the
    newest of ``bundle.releases`` Maven Central has (one notice line says which was used). Offline
    first where the jars are in Maven's repository; at most ``max_runs`` Maven runs."""
    jars = cached_jars(bundle)
    if jars is not None:
        return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarResolutionError(
            f"the {bundle.name} jars are not cached yet and Maven ('mvn') is not installed; "
            "run scripts/setup.sh or install Maven"
        )
    bundle.directory.parent.mkdir(parents=True, exist_ok=True)
    repository = maven_repository()
    versions = first_versions(bundle, repository) if bundle.releases else {}
    detail = ""
    runs = 0
    while versions is not None and runs < max_runs:
        artifacts = bundle.at(versions)
        offline = bool(bundle.releases) and all(a.local_jar(repository).is_file() for a in artifacts)
        runs += 1
        ok, detail = _resolve(mvn, bundle, artifacts, offline, timeout)
        if not ok and offline:
            runs += 1
            ok, detail = _resolve(mvn, bundle, artifacts, False, timeout)
        if ok:
            main = bundle.artifacts[0]
            if artifacts[0].version != main.version:
                _notice(
                    f"note: Maven Central has no {main.coordinates}; Spark {main.version} runs with "
                    f"{artifacts[0].version}, the newest {_line(main.version)} release it has"
                )
            jars = cached_jars(bundle)
            assert jars is not None
            return jars
        missing = missing_artifacts(detail)
        if not bundle.releases or not missing:
            break  # nothing earlier to try, or Maven or the network failed: Maven's line says which
        versions = next_versions(bundle, versions, missing)
    if bundle.unresolved and (versions is None or runs >= max_runs):
        raise JarResolutionError(bundle.unresolved)
    raise JarResolutionError(f"could not resolve the {bundle.name} jars from Maven Central: {detail[:400]}")


def _line(version: str) -> str:
    return ".".join(version.split(".")[:2]) + ".x"


def _resolve(
    mvn: str, bundle: JarBundle, artifacts: tuple[Artifact, ...], offline: bool, timeout: float
) -> tuple[bool, str]:
    """One Maven run for ``artifacts``; ``(True, "")`` once their jars and manifest are in the
    bundle's directory, else ``(False, Maven's line saying why)``."""
    staging = Path(tempfile.mkdtemp(prefix=f".{bundle.name}-", dir=bundle.directory.parent))
    try:
        (staging / "pom.xml").write_text(_pom(bundle.name, artifacts))
        settings = resources.files("statectl.resources").joinpath("maven/settings.xml")
        with resources.as_file(settings) as settings_path:
            cmd = [
                mvn,
                "-B",
                "-q",
                *(["-o"] if offline else []),
                "-s",
                str(settings_path),
                "-f",
                str(staging / "pom.xml"),
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={staging / 'jars'}",
            ]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired as exc:
                raise JarResolutionError(
                    f"resolving the {bundle.name} jars took longer than {timeout:.0f} s; "
                    "check access to Maven Central and try again"
                ) from exc
        if proc.returncode != 0:
            detail = next(
                (ln.strip() for ln in proc.stdout.splitlines() if "ERROR" in ln and "Failed" in ln),
                proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "no output",
            )
            return False, detail
        jar_dir = staging / "jars"
        names = sorted(p.name for p in jar_dir.glob("*.jar"))
        if not names:
            raise JarResolutionError(f"Maven resolved no jars for {bundle.name}")
        (jar_dir / "manifest.json").write_text(json.dumps(manifest(bundle, artifacts, names), indent=1))
        if bundle.directory.exists():
            shutil.rmtree(bundle.directory)
        os.replace(jar_dir, bundle.directory)
        return True, ""
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def manifest(bundle: JarBundle, artifacts: tuple[Artifact, ...], names: list[str]) -> dict:
    """A resolved bundle's manifest: its jars and the release its main artifact is of (later runs
    read that, offline and quietly)."""
    return {
        "bundle": bundle.name,
        "version": bundle.version,
        "release": artifacts[0].version,
        "artifacts": [a.coordinates for a in artifacts],
        "jars": names,
    }


def pyspark_jars_dir() -> Path:
    """The jars PySpark ships (``pyspark/jars``): Spark itself, which no bundle repeats."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"PySpark is not installed: {SPARK_EXTRA}")
    return Path(list(spec.submodule_search_locations)[0]) / "jars"


def artifact_base(jar_name: str) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients`` (the name without its version)."""
    stem = jar_name[:-4] if jar_name.endswith(".jar") else jar_name
    parts = stem.split("-")
    for i, part in enumerate(parts):
        if i > 0 and part[:1].isdigit():
            return "-".join(parts[:i])
    return stem
