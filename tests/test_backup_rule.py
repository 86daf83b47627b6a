"""The one rule for ``--backup-dir`` (statectl.maintenance.backup), checked through each command
that changes a checkpoint: reset, repartition-state and relocate-checkpoint.

Bad inputs tried: a backup directory inside the checkpoint, the checkpoint itself, one reached
through a symbolic link that points into the checkpoint, a non-empty directory, a file. Accepted:
a path that does not exist yet, an empty directory, ``~``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from statectl.errors import UsageError
from statectl.maintenance.backup import backup_dir_for, check_backup_dir, default_backup_dir
from statectl.maintenance.relocate import RelocateRequest, plan_relocation
from statectl.maintenance.repartition import RepartitionRequest, plan_repartition
from statectl.maintenance.reset_files import apply_plan
from tests.checkpoint_factory import build_checkpoint
from tests.test_checkpoint_moved import moved_tws
from tests.test_repartition_plan import tws
from tests.test_reset_plan import NOW_MS, leaderboard_like, plan_for, tree_bytes

NOW = datetime(2026, 11, 24, 13, 5, 9, tzinfo=timezone.utc)


def _bad_backup(kind: str, checkpoint: Path, tmp_path: Path) -> Path:
    if kind == "inside":
        return checkpoint / "state" / "bk"
    if kind == "the-checkpoint":
        return checkpoint
    if kind == "symlink-into":
        link = tmp_path / "link"
        link.symlink_to(checkpoint, target_is_directory=True)
        return link / "bk"
    if kind == "not-empty":
        (tmp_path / "full").mkdir()
        (tmp_path / "full" / "x").write_text("x")
        return tmp_path / "full"
    (tmp_path / "a-file").write_text("x")
    return tmp_path / "a-file"


BAD = {
    "inside": "is inside the checkpoint",
    "the-checkpoint": "is inside the checkpoint",
    "symlink-into": "is inside the checkpoint",
    "not-empty": "already exists and is not empty",
    "a-file": "already exists and is not empty",
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_the_rule_refuses(tmp_path, kind):
    checkpoint = tmp_path / "ckpt"
    (checkpoint / "state").mkdir(parents=True)
    with pytest.raises(UsageError, match=BAD[kind]):
        check_backup_dir(checkpoint, _bad_backup(kind, checkpoint, tmp_path))


def test_the_rule_accepts_a_new_path_an_empty_directory_and_a_home_path(tmp_path, monkeypatch):
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert backup_dir_for(checkpoint, tmp_path / "new" / "bk", "reset") == tmp_path / "new" / "bk"
    assert backup_dir_for(checkpoint, tmp_path / "empty", "reset") == tmp_path / "empty"
    assert backup_dir_for(checkpoint, Path("~/bk"), "reset") == tmp_path / "home" / "bk"
    assert backup_dir_for(checkpoint, None, "relocate", NOW) == tmp_path / "ckpt.relocate-20261124T130509Z"
    assert default_backup_dir(checkpoint, "reset", NOW) == tmp_path / "ckpt.reset-20261124T130509Z"


@pytest.mark.parametrize("kind", sorted(BAD))
def test_reset_follows_the_rule(tmp_path, kind):
    root = leaderboard_like(tmp_path / "ckpt", batches=4)
    before = tree_bytes(root)
    with pytest.raises(UsageError, match=BAD[kind]):
        apply_plan(plan_for(root, 1), _bad_backup(kind, root, tmp_path), NOW_MS)
    assert tree_bytes(root) == before


def test_reset_accepts_an_empty_backup_directory(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=4)
    (tmp_path / "empty").mkdir()
    plan = plan_for(root, 1)
    apply_plan(plan, tmp_path / "empty", NOW_MS)
    assert plan.applied and (tmp_path / "empty" / "manifest.json").is_file()


@pytest.mark.parametrize("kind", sorted(BAD))
def test_repartition_follows_the_rule(tmp_path, kind):
    checkpoint = tmp_path / "ckpt"
    build_checkpoint(checkpoint, operators=(tws(2),), batches=2)
    with pytest.raises(UsageError, match=BAD[kind]):
        plan_repartition(RepartitionRequest(checkpoint, 4, backup_dir=_bad_backup(kind, checkpoint, tmp_path)))


@pytest.mark.parametrize("kind", sorted(BAD))
def test_relocate_follows_the_rule(tmp_path, kind):
    _original, moved = moved_tws(tmp_path)
    with pytest.raises(UsageError, match=BAD[kind]):
        plan_relocation(RelocateRequest(moved, backup_dir=_bad_backup(kind, moved, tmp_path)))
