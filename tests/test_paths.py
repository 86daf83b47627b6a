"""Paths as statectl shows them: relative below the working directory, absolute elsewhere."""

from __future__ import annotations

from pathlib import Path

from statectl.paths import display_path


def test_display_path_is_relative_below_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert display_path(tmp_path / ".statectl" / "kafka" / "broker.log") == ".statectl/kafka/broker.log"
    assert display_path(".statectl/checkpoints/leaderboard") == ".statectl/checkpoints/leaderboard"


def test_display_path_is_absolute_elsewhere(tmp_path, monkeypatch):
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    assert display_path(tmp_path / "there" / "x.log") == str(tmp_path / "there" / "x.log")


def _fake_jdk(root: Path, tools=("java", "keytool")) -> Path:
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    for tool in tools:
        (bin_dir / tool).write_text("#!/bin/sh\n")
        (bin_dir / tool).chmod(0o755)
    return bin_dir


def test_jdk_tools_come_from_java_home_first(tmp_path, monkeypatch):
    from statectl.paths import jdk_tool

    home = _fake_jdk(tmp_path / "jdk-home").parent
    other = _fake_jdk(tmp_path / "on-path")
    monkeypatch.setenv("JAVA_HOME", str(home))
    monkeypatch.setenv("PATH", str(other))
    assert jdk_tool("java") == home / "bin" / "java"
    assert jdk_tool("keytool") == home / "bin" / "keytool"
    (home / "bin" / "keytool").unlink()
    assert jdk_tool("keytool") is None  # not the one on PATH: another JDK than the java used


def test_jdk_tools_sit_beside_the_java_on_path(tmp_path, monkeypatch):
    """keytool is found in the JDK that java on PATH belongs to (through /usr/bin-style symlinks),
    before any other keytool on PATH: the same JDK for every tool."""
    from statectl.paths import jdk_tool

    jdk = _fake_jdk(tmp_path / "jdk")
    links = tmp_path / "usr-bin"
    links.mkdir()
    (links / "java").symlink_to(jdk / "java")
    stray = _fake_jdk(tmp_path / "stray", tools=("keytool",))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", f"{links}:{stray}")
    assert jdk_tool("java") == links / "java"
    assert jdk_tool("keytool") == jdk / "keytool"
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert jdk_tool("java") is None and jdk_tool("keytool") is None
