"""The leaderboard's stateful processor (see ``jobs/leaderboard.py`` for the topology).

Kept apart from the topology and from the numpy/pandas batch logic (``jobs/leaderboard_frames.py``,
imported when the first rows arrive) because Spark imports this module in a fresh Python process
on the driver, once per operator and query start, only to learn the state variables from
``init``: importing pandas there would cost a third of a second each time.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterator

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

from statectl.adapters import spark_tws
from statectl.leaderboard import ScoreEntry, encode_top, merge_top

if TYPE_CHECKING:
    import pandas as pd

# The Python workers import this module to unpickle the processors: install the vectorised
# transformWithStateInPandas input loader there before the first row arrives.
spark_tws.install()

#: Every row the operator receives has these columns; ``kind`` says what it is. Kept narrow on
#: purpose: every column crosses into Python (Arrow, pandas).
ROW_SCHEMA = StructType(
    [
        StructField("kind", StringType()),  # score | player | player_delete | product | product_delete | dlq
        StructField("player_id", LongType()),
        StructField("product_id", LongType()),
        StructField("score", DoubleType()),
        StructField("name", StringType()),  # a table row's name (player or game)
        StructField("ts", LongType()),
        StructField("part", IntegerType()),
        StructField("off", LongType()),
        StructField("dlq", StringType()),  # a dead letter's JSON (reason, detail, source, value)
    ]
)
COLUMNS = [f.name for f in ROW_SCHEMA.fields]
#: The grouping key of rows the operator only passes on (the dead letters of parsing).
#: Never null: PySpark 4.2 turns an int key column holding a null into floats, and a float key
#: reaches the JVM state server as the wrong key — every such group then shares one state slot.
PASS_THROUGH = -1
#: The operator's grouping: a game's bucket is ``GAME_BUCKET_KEYS[product_id mod 8]``. PySpark's
#: transformWithStateInPandas costs milliseconds per key and micro-batch (state-server calls, an
#: Arrow round trip per group), so one key per game would spend most of a batch on overhead; a
#: bucket handles its games' rows in one vectorised pass. Eight buckets spread hot games over
#: the shuffle partitions while the players table, replicated in every bucket, stays cheap; the
#: price is that at most 8 tasks (one per bucket) share the stateful stage, however many cores.
#: The keys are not 0..7: Spark hash-partitions the grouping key, and 0..7 would put five
#: buckets in one of two partitions and none in one of four. These put the same number of
#: buckets in each of 1, 2, 4 or 8 partitions (checked in tests against Spark's Murmur3).
#: Fixed for a checkpoint's life: they decide which state holds a game.
GAME_BUCKET_KEYS = (2, 9, 14, 3, 4, 0, 16, 13)
#: Stored names are read with one scan of the map state instead of one state-server call per id
#: when a batch asks about more than BULK_READ ids of a table that is at most SCAN_RATIO times
#: that many entries (a scan costs per entry, a call per id; see ``_stored``).
BULK_READ = 64
SCAN_RATIO = 16
#: Each table's size as last scanned, per (state variable, bucket), in this Python worker: only
#: steers the choice above, so a stale or missing figure costs time, never correctness.
_TABLE_SIZES: dict[tuple[str, int], int] = {}


NAME_STATE = StructType([StructField("name", StringType())])
PLAYER_KEY = StructType([StructField("player_id", LongType())])
GAME_KEY = StructType([StructField("product_id", LongType())])
#: A game's top list: JSON ``[[player_id, player_name, game_name, score, ts, partition, offset], ...]``.
TOP_STATE = StructType([StructField("entries", StringType())])


def _stored(state, ids: list[int], table_key: tuple[str, int]) -> dict[int, str | None]:
    """``{id: name or None}`` from a map state keyed by id.

    Many ids of a table not much larger: one scan of the whole map state. Otherwise (few ids,
    or a table far larger than the batch's share of it) one call per id. While a table's size is
    unknown, the scan stops once it has read SCAN_RATIO times as many entries as there are ids:
    the ids it has not met are then asked one by one, and the table is known to be large.
    """
    found: dict[int, str | None] = {}
    size = _TABLE_SIZES.get(table_key)
    if len(ids) > BULK_READ and (size is None or size <= SCAN_RATIO * len(ids)):
        limit = SCAN_RATIO * len(ids)
        table = {}
        for k, v in state.iterator():
            table[k[0]] = v[0]
            if len(table) > limit:
                break
        else:
            _TABLE_SIZES[table_key] = len(table)
            return {i: table.get(i) for i in ids}
        _TABLE_SIZES[table_key] = len(table)  # at least this large
        found = {i: table[i] for i in ids if i in table}
    for i in ids:
        if i not in found:
            stored = state.getValue((i,))
            found[i] = stored[0] if stored is not None else None
    return found


def _apply(state, finals) -> None:
    for i, name in finals:
        if name is None:
            state.removeKey((i,))
        else:
            state.updateValue((i,), (name,))


class Leaderboard(StatefulProcessor):
    """Keyed by game bucket (see ``GAME_BUCKET_KEYS``), three map states: a replica of the
    players table (player id -> name; every players-table row goes to every bucket), the
    bucket's games (product id -> name) and each of its games' top list.

    Enriches each score with the player and the game as known when it is processed, turns the
    others into dead letters (``unknown_player``, else ``unknown_product``), merges the joined
    scores into their games' top lists and emits each list that changed, once per batch.
    """

    def __init__(self, top_n: int, score_topic: str, high_scores_topic: str, dlq_topic: str):
        self.top_n = top_n
        self.score_topic = score_topic
        self.high_scores_topic = high_scores_topic
        self.dlq_topic = dlq_topic

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.players = handle.getMapState("players", PLAYER_KEY, NAME_STATE)
        self.games = handle.getMapState("games", GAME_KEY, NAME_STATE)
        self.top = handle.getMapState("top", GAME_KEY, TOP_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        import pandas as pd

        from jobs import leaderboard_frames as lf

        pdf = lf.one_frame(rows)[COLUMNS]
        if key[0] == PASS_THROUGH:  # the dead letters of parsing
            letters = lf.in_processing_order(pdf)["dlq"].tolist()
            yield pd.DataFrame({"topic": self.dlq_topic, "key": None, "value": letters,
                                "reason": [json.loads(x)["reason"] for x in letters]})
            return
        bucket = int(key[0])
        joined, no_player, no_game, player_finals, game_finals = lf.join_scores(
            pdf, lambda ids: _stored(self.players, ids, ("players", bucket)),
            lambda ids: _stored(self.games, ids, ("games", bucket)))
        _apply(self.players, player_finals)
        _apply(self.games, game_finals)
        topics, keys, values, reasons = [], [], [], []
        unknown = [lf.unjoined(no_player, "unknown_player",
                               "no player with this id was known when the score was processed", self.score_topic),
                   lf.unjoined(no_game, "unknown_product",
                               "no product with this id was known when the score was processed", self.score_topic)]
        unknown = [u for u in unknown if len(u)]
        if unknown:
            letters = lf.in_processing_order(pd.concat(unknown, ignore_index=True))
            topics += [self.dlq_topic] * len(letters)
            keys += [None] * len(letters)
            values += letters["dlq"].tolist()
            reasons += letters["reason"].tolist()
        for product_id, top in self._merge(lf.contenders(joined, self.top_n)):
            topics.append(self.high_scores_topic)
            keys.append(str(product_id))
            values.append(encode_top(top))
            reasons.append(None)
        if topics:
            yield pd.DataFrame({"topic": topics, "key": keys, "value": values, "reason": reasons})

    def _merge(self, contenders) -> list[tuple[int, list[ScoreEntry]]]:
        """Each game's new top list where this batch's contenders change it (and stores it)."""
        changed = []
        if not len(contenders):
            return changed
        columns = zip(contenders["product_id"].tolist(), contenders["player_id"].tolist(), contenders["name"].tolist(),
                      contenders["game_name"].tolist(), contenders["score"].tolist(), contenders["ts"].tolist(),
                      contenders["part"].tolist(), contenders["off"].tolist())
        by_game: dict[int, list[ScoreEntry]] = {}
        for g, p, pn, gn, sc, ts, pt, of in columns:
            by_game.setdefault(g, []).append(ScoreEntry(p, g, pn, gn, sc, ts, pt, of))
        for product_id, candidates in by_game.items():
            stored = self.top.getValue((product_id,))
            current = [ScoreEntry(p, product_id, pn, gn, sc, ts, pt, of)
                       for p, pn, gn, sc, ts, pt, of in (json.loads(stored[0]) if stored else [])]
            top = merge_top(current, candidates, self.top_n)
            if top != current:
                self.top.updateValue((product_id,), (json.dumps(
                    [[e.player_id, e.player_name, e.game_name, e.score, e.ts, e.partition, e.offset] for e in top]),))
                changed.append((product_id, top))
        return changed

    def close(self) -> None:
        pass
