"""The Spark driver's class-data archive: which JVM options a driver gets, and the archive's key.

Bad inputs tried: the archive switched off; no java on PATH and no JAVA_HOME; an archive file
that is not there; a user's own spark.driver.extraJavaOptions (kept, after statectl's).
"""

from __future__ import annotations

import pytest

from statectl.adapters.local import jvm_archive
from statectl.adapters.local.jars import pyspark_jars_dir

JARS = pyspark_jars_dir()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(jvm_archive.ARCHIVE_ENV, raising=False)
    monkeypatch.delenv(jvm_archive.DUMP_ENV, raising=False)
    return tmp_path


def test_no_archive_made_yet_means_no_option(cache):
    assert jvm_archive.archive_path(JARS).parent == cache / "statectl" / "jvm"
    assert jvm_archive.driver_java_options(JARS) == ""


def test_an_archive_that_exists_is_used(cache):
    path = jvm_archive.archive_path(JARS)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"x")
    assert jvm_archive.driver_java_options(JARS) == f"-XX:SharedArchiveFile={path}"


def test_off_means_neither_used_nor_made(cache, monkeypatch):
    path = jvm_archive.archive_path(JARS)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"x")
    monkeypatch.setenv(jvm_archive.ARCHIVE_ENV, "off")
    assert jvm_archive.driver_java_options(JARS) == ""
    from statectl.errors import OperationalError

    with pytest.raises(OperationalError, match="off"):
        jvm_archive.build_archive(JARS)


def test_the_training_run_writes_where_it_is_told(cache, monkeypatch):
    monkeypatch.setenv(jvm_archive.DUMP_ENV, "/tmp/x.partial")
    assert jvm_archive.driver_java_options(JARS) == "-XX:ArchiveClassesAtExit=/tmp/x.partial"


def test_the_key_follows_the_jvm(cache, monkeypatch, tmp_path):
    first = jvm_archive.archive_key(JARS)
    assert first and first == jvm_archive.archive_key(JARS)
    other = tmp_path / "jdk" / "bin"
    other.mkdir(parents=True)
    (other / "java").write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(other.parent))
    assert jvm_archive.archive_key(JARS) not in (None, first)


def test_no_java_at_all(cache, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(cache / "nowhere"))
    assert jvm_archive.archive_key(JARS) is None and jvm_archive.driver_java_options(JARS) == ""
    from statectl.errors import OperationalError

    with pytest.raises(OperationalError, match="no java"):
        jvm_archive.build_archive(JARS)
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(cache))
    assert jvm_archive.archive_key(JARS) is None
