"""Resolve the JVM jars statectl needs from Maven Central, once, into a local cache.

Two bundles: the Apache Kafka broker runtime (KRaft) and Spark's Kafka connector. Resolution
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
# Maven Central has no spark-token-provider-kafka-0-10 after 4.0.0. The connector only calls
# KafkaConfigUpdater, KafkaTokenUtil and KafkaRedactionUtil from it, whose signatures are
# unchanged in 4.0.0 (checked with javap), so 4.0.0 stands in for the missing 4.2.0.
SPARK_TOKEN_PROVIDER_VERSION = "4.0.0"


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
    SPARK_KAFKA_VERSION,
    (
        Artifact(
            "org.apache.spark",
            "spark-sql-kafka-0-10_2.13",
            SPARK_KAFKA_VERSION,
            exclusions=(("org.apache.spark", "spark-token-provider-kafka-0-10_2.13"),),
        ),
        Artifact("org.apache.spark", "spark-token-provider-kafka-0-10_2.13", SPARK_TOKEN_PROVIDER_VERSION),
    ),
)

BUNDLES = {b.name: b for b in (KAFKA_BROKER, SPARK_KAFKA)}


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
