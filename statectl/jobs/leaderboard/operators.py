"""The leaderboard's stateful processor (see ``statectl/jobs/leaderboard/topology.py`` for the topology).

Kept apart from the topology and from the numpy/pandas batch logic (``statectl/jobs/leaderboard/frames.py``,
imported when the first rows arrive) because Spark imports this module in a fresh Python process
on the driver, once per operator and query start, only to learn the state variables from
``init``: importing pandas there would slow every query start.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import (
    BinaryType,
    ByteType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from statectl.adapters.spark import tws as spark_tws
from statectl.jobs.leaderboard.rules import ScoreEntry, encode_top, merge_top

if TYPE_CHECKING:
    import pandas as pd

# The Python workers import this module to unpickle the processors: install the vectorised
# transformWithStateInPandas input loader there before the first row arrives.
spark_tws.install()

#: Every row the operator receives has these columns. Kept narrow on purpose, for the same reason.
ROW_SCHEMA = StructType(
    [
        StructField("kind", ByteType()),  # KIND_*
        StructField("player_id", LongType()),  # a score's player, a players-table row's key; else PASS_THROUGH
        StructField("product_id", LongType()),  # a score's game, a products-table row's key; else PASS_THROUGH
        StructField("score", DoubleType()),
        # A table row's name (null: deleted); a score's record key and headers as JSON (null:
        # neither); a dead letter's JSON (DEAD_LETTER_FIELDS).
        StructField("text", StringType()),
        # A score's value, the original bytes: what its dead letter keeps. Null for other rows.
        StructField("raw", BinaryType()),
        StructField("ts", LongType()),
        StructField("part", IntegerType()),
        StructField("off", LongType()),
    ]
)
COLUMNS = [f.name for f in ROW_SCHEMA.fields]
#: The grouping key of rows the operator only passes on (the dead letters of parsing).
#: Never null: PySpark 4.2 turns an int key column holding a null into floats, and a float key
#: reaches the JVM state server as the wrong key — every such group then shares one state slot.
PASS_THROUGH = -1
#: The operator's grouping: a game's bucket is ``GAME_BUCKET_KEYS[product_id mod 8]``. PySpark's
#: transformWithStateInPandas has a fixed cost per key and micro-batch (state-server calls, an
#: Arrow round trip per group), so one key per game would spend most of a batch on overhead; a
#: bucket handles its games' rows in one vectorised pass. Eight buckets spread hot games over
#: the shuffle partitions while the players table, replicated in every bucket, stays cheap; the
#: price is that at most 8 tasks (one per bucket) share the stateful stage, however many cores.
#: The keys are not 0..7: Spark hash-partitions the grouping key, and 0..7 would put five
#: buckets in one of two partitions and none in one of four. These put the same number of
#: buckets in each of 1, 2, 4 or 8 partitions (checked in tests against Spark's Murmur3).
#: Fixed for a checkpoint's life: they decide which state holds a game.
GAME_BUCKET_KEYS = (2, 9, 14, 3, 4, 0, 16, 13)
#: ``leaderboard.layout: sharded``: two operators instead of one. ``PlayerShard`` is keyed by
#: player shard, ``SHARD_KEYS[page mod 32]`` where a player's page is ``player_id >> PAGE_BITS``
#: (a page of the players table lives in one shard, so the table is held once, in pages), and
#: ``GameRanking`` by game shard, ``SHARD_KEYS[product_id mod 32]``. The 32 keys are chosen as
#: the game buckets are: Spark's hash puts exactly 32/P of them in each of P = 1, 2, 4, 8, 16 or
#: 32 shuffle partitions (and some in each of 3 or 6), so both stateful stages run P non-empty
#: tasks. Fixed for a checkpoint's life: they decide which state holds a player and a game.
SHARD_KEYS = (
    33,
    49,
    17,
    45,
    61,
    6,
    46,
    20,
    73,
    40,
    50,
    7,
    5,
    119,
    44,
    113,
    28,
    11,
    63,
    78,
    19,
    80,
    24,
    39,
    12,
    22,
    27,
    71,
    15,
    1,
    18,
    21,
)
#: The players and games tables are stored one page of ids per map-state entry: page
#: ``id >> PAGE_BITS`` holds the names of its 256 ids as JSON. A batch reads and writes each page
#: it touches once. One entry per id cost one state-server call per id read or written: loading
#: a million players into the eight replicas took 8 million calls; pages take about 63,000 (a
#: read and a write per page).
PAGE_BITS = 8
PAGE_KEY = StructType([StructField("page", LongType())])
#: A page: JSON ``{"<id>": name, ...}``.
PAGE_STATE = StructType([StructField("names", StringType())])
GAME_KEY = StructType([StructField("product_id", LongType())])
#: What ``PlayerShard`` hands ``GameRanking`` (sharded layout): ``slot`` is the game's shard key
#: (``PASS_THROUGH`` for a dead letter); a contender's player and game names, or a dead letter's
#: JSON in ``name`` and its reason in ``game_name``; the processing-order fields.
ROUTED_SCHEMA = StructType(
    [
        StructField("slot", LongType()),
        StructField("player_id", LongType()),
        StructField("product_id", LongType()),
        StructField("score", DoubleType()),
        StructField("name", StringType()),
        StructField("game_name", StringType()),
        StructField("ts", LongType()),
        StructField("part", IntegerType()),
        StructField("off", LongType()),
    ]
)
#: A game's top list: JSON ``[[player_id, player_name, game_name, score, ts, partition, offset], ...]``.
TOP_STATE = StructType([StructField("entries", StringType())])


class PagedTable:
    """One table (id -> name) in a map state of pages (see ``PAGE_BITS``), for one batch: each
    page is read at most once, and ``apply`` writes each page it changes once."""

    def __init__(self, state):
        self.state = state
        self.pages: dict[int, dict[int, str]] = {}

    def _page(self, page: int) -> dict[int, str]:
        if page not in self.pages:
            stored = self.state.getValue((page,))
            self.pages[page] = {int(k): v for k, v in json.loads(stored[0]).items()} if stored else {}
        return self.pages[page]

    def names(self, ids: list[int]) -> dict[int, str | None]:
        """``{id: name or None}``: as stored, or as ``apply`` left them."""
        return {i: self._page(i >> PAGE_BITS).get(i) for i in ids}

    def apply(self, finals) -> None:
        """Store the batch's last update of each id: ``[(id, name or None)]``, None deletes."""
        changed = set()
        for i, name in finals:
            page = self._page(i >> PAGE_BITS)
            if name is None:
                if page.pop(i, None) is None:
                    continue
            elif page.get(i) == name:
                continue
            else:
                page[i] = name
            changed.add(i >> PAGE_BITS)
        for page in sorted(changed):
            entries = self.pages[page]
            if entries:
                self.state.updateValue((page,), (json.dumps(entries, separators=(",", ":"), ensure_ascii=False),))
            else:  # its last id deleted (a page can only change to empty if it was stored)
                self.state.removeKey((page,))


class _TableJoin(StatefulProcessor):
    """What both layouts' joining operator does with a key's rows of a micro-batch: the tables'
    updates applied as of processing time (``PagedTable``), each score enriched with its player
    and game as known when it is processed, the others turned into dead letters
    (``unknown_player``, else ``unknown_product``), the tables' bootstrap (``table_ends``)."""

    def __init__(
        self,
        top_n: int,
        score_topic: str,
        high_scores_topic: str,
        dlq_topic: str,
        max_record_bytes: int,
        table_ends: dict | None = None,
    ):
        self.top_n = top_n
        self.score_topic = score_topic
        self.high_scores_topic = high_scores_topic
        self.dlq_topic = dlq_topic
        self.max_record_bytes = max_record_bytes
        self.table_ends = table_ends

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.player_pages = handle.getMapState("player_pages", PAGE_KEY, PAGE_STATE)
        self.game_pages = handle.getMapState("game_pages", PAGE_KEY, PAGE_STATE)

    def _join(self, pdf: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame | None]:
        """``(joined, letters)``: the joined scores that can rank (``lf.join_scores``) and the
        unjoined ones as dead letters in processing order (``text``, ``reason``), or None."""
        import pandas as pd

        from statectl.jobs.leaderboard import frames as lf

        if self.table_ends:
            early = lf.below_table_ends(pdf, self.table_ends)
            # Asked only when the batch holds such records: in a continuing run, only its first batch may.
            if len(early) and not (self.player_pages.exists() or self.game_pages.exists()):
                pdf = lf.known_from_the_start(pdf, early)
        players, games = PagedTable(self.player_pages), PagedTable(self.game_pages)
        joined, no_player, no_game, player_finals, game_finals = lf.join_scores(
            pdf, players.names, games.names, self.top_n
        )
        players.apply(player_finals)
        games.apply(game_finals)
        unknown = [
            lf.unjoined(
                no_player,
                "unknown_player",
                "no player with this id was known when the score was processed",
                self.score_topic,
            ),
            lf.unjoined(
                no_game,
                "unknown_product",
                "no product with this id was known when the score was processed",
                self.score_topic,
            ),
        ]
        unknown = [u for u in unknown if len(u)]
        letters = lf.in_processing_order(pd.concat(unknown, ignore_index=True)) if unknown else None
        return joined, letters

    def close(self) -> None:
        pass


def merge_contenders(top_state, contenders: pd.DataFrame, top_n: int) -> list[tuple[int, list[ScoreEntry]]]:
    """Each game's new top list where ``contenders`` (``lf.contenders``: ``product_id``,
    ``player_id``, ``name``, ``game_name``, ``score``, ``ts``, ``part``, ``off``) change it; stores
    it in ``top_state`` (product id -> the list's JSON)."""
    changed = []
    if not len(contenders):
        return changed
    columns = zip(
        contenders["product_id"].tolist(),
        contenders["player_id"].tolist(),
        contenders["name"].tolist(),
        contenders["game_name"].tolist(),
        contenders["score"].tolist(),
        contenders["ts"].tolist(),
        contenders["part"].tolist(),
        contenders["off"].tolist(),
    )
    by_game: dict[int, list[ScoreEntry]] = {}
    for g, p, pn, gn, sc, ts, pt, of in columns:
        by_game.setdefault(g, []).append(ScoreEntry(p, g, pn, gn, sc, ts, pt, of))
    for product_id, candidates in by_game.items():
        stored = top_state.getValue((product_id,))
        current = [
            ScoreEntry(p, product_id, pn, gn, sc, ts, pt, of)
            for p, pn, gn, sc, ts, pt, of in (json.loads(stored[0]) if stored else [])
        ]
        top = merge_top(current, candidates, top_n)
        if top != current:
            top_state.updateValue(
                (product_id,),
                (
                    json.dumps(
                        [[e.player_id, e.player_name, e.game_name, e.score, e.ts, e.partition, e.offset] for e in top]
                    ),
                ),
            )
            changed.append((product_id, top))
    return changed


class Leaderboard(_TableJoin):
    """Keyed by game bucket (see ``GAME_BUCKET_KEYS``), three map states: a replica of the
    players table (player id -> name; every players-table row goes to every bucket) and the
    bucket's games (product id -> name), both as pages of ids (``PagedTable``), and each of its
    games' top list.

    Enriches each score with the player and the game as known when it is processed, turns the
    others into dead letters (``unknown_player``, else ``unknown_product``), merges the joined
    scores into their games' top lists and emits each list that changed, once per batch.

    ``table_ends`` (``leaderboard.tables: bootstrap``): the table topics' end offsets when the run
    started, ``{"players": {partition: offset}, "products": {...}}``. A bucket that knows no
    table yet (a new checkpoint) applies the table records below them before any score of its
    batch, as a Kafka Streams global table is read to its end before processing starts. Once a
    bucket knows a table, its rows are processed as of their time, so a restart continues as an
    uninterrupted run would.
    """

    def init(self, handle: StatefulProcessorHandle) -> None:
        super().init(handle)
        self.top = handle.getMapState("top", GAME_KEY, TOP_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        import pandas as pd

        from statectl.jobs.leaderboard import frames as lf

        pdf = lf.one_frame(rows)
        if key[0] == PASS_THROUGH:  # the dead letters of parsing
            letters, reasons = lf.parse_dead_letters(
                lf.in_processing_order(pdf), self.score_topic, self.max_record_bytes
            )
            yield pd.DataFrame({"topic": self.dlq_topic, "key": None, "value": letters, "reason": reasons})
            return
        joined, letters = self._join(pdf)
        topics, keys, values, reasons = [], [], [], []
        if letters is not None:
            topics += [self.dlq_topic] * len(letters)
            keys += [None] * len(letters)
            values += letters["text"].tolist()
            reasons += letters["reason"].tolist()
        for product_id, top in merge_contenders(self.top, lf.contenders(joined, self.top_n), self.top_n):
            topics.append(self.high_scores_topic)
            keys.append(str(product_id))
            values.append(encode_top(top))
            reasons.append(None)
        if topics:
            yield pd.DataFrame({"topic": topics, "key": keys, "value": values, "reason": reasons})


class PlayerShard(_TableJoin):
    """The sharded layout's first operator, keyed by player shard (see ``SHARD_KEYS``): its
    shard's pages of the players table (each player in one shard: the table is held once) and a
    replica of the products table (every products-table row goes to every shard; a small table).

    Joins as ``Leaderboard`` does, then hands on (``ROUTED_SCHEMA``) only what the ranking needs:
    per game, the scores of this shard's batch that can enter its top list (``lf.contenders``: a
    player lives in one shard, so the union over shards holds every pair that can rank), keyed
    by the game's shard; and every dead letter, under ``PASS_THROUGH``. Emits nothing else."""

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        import numpy as np
        import pandas as pd

        from statectl.jobs.leaderboard import frames as lf

        pdf = lf.one_frame(rows)
        if key[0] == PASS_THROUGH:
            ordered = lf.in_processing_order(pdf)
            letters, reasons = lf.parse_dead_letters(ordered, self.score_topic, self.max_record_bytes)
            yield _routed_letters(letters, reasons, ordered)
            return
        joined, letters = self._join(pdf)
        if letters is not None:
            yield _routed_letters(letters["text"].tolist(), letters["reason"].tolist(), letters)
        contenders = lf.contenders(joined, self.top_n)
        if len(contenders):
            game = contenders["product_id"].to_numpy()
            yield pd.DataFrame(
                {
                    "slot": np.asarray(SHARD_KEYS, dtype=np.int64)[game % len(SHARD_KEYS)],
                    "player_id": contenders["player_id"].to_numpy(),
                    "product_id": game,
                    "score": contenders["score"].to_numpy(),
                    "name": contenders["name"].to_numpy(),
                    "game_name": contenders["game_name"].to_numpy(),
                    "ts": contenders["ts"].to_numpy(),
                    "part": contenders["part"].to_numpy().astype(np.int32),
                    "off": contenders["off"].to_numpy(),
                }
            )


def _routed_letters(letters: list[str], reasons: list[str], rows: pd.DataFrame) -> pd.DataFrame:
    """Dead letters as ``ROUTED_SCHEMA`` rows for ``GameRanking`` to write (letter JSON in
    ``name``, reason in ``game_name``; the source record's place kept for their order)."""
    import numpy as np
    import pandas as pd

    n = len(letters)
    return pd.DataFrame(
        {
            "slot": np.full(n, PASS_THROUGH, dtype=np.int64),
            "player_id": np.full(n, PASS_THROUGH, dtype=np.int64),
            "product_id": np.full(n, PASS_THROUGH, dtype=np.int64),
            "score": np.full(n, np.nan),
            "name": letters,
            "game_name": reasons,
            "ts": rows["ts"].to_numpy(),
            "part": rows["part"].to_numpy().astype(np.int32),
            "off": rows["off"].to_numpy(),
        }
    )


class GameRanking(StatefulProcessor):
    """The sharded layout's second operator, keyed by game shard (see ``SHARD_KEYS``): each of its
    games' top list. Merges the contenders every player shard sent for a game into its list and
    writes each list that changed, once per batch; writes the dead letters (``PASS_THROUGH``)
    in processing order."""

    def __init__(self, top_n: int, high_scores_topic: str, dlq_topic: str):
        self.top_n = top_n
        self.high_scores_topic = high_scores_topic
        self.dlq_topic = dlq_topic

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.top = handle.getMapState("top", GAME_KEY, TOP_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        import pandas as pd

        from statectl.jobs.leaderboard import frames as lf

        pdf = lf.one_frame(rows)
        if key[0] == PASS_THROUGH:
            letters = lf.in_processing_order(pdf)
            yield pd.DataFrame(
                {
                    "topic": self.dlq_topic,
                    "key": None,
                    "value": letters["name"].tolist(),
                    "reason": letters["game_name"].tolist(),
                }
            )
            return
        changed = merge_contenders(self.top, pdf, self.top_n)
        if changed:
            yield pd.DataFrame(
                {
                    "topic": self.high_scores_topic,
                    "key": [str(g) for g, _ in changed],
                    "value": [encode_top(top) for _, top in changed],
                    "reason": None,
                }
            )

    def close(self) -> None:
        pass
