"""The Spark driver JVM's class-data archive: the classes a Spark session and a stateful query
load, parsed and verified once, then mapped from a file by every later driver JVM.

A Spark driver loads some 15,000 classes before its first micro-batch commits; loading them
was the largest fixed cost of a short run (docs/performance.md). Java's dynamic class-data
sharing (CDS) keeps them in an archive a JVM maps at start. The archive is made once by a
training run (``statectl jars archive``, which scripts/setup.sh --tests runs) and belongs to one JVM and
one PySpark install (its jars by path, size and time): its name carries a key of both, so
another Java, PySpark or virtualenv simply finds no archive and starts as before. A JVM that
cannot use an archive (its class path changed under it, say) ignores it and says so in the Spark
log; it never fails because of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from statectl.errors import OperationalError
from statectl.paths import jdk_tool

#: Set to ``off`` to start drivers without the archive (and make none).
ARCHIVE_ENV = "STATECTL_JVM_ARCHIVE"
#: Set for the training run's driver (statectl/adapters/local/jvm_archive_training.py): where the JVM
#: writes the archive as it exits.
DUMP_ENV = "STATECTL_JVM_ARCHIVE_DUMP"


def _java() -> Path | None:
    """The java spark-submit runs (bin/spark-class: ``$JAVA_HOME/bin/java``, else the one on PATH)."""
    found = jdk_tool("java")
    return found.resolve() if found else None


def archive_key(jars_dir: Path) -> str | None:
    """What the archive must match, as the JVM checks it: the JVM binary, and the class path's
    jars by path, size and modification time (``jars_dir``: PySpark's; a second checkout's
    virtualenv, or a reinstall, is another class path and gets its own archive)."""
    java = _java()
    if java is None:
        return None
    digest = hashlib.sha1()
    stat = java.stat()
    digest.update(f"{java}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    for jar in sorted(jars_dir.resolve().glob("*.jar")):
        stat = jar.stat()
        digest.update(f"{jar}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def archive_dir() -> Path:
    from statectl.paths import cache_root

    return cache_root() / "jvm"


def archive_path(jars_dir: Path) -> Path | None:
    """Where the archive for this JVM and the PySpark whose jars are in ``jars_dir`` is (or goes)."""
    key = archive_key(jars_dir)
    return archive_dir() / f"spark-driver-{key}.jsa" if key else None


def driver_java_options(jars_dir: Path) -> str:
    """The driver JVM's options for the archive: use it when it exists, write it in a training run."""
    if os.environ.get(ARCHIVE_ENV, "").lower() == "off":
        return ""
    dump = os.environ.get(DUMP_ENV)
    if dump:
        return f"-XX:ArchiveClassesAtExit={dump}"
    path = archive_path(jars_dir)
    return f"-XX:SharedArchiveFile={path}" if path and path.is_file() else ""


def build_archive(jars_dir: Path, timeout: float = 600.0, force: bool = False) -> tuple[Path, float, bool]:
    """Make the archive with a training run in a fresh process (unless it exists and not ``force``).

    Returns ``(path, seconds, built)``. The JVM writes the archive as it exits; it is written
    under a temporary name and renamed only once that JVM has exited, so a half-written
    archive is never taken for one.
    """
    if os.environ.get(ARCHIVE_ENV, "").lower() == "off":
        raise OperationalError(f"${ARCHIVE_ENV} is off: no archive is made or used")
    path = archive_path(jars_dir)
    if path is None:
        raise OperationalError("no java found (JAVA_HOME or PATH): install Java 17 or 21")
    if path.is_file() and not force:
        return path, 0.0, False
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="statectl-jvm-archive-") as work:
        log = Path(work) / "spark.log"
        env = {**os.environ, DUMP_ENV: str(partial), "STATECTL_SPARK_LOG": str(log)}
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "statectl.adapters.local.jvm_archive_training", work],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            partial.unlink(missing_ok=True)
            raise OperationalError(f"the JVM archive's training run took longer than {timeout:.0f} s") from exc
        if proc.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
            partial.unlink(missing_ok=True)
            why = (proc.stderr.strip().splitlines() or ["no archive written"])[-1]
            raise OperationalError(f"the JVM archive's training run failed: {why}")
    os.replace(partial, path)
    # Archives of a JVM or a PySpark install nobody started Spark with for a month (a JVM maps
    # its archive at every start, which keeps the access time of one in use fresh enough).
    month_ago = time.time() - 30 * 86400
    for old in path.parent.glob("spark-driver-*.jsa"):
        with contextlib.suppress(OSError):
            if old != path and max(old.stat().st_atime, old.stat().st_mtime) < month_ago:
                old.unlink()
    return path, time.monotonic() - started, True
