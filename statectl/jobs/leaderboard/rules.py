"""The leaderboard's pure parts: ranking a game's top scores, and the materialised high-scores view.

Ranking rules (chapter 4's reference topology, made precise):
- best score first; among equal scores the one processed earlier ranks higher (earlier Kafka
  timestamp, then partition, then offset);
- a player may hold several places;
- the same (player, score) pair holds at most one place per game, so a score event delivered
  twice never takes two places. (A player who really does score exactly the same twice in a game
  is shown once: without an event id the two cannot be told apart from a duplicate.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ScoreEntry:
    player_id: int
    product_id: int
    player_name: str
    game_name: str
    score: float
    ts: int = 0
    partition: int = 0
    offset: int = 0

    def rank_key(self) -> tuple:
        return (-self.score, self.ts, self.partition, self.offset)

    def identity(self) -> tuple[int, float]:
        return (self.player_id, self.score)

    def to_json(self) -> dict:
        return {
            "playerId": self.player_id,
            "productId": self.product_id,
            "playerName": self.player_name,
            "gameName": self.game_name,
            "score": float(self.score),
        }


def merge_top(current: list[ScoreEntry], new: Iterable[ScoreEntry], top_n: int) -> list[ScoreEntry]:
    """The top ``top_n`` of ``current`` plus ``new``, best first, duplicates (same player and score) once.

    When a pair is seen twice, the earlier-processed entry is kept (it ranks higher anyway).
    """
    seen: dict[tuple[int, float], ScoreEntry] = {}
    for entry in list(current) + list(new):
        kept = seen.get(entry.identity())
        if kept is None or entry.rank_key() < kept.rank_key():
            seen[entry.identity()] = entry
    return sorted(seen.values(), key=ScoreEntry.rank_key)[:top_n]


def encode_top(entries: list[ScoreEntry]) -> str:
    return json.dumps([e.to_json() for e in entries])


def materialize(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[str, list[dict]]:
    """The high-scores view from the topic's records in offset order: latest value per key; a
    tombstone removes the game; unreadable values are skipped. Games in id order."""
    view: dict[str, list[dict]] = {}
    apply_records(view, records)
    return in_game_order(view)


def apply_records(view: dict[str, list[dict]], records: Iterable[tuple[bytes | None, bytes | None]]) -> None:
    """Apply more of the topic's records to ``view`` in place (see ``materialize``)."""
    for key, value in records:
        if key is None:
            continue
        k = key.decode("utf-8", errors="replace")
        if value is None:
            view.pop(k, None)
            continue
        try:
            entries = json.loads(value)
        except ValueError:
            continue
        if isinstance(entries, list):
            view[k] = entries


def in_game_order(view: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """``view`` with its games in numeric id order (shorter ids first, then text)."""
    return dict(sorted(view.items(), key=lambda kv: (len(kv[0]), kv[0])))
