"""Durations in the JSON statectl prints and writes are named ``*_seconds``. The ``*_s`` names they
had stay beside them, with the same value, in 0.6 only; files an older statectl wrote with them are
still read."""

from __future__ import annotations

import ast
import json
import os
import time
from pathlib import Path

import pytest

from statectl.adapters.local import engine
from statectl.checkpoint.liveness import LiveSign, heartbeat_sign
from statectl.checkpoint.lock import cache_record, write_heartbeat

REPO = Path(__file__).resolve().parent.parent


def test_a_live_signs_json_says_its_window_in_seconds():
    doc = LiveSign("batch 9 was committed", 100.0, 60.0).to_dict(now=130.0)
    assert (doc["seconds_ago"], doc["window_seconds"]) == (30.0, 60.0)
    assert doc["window_s"] == doc["window_seconds"]  # the alias, for one release


def test_the_engines_status_json_says_its_durations_in_seconds():
    status = engine.EngineStatus(running=True, data_dir="/d", session_timeout_seconds=60.0, uptime_seconds=12.5)
    doc = status.to_dict()
    assert (doc["session_timeout_seconds"], doc["uptime_seconds"], doc["ready_seconds"]) == (60.0, 12.5, None)
    assert (doc["session_timeout_s"], doc["uptime_s"]) == (60.0, 12.5)


@pytest.mark.parametrize("key", ["session_timeout_seconds", "session_timeout_s"], ids=["now", "older"])
def test_the_engines_state_file_is_read_with_either_name(tmp_path, monkeypatch, key):
    monkeypatch.setattr(engine, "_pid_is_engine", lambda pid, state_file=None: True)
    state = {"pid": os.getpid(), "port": 15002, "control_port": 15003, "started_at": time.time() - 5, key: 45.0}
    (tmp_path / "engine.json").write_text(json.dumps(state))
    status = engine.engine_status(tmp_path)
    assert status.session_timeout_seconds == 45.0 and status.uptime_seconds >= 5


def test_the_heartbeat_says_its_interval_in_seconds(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    write_heartbeat(tmp_path / "ck", "q1", 20.0)
    beat = json.loads(cache_record("heartbeats", tmp_path / "ck").read_text())
    assert (beat["interval_seconds"], beat["interval_s"]) == (20.0, 20.0)
    sign = heartbeat_sign(tmp_path / "ck", beat["at"] + 50)  # three missed beats of 20 s: 60 s
    assert sign is not None and sign.window_s == 60.0
    assert heartbeat_sign(tmp_path / "ck", beat["at"] + 61) is None


def test_a_heartbeat_an_older_statectl_wrote_keeps_its_interval(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    write_heartbeat(tmp_path / "ck", "q1", 20.0)
    record = cache_record("heartbeats", tmp_path / "ck")
    beat = json.loads(record.read_text())
    del beat["interval_seconds"]
    record.write_text(json.dumps(beat))
    sign = heartbeat_sign(tmp_path / "ck", beat["at"] + 50)  # not the default 10 s interval's 30 s
    assert sign is not None and sign.window_s == 60.0


def _seconds_keys_without_their_name(source: str) -> list[tuple[int, str]]:
    """(line, key) of each dict literal's key ``*_s`` with no ``*_seconds`` beside it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            found += [(node.lineno, k) for k in sorted(keys) if k.endswith("_s") and k[:-2] + "_seconds" not in keys]
    return found


def test_the_scan_finds_a_key_in_seconds_without_its_name():
    assert _seconds_keys_without_their_name('{"a_s": 1, "b_s": 2, "b_seconds": 2, "class": 3}') == [(1, "a_s")]


def test_a_json_key_in_seconds_ends_in_seconds():
    """A ``*_s`` key in a dict literal anywhere in statectl is only the alias of its ``*_seconds``."""
    found = [
        f"{path.relative_to(REPO)}:{line}: {key!r}"
        for path in sorted((REPO / "statectl").rglob("*.py"))
        for line, key in _seconds_keys_without_their_name(path.read_text())
    ]
    assert found == [], "name durations *_seconds in JSON:\n" + "\n".join(found)
