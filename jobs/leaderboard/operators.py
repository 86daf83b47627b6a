"""The leaderboard's stateful processor (see ``jobs/leaderboard/topology.py`` for the topology).

Kept apart from the topology and from the numpy/pandas batch logic (``jobs/leaderboard/frames.py``,
imported when the first rows arrive) because Spark imports this module in a fresh Python process
on the driver, once per operator and query start, only to learn the state variables from
``init``: importing pandas there would slow every query start.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterator

from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import ByteType, DoubleType, IntegerType, LongType, StringType, StructField, StructType

from statectl.adapters import spark_tws
from jobs.leaderboard.rules import ScoreEntry, encode_top, merge_top

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
        # A table row's name (null: deleted); a score's record key (null: none); a dead letter's
        # JSON (DEAD_LETTER_FIELDS); a bad score's raw record as JSON (key, value, bytes).
        StructField("text", StringType()),
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


class Leaderboard(StatefulProcessor):
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

    def __init__(self, top_n: int, score_topic: str, high_scores_topic: str, dlq_topic: str, max_record_bytes: int,
                 table_ends: dict | None = None):
        self.top_n = top_n
        self.score_topic = score_topic
        self.high_scores_topic = high_scores_topic
        self.dlq_topic = dlq_topic
        self.max_record_bytes = max_record_bytes
        self.table_ends = table_ends

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.player_pages = handle.getMapState("player_pages", PAGE_KEY, PAGE_STATE)
        self.game_pages = handle.getMapState("game_pages", PAGE_KEY, PAGE_STATE)
        self.top = handle.getMapState("top", GAME_KEY, TOP_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        import pandas as pd

        from jobs.leaderboard import frames as lf

        pdf = lf.one_frame(rows)
        if key[0] == PASS_THROUGH:  # the dead letters of parsing
            letters, reasons = lf.parse_dead_letters(lf.in_processing_order(pdf), self.score_topic,
                                                     self.max_record_bytes)
            yield pd.DataFrame({"topic": self.dlq_topic, "key": None, "value": letters, "reason": reasons})
            return
        if self.table_ends:
            early = lf.below_table_ends(pdf, self.table_ends)
            # Asked only when the batch holds such records: in a continuing run, only its first batch may.
            if len(early) and not (self.player_pages.exists() or self.game_pages.exists()):
                pdf = lf.known_from_the_start(pdf, early)
        players, games = PagedTable(self.player_pages), PagedTable(self.game_pages)
        joined, no_player, no_game, player_finals, game_finals = lf.join_scores(pdf, players.names, games.names,
                                                                                self.top_n)
        players.apply(player_finals)
        games.apply(game_finals)
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
            values += letters["text"].tolist()
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
