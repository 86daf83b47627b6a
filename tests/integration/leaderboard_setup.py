"""A leaderboard of its own on the session broker, for the integration tests that run one and
watch it from outside (lag in seconds, the dashboard): fresh topics, the seed players and
products, the seed scores, and a config file naming them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import yaml

from statectl.config.loader import config_to_dict
from statectl.jobs.registry import load_job_config
from tests.conftest import REPO


@dataclass(frozen=True)
class SeededLeaderboard:
    topics: dict[str, str]
    checkpoint: Path
    config_file: Path


def seeded_leaderboard(cli, bootstrap: str, tmp_path: Path, prefix: str, overrides: list[str]) -> SeededLeaderboard:
    """Topics ``PREFIX-<uid>-*``, the seed data produced to them, and a config (local[2], 2
    shuffle partitions, plus ``overrides``) whose checkpoint is ``tmp_path/ckpt``."""
    prefix = f"{prefix}-{uuid.uuid4().hex[:8]}"
    topics = {k: f"{prefix}-{k}" for k in ("score_events", "players", "products", "high_scores", "dlq")}
    checkpoint = tmp_path / "ckpt"
    config = config_to_dict(
        load_job_config(
            REPO / "configs" / "leaderboard.yaml",
            [
                *(f"topics.{k}={v}" for k, v in topics.items()),
                "spark.master=local[2]",
                "spark.conf.spark.sql.shuffle.partitions=2",
                *overrides,
            ],
        )
    )
    config["checkpoint_dir"] = str(checkpoint)
    config_file = tmp_path / "leaderboard.yaml"
    config_file.write_text(yaml.safe_dump(config))
    for key, name in (("players", "players.json"), ("products", "products.json")):
        result = cli(
            "produce-test-data",
            "--file",
            str(REPO / "data" / name),
            "--topic",
            topics[key],
            "--parse-key",
            "--key-separator",
            "|",
            "--partitions",
            "1",
            "-b",
            bootstrap,
        )
        assert result.exit_code == 0, result.stderr
    result = cli(
        "produce-test-data",
        "--file",
        str(REPO / "data" / "score-events.json"),
        "--topic",
        topics["score_events"],
        "--partitions",
        "2",
        "-b",
        bootstrap,
    )
    assert result.exit_code == 0, result.stderr
    return SeededLeaderboard(topics, checkpoint, config_file)
