"""Paths as statectl shows them: relative below the working directory, absolute elsewhere."""

from __future__ import annotations

from statectl.paths import display_path


def test_display_path_is_relative_below_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert display_path(tmp_path / ".statectl" / "kafka" / "broker.log") == ".statectl/kafka/broker.log"
    assert display_path(".statectl/checkpoints/leaderboard") == ".statectl/checkpoints/leaderboard"


def test_display_path_is_absolute_elsewhere(tmp_path, monkeypatch):
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    assert display_path(tmp_path / "there" / "x.log") == str(tmp_path / "there" / "x.log")
