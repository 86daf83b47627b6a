"""Signs of a query statectl did not start (statectl.checkpoint.liveness), from file times alone;
and check-restart's scratch copy, which must never write into the checkpoint it links to."""

from __future__ import annotations

import os

from statectl.checkpoint.liveness import MIN_WINDOW_S, activity_window, checkpoint_live_sign, live_sign
from statectl.checkpoint.lock import CheckpointLock, lock_path
from statectl.observe.status import checkpoints_under
from statectl.run.check_restart import _log_trial_batch, scratch_copy

NOW = 1_000_000.0


def _every(seconds: float, batches: int, end: float = NOW) -> dict[int, float]:
    return {b: end - (batches - 1 - b) * seconds for b in range(batches)}


def test_a_batch_committed_within_a_few_intervals_is_a_sign():
    logged = _every(1.0, 10, NOW - 5)
    committed = {b: t + 0.5 for b, t in logged.items()}
    assert live_sign(logged, committed, NOW).what.startswith("batch 9 was committed")
    assert live_sign(logged, committed, NOW + MIN_WINDOW_S + 10) is None  # stopped a while ago
    assert activity_window(_every(600.0, 10)) == 1800.0  # rare batches: a longer window


def test_a_long_batch_in_flight_stays_a_sign_beyond_the_interval_window():
    logged = _every(2.0, 10, NOW - 600)
    committed = {b: t + 100.0 for b, t in list(logged.items())[:-1]}  # batches take 100 s; the last runs
    sign = live_sign(logged, committed, NOW - 600 + 250)
    assert sign is not None and "not committed yet" in sign.what and sign.window_s >= 300


def test_batches_written_before_statectl_released_the_lock_are_no_sign():
    logged = _every(1.0, 5, NOW - 3)
    committed = dict(logged)
    assert live_sign(logged, committed, NOW, released_at=NOW - 2) is None
    assert live_sign(logged, committed, NOW, released_at=NOW - 60) is not None


def test_a_killed_statectl_runs_lock_vouches_for_batches_up_to_its_last_touch(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    checkpoint = tmp_path / "ck"
    for log in ("offsets", "commits"):
        (checkpoint / log).mkdir(parents=True)
        (checkpoint / log / "0").write_text("v1\n{}\n")
    lock_path(checkpoint).write_text("999999")  # left by a killed run; nobody holds it
    assert checkpoint_live_sign(checkpoint) is None
    later = os.path.getmtime(lock_path(checkpoint)) + 30
    os.utime(checkpoint / "commits" / "0", (later, later))  # written after the killed run's last touch
    assert checkpoint_live_sign(checkpoint, now=later + 1) is not None
    with CheckpointLock(checkpoint) as lock:  # taking the stale lock over keeps what it vouched for
        assert lock.stale_since is not None
        assert checkpoint_live_sign(checkpoint, now=later + 1, stale_since=lock.stale_since) is not None
        assert checkpoint_live_sign(checkpoint, now=later + 1, stale_since=later + 1) is None


def test_status_dir_leaves_out_statectls_own_backups_and_scratch_copies(tmp_path):
    for name in (
        "clicks",
        "clicks.reset-20261127T080000Z/files",
        "clicks.backup-20261127T080000Z",
        ".clicks.check-restart-abc/checkpoint",
        "nested/orders",
    ):
        (tmp_path / name / "offsets").mkdir(parents=True)
    assert [p.relative_to(tmp_path).as_posix() for p in checkpoints_under(tmp_path)] == ["clicks", "nested/orders"]


def test_the_scratch_copy_never_writes_into_the_checkpoint(tmp_path):
    checkpoint = tmp_path / "ck"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / "3").write_text("v1\nbatch 3\n")
    (checkpoint / "offsets" / "4").write_text("v1\nbatch 4, logged, never committed\n")
    before = {p.name: p.read_text() for p in (checkpoint / "offsets").iterdir()}
    with scratch_copy(checkpoint) as copy:
        assert os.path.samefile(copy / "offsets" / "3", checkpoint / "offsets" / "3")  # linked, not copied
        assert _log_trial_batch(copy, 3) == 4  # an uncommitted batch is re-run as it was logged
        (copy / "offsets" / "4").unlink()
        assert _log_trial_batch(copy, 3) == 4
        assert (copy / "offsets" / "4").read_text() == "v1\nbatch 3\n"
    assert {p.name: p.read_text() for p in (checkpoint / "offsets").iterdir()} == before
    assert not list(tmp_path.glob(".ck.check-restart-*"))
