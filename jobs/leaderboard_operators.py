"""The leaderboard's two stateful processors (see ``jobs/leaderboard.py`` for the topology).

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

#: Every row between the operators has these columns; ``kind`` says what it is. Kept narrow on
#: purpose: every column crosses into Python and back (Arrow, pandas) at each operator.
ROW_SCHEMA = StructType(
    [
        StructField("kind", StringType()),  # score | player | player_delete | product | product_delete | dlq
        StructField("player_id", LongType()),
        StructField("product_id", LongType()),
        StructField("score", DoubleType()),
        StructField("name", StringType()),  # a table row's name (player or game); a score's player name
        StructField("ts", LongType()),
        StructField("part", IntegerType()),
        StructField("off", LongType()),
        StructField("dlq", StringType()),  # a dead letter's JSON (reason, detail, source, value)
    ]
)
COLUMNS = [f.name for f in ROW_SCHEMA.fields]
#: PlayerJoin's output: a joined score also carries its game's name.
JOINED_SCHEMA = StructType(ROW_SCHEMA.fields + [StructField("game_name", StringType())])
JOINED_COLUMNS = [f.name for f in JOINED_SCHEMA.fields]

#: The grouping key of rows an operator only passes on (dead letters, the other table's rows).
#: Never null: PySpark 4.2 turns an int key column holding a null into floats, and a float key
#: reaches the JVM state server as the wrong key — every such group then shares one state slot.
PASS_THROUGH = -1
#: PlayerJoin's grouping: a player's bucket is ``player_id mod PLAYER_BUCKETS``. PySpark's
#: transformWithStateInPandas costs milliseconds per key and micro-batch (state-server calls, an
#: Arrow round trip per group), so one key per player would spend most of a batch on overhead;
#: a bucket handles its players' rows in one vectorised pass. Fixed for a checkpoint's life: it
#: decides which state holds a player.
PLAYER_BUCKETS = 32


NAME_STATE = StructType([StructField("name", StringType())])
PLAYER_KEY = StructType([StructField("player_id", LongType())])
GAME_KEY = StructType([StructField("product_id", LongType())])
TOP_STATE = StructType(
    [
        StructField("player_id", LongType()),
        StructField("player_name", StringType()),
        StructField("game_name", StringType()),
        StructField("score", DoubleType()),
        StructField("ts", LongType()),
        StructField("part", IntegerType()),
        StructField("off", LongType()),
    ]
)


def _stored(state, ids: list[int]) -> dict[int, str | None]:
    """``{id: name or None}`` from a map state keyed by id."""
    found = {}
    for i in ids:
        stored = state.getValue((i,))
        found[i] = stored[0] if stored is not None else None
    return found


def _apply(state, finals) -> None:
    for i, name in finals:
        if name is None:
            state.removeKey((i,))
        else:
            state.updateValue((i,), (name,))


class PlayerJoin(StatefulProcessor):
    """Keyed by player bucket (``player_id mod PLAYER_BUCKETS``): the bucket's players (map state
    player id -> name) and a replica of the products table (map state product id -> name; every
    bucket receives every products-table row). Enriches each score with the player and the game
    as known when it is processed, turns the others into dead letters (``unknown_player``, else
    ``unknown_product``), and passes on only a player's best ``top_n`` scores per game (see
    ``leaderboard_frames.best_per_game``) — after the joins, so no dead letter is thinned out.
    """

    def __init__(self, top_n: int, score_topic: str):
        self.top_n = top_n
        self.score_topic = score_topic

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.players = handle.getMapState("players", PLAYER_KEY, NAME_STATE)
        self.games = handle.getMapState("games", GAME_KEY, NAME_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        import pandas as pd

        from jobs import leaderboard_frames as lf

        pdf = lf.one_frame(rows)[COLUMNS]
        if key[0] == PASS_THROUGH:  # the dead letters of parsing
            yield pdf.assign(game_name=None)[JOINED_COLUMNS]
            return
        joined, no_player, no_game, player_finals, game_finals = lf.join_bucket(
            pdf, self.top_n, lambda ids: _stored(self.players, ids), lambda ids: _stored(self.games, ids))
        _apply(self.players, player_finals)
        _apply(self.games, game_finals)
        parts = [joined]
        if len(no_player):
            parts.append(lf.unjoined(no_player, "unknown_player",
                                     "no player with this id was known when the score was processed", self.score_topic))
        if len(no_game):
            parts.append(lf.unjoined(no_game, "unknown_product",
                                     "no product with this id was known when the score was processed", self.score_topic))
        out = pd.concat(parts, ignore_index=True) if len(parts) > 1 else joined
        if len(out):
            yield out.reindex(columns=JOINED_COLUMNS)


class TopScores(StatefulProcessor):
    """Keyed by product id: the game's top-N list; emits it when it changed, and forwards dead letters."""

    def __init__(self, top_n: int, high_scores_topic: str, dlq_topic: str):
        self.top_n = top_n
        self.high_scores_topic = high_scores_topic
        self.dlq_topic = dlq_topic

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.top = handle.getListState("top", TOP_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        import pandas as pd

        from jobs import leaderboard_frames as lf

        letters, best = lf.rank_game(lf.one_frame(rows), self.top_n)
        product_id = int(key[0])
        top = None if product_id == PASS_THROUGH else self._merge(product_id, best)
        if not letters and top is None:
            return
        topics = [self.dlq_topic] * len(letters)
        keys: list[str | None] = [None] * len(letters)
        values = list(letters)
        reasons = [json.loads(x)["reason"] for x in letters]
        if top is not None:
            topics.append(self.high_scores_topic)
            keys.append(str(product_id))
            values.append(encode_top(top))
            reasons.append(None)
        yield pd.DataFrame({"topic": topics, "key": keys, "value": values, "reason": reasons})

    def _merge(self, product_id: int, best) -> list[ScoreEntry] | None:
        """The game's new top list if this batch's best change it (and stores it), else None."""
        if not len(best):
            return None
        current = [
            ScoreEntry(int(r[0]), product_id, r[1], r[2], float(r[3]), int(r[4]), int(r[5]), int(r[6]))
            for r in self.top.get()
        ]
        candidates = [
            ScoreEntry(int(p), product_id, pn, gn, float(sc), int(ts), int(pt), int(of))
            for p, pn, gn, sc, ts, pt, of in zip(best["player_id"], best["name"], best["game_name"],
                                                 best["score"], best["ts"], best["part"], best["off"])
        ]
        top = merge_top(current, candidates, self.top_n)
        if top == current:
            return None
        self.top.put([(e.player_id, e.player_name, e.game_name, e.score, e.ts, e.partition, e.offset) for e in top])
        return top

    def close(self) -> None:
        pass
