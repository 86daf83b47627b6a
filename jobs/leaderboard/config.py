"""The leaderboard job's config: its topics and its ranking settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from statectl.config.sections import JobConfig


@dataclass
class LeaderboardTopics:
    score_events: str = "score-events"
    players: str = "players"
    products: str = "products"
    high_scores: str = "high-scores"
    dlq: str = "leaderboard-dlq"


@dataclass
class LeaderboardSettings:
    top_n: int = 3
    max_record_bytes: int = 1_048_576

    def problems(self) -> list[tuple[str, str]]:
        out = []
        if self.top_n < 1:
            out.append(("top_n", "must be at least 1"))
        if self.max_record_bytes < 64:
            out.append(("max_record_bytes", "must be at least 64"))
        return out


@dataclass
class LeaderboardConfig(JobConfig):
    topics: LeaderboardTopics = field(default_factory=LeaderboardTopics)
    leaderboard: LeaderboardSettings = field(default_factory=LeaderboardSettings)
