"""Resolve the JVM jars statectl needs from Maven Central, once, into a local cache.

Three bundles: the Apache Kafka broker runtime (KRaft), Spark's Kafka connector, and Spark's S3A
connector (only when a run's checkpoint is on S3). Resolution
runs ``mvn dependency:copy-dependencies`` on a generated POM; the result lands in a versioned
directory with a manifest, written atomically, so later runs never touch the network.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from statectl.errors import JarResolutionError, OperationalError
from statectl.paths import jar_cache

KAFKA_VERSION = "4.3.1"
LOG4J_VERSION = "2.25.4"
SPARK_KAFKA_VERSION = "4.2.0"
SPARK_TOKEN_PROVIDER_VERSION = "4.2.0"
#: Hadoop's S3A connector, for PySpark 4.2's Hadoop (pyspark/jars/hadoop-client-api-3.5.0.jar).
HADOOP_VERSION = "3.5.0"
#: The AWS SDK v2 release hadoop-aws 3.5.0 is built against (its POM's bundle version).
AWS_SDK_VERSION = "2.35.4"
#: Maven Central has no spark-hadoop-cloud for 4.2; the 4.1.2 jar alone (no dependencies) holds the
#: abortable-stream checkpoint file manager, unchanged for 4.2 (it only uses Hadoop's public API).
SPARK_HADOOP_CLOUD_VERSION = "4.1.2"

# What PySpark's own jars already are (Hadoop 3.5.0, Scala, slf4j 2, lz4, snappy, netty, the
# Apache HTTP client, commons-codec/logging): a bundle leaves them out so no second, older copy
# lands on the classpath (or in the cache).
_SHIPPED_BY_SPARK = (("org.apache.hadoop", "*"), ("org.slf4j", "*"), ("org.scala-lang", "*"),
                     ("org.scala-lang.modules", "*"), ("at.yawk.lz4", "*"), ("org.lz4", "*"),
                     ("org.xerial.snappy", "*"), ("com.google.code.findbugs", "*"),
                     ("org.apache.spark", "spark-tags_2.13"))
_SHIPPED_BY_SPARK_SDK = (("io.netty", "*"), ("org.apache.httpcomponents", "*"), ("commons-codec", "*"),
                         ("commons-logging", "*"), ("org.slf4j", "*"))


@dataclass(frozen=True)
class Artifact:
    group: str
    artifact: str
    version: str
    exclusions: tuple[tuple[str, str], ...] = ()

    def pom_xml(self) -> str:
        excl = "".join(
            f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
            for g, a in self.exclusions
        )
        excl = f"<exclusions>{excl}</exclusions>" if excl else ""
        return (
            f"<dependency><groupId>{self.group}</groupId><artifactId>{self.artifact}</artifactId>"
            f"<version>{self.version}</version>{excl}</dependency>"
        )


@dataclass(frozen=True)
class JarBundle:
    name: str
    version: str
    artifacts: tuple[Artifact, ...] = field(default_factory=tuple)

    @property
    def directory(self) -> Path:
        return jar_cache() / f"{self.name}-{self.version}"

    @property
    def manifest(self) -> Path:
        return self.directory / "manifest.json"


KAFKA_BROKER = JarBundle(
    "kafka-broker",
    KAFKA_VERSION,
    (
        Artifact("org.apache.kafka", "kafka_2.13", KAFKA_VERSION),
        # The broker logs through slf4j 1.x; without a binding it would log nothing at all.
        Artifact("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J_VERSION),
    ),
)

SPARK_KAFKA = JarBundle(
    "spark-kafka",
    # "-2": the bundle without the jars Spark ships, and the token provider of its own release
    f"{SPARK_KAFKA_VERSION}-2",
    (
        Artifact("org.apache.spark", "spark-sql-kafka-0-10_2.13", SPARK_KAFKA_VERSION, exclusions=_SHIPPED_BY_SPARK),
        Artifact("org.apache.spark", "spark-token-provider-kafka-0-10_2.13", SPARK_TOKEN_PROVIDER_VERSION,
                 exclusions=_SHIPPED_BY_SPARK),
    ),
)

#: What Spark needs for s3a:// checkpoints, resolved only when a run uses one: hadoop-aws and the
#: individual AWS SDK modules S3A calls (s3, the transfer manager, sts for assumed roles) instead
#: of the SDK bundle (all of AWS's services), and the rename-free checkpoint file manager.
SPARK_S3 = JarBundle(
    "spark-s3",
    f"{HADOOP_VERSION}-{AWS_SDK_VERSION}",
    (
        Artifact("org.apache.hadoop", "hadoop-aws", HADOOP_VERSION,
                 exclusions=(("software.amazon.awssdk", "bundle"), ("org.wildfly.openssl", "*"),
                             *_SHIPPED_BY_SPARK_SDK)),
        *(Artifact("software.amazon.awssdk", name, AWS_SDK_VERSION, exclusions=_SHIPPED_BY_SPARK_SDK)
          for name in ("s3", "s3-transfer-manager", "sts")),
        Artifact("org.apache.spark", "spark-hadoop-cloud_2.13", SPARK_HADOOP_CLOUD_VERSION, exclusions=(("*", "*"),)),
    ),
)

BUNDLES = {b.name: b for b in (KAFKA_BROKER, SPARK_KAFKA, SPARK_S3)}


def _pom(bundle: JarBundle) -> str:
    deps = "".join(a.pom_xml() for a in bundle.artifacts)
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        f"<groupId>statectl.adapters.local.jars</groupId><artifactId>{bundle.name}</artifactId><version>1</version>"
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


def ensure_bundle(bundle: JarBundle, timeout: float = 900.0) -> list[Path]:
    """Return the bundle's jars, resolving them with Maven on first use."""
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
    staging = Path(tempfile.mkdtemp(prefix=f".{bundle.name}-", dir=bundle.directory.parent))
    try:
        (staging / "pom.xml").write_text(_pom(bundle))
        settings = resources.files("statectl.resources").joinpath("maven/settings.xml")
        with resources.as_file(settings) as settings_path:
            cmd = [
                mvn, "-B", "-q", "-s", str(settings_path), "-f", str(staging / "pom.xml"),
                "dependency:copy-dependencies", "-DincludeScope=runtime",
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
            raise JarResolutionError(
                f"could not resolve the {bundle.name} jars from Maven Central: {detail[:400]}"
            )
        jar_dir = staging / "jars"
        names = sorted(p.name for p in jar_dir.glob("*.jar"))
        if not names:
            raise JarResolutionError(f"Maven resolved no jars for {bundle.name}")
        (jar_dir / "manifest.json").write_text(
            json.dumps({"bundle": bundle.name, "version": bundle.version, "jars": names}, indent=1)
        )
        if bundle.directory.exists():
            shutil.rmtree(bundle.directory)
        os.replace(jar_dir, bundle.directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    jars = cached_jars(bundle)
    assert jars is not None
    return jars


def pyspark_jars_dir() -> Path:
    """The jars PySpark ships (``pyspark/jars``): Spark itself, which no bundle repeats."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise OperationalError("PySpark is not installed; run scripts/setup.sh")
    return Path(list(spec.submodule_search_locations)[0]) / "jars"


def artifact_base(jar_name: str) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients`` (the name without its version)."""
    stem = jar_name[:-4] if jar_name.endswith(".jar") else jar_name
    parts = stem.split("-")
    for i, part in enumerate(parts):
        if i > 0 and part[:1].isdigit():
            return "-".join(parts[:i])
    return stem
