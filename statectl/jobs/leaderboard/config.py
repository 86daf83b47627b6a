"""The leaderboard job's config: its topics and its ranking settings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from statectl.config.model import Section, Text
from statectl.config.sections import JobConfig


class LeaderboardTopics(Section):
    score_events: Text = "score-events"
    players: Text = "players"
    products: Text = "products"
    high_scores: Text = "high-scores"
    dlq: Text = "leaderboard-dlq"


class LeaderboardSettings(Section):
    top_n: int = Field(3, ge=1)
    max_record_bytes: int = Field(1_048_576, ge=64)
    #: ``bootstrap``: on a new checkpoint, the table records already in the topics count before any
    #: score (tables read from their beginning); ``as-of``: every score sees the tables as of its
    #: timestamp. Both join records that arrive later as of their time (docs/jobs/leaderboard.md).
    tables: Literal["bootstrap", "as-of"] = "bootstrap"
    #: ``buckets``: one operator keyed by game bucket (8 buckets, each with a replica of the
    #: players table). ``sharded``: an operator keyed by player shard (the players table held
    #: once) and one keyed by game shard (the top lists), 32 shards each, so the stateful stages
    #: use every state partition up to 32. Fixed for a checkpoint's life (docs/jobs/leaderboard.md).
    layout: Literal["buckets", "sharded"] = "buckets"


class LeaderboardConfig(JobConfig):
    topics: LeaderboardTopics = Field(default_factory=LeaderboardTopics)
    leaderboard: LeaderboardSettings = Field(default_factory=LeaderboardSettings)
