"""The leaderboard's topics as it declares them: what `statectl run leaderboard` creates when they
are missing, and what ``configs/topics.yaml`` lists. Pure (no Spark): the runner reads it before
Spark starts."""

from __future__ import annotations

from statectl.jobs.leaderboard.config import LeaderboardConfig
from statectl.topics.declared import DeclaredTopic

#: Tables (latest value per key, a null value deletes the key), compacted soon, so a job that reads
#: them from the beginning replays little more than the live keys. `statectl produce-test-data`
#: creates the players and products topics with these too.
TABLE_TOPIC_CONFIGS = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1", "segment.ms": "600000"}

#: How long dead letters are kept, pinned on the topic so a broker-wide change does not shorten it.
DLQ_RETENTION_MS = str(7 * 24 * 3600 * 1000)


def declared_topics(config: LeaderboardConfig) -> list[DeclaredTopic]:
    t = config.topics
    return [
        DeclaredTopic(
            t.score_events,
            4,
            key="topics.score_events",
            about="score events in: an unkeyed stream of {player_id, product_id, score}",
        ),
        DeclaredTopic(
            t.players,
            2,
            configs=dict(TABLE_TOPIC_CONFIGS),
            key="topics.players",
            about="the players table in (key: player id, value: {name}; a null value deletes)",
        ),
        DeclaredTopic(
            t.products,
            2,
            configs=dict(TABLE_TOPIC_CONFIGS),
            key="topics.products",
            about="the products (games) table in (key: product id, value: {name}; a null value deletes)",
        ),
        DeclaredTopic(
            t.high_scores,
            4,
            configs=dict(TABLE_TOPIC_CONFIGS),
            key="topics.high_scores",
            output=True,
            about="the top list per game out (key: product id); only a game's newest list matters",
        ),
        DeclaredTopic(
            t.dlq,
            1,
            configs={"retention.ms": DLQ_RETENTION_MS},
            key="topics.dlq",
            output=True,
            about="dead letters out: each rejected record with its reason",
        ),
    ]
