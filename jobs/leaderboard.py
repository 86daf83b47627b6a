"""The chapter-4 video game leaderboard on Spark Structured Streaming.

Topology (one query, one source per topic, two RocksDB-backed stateful operators):

    score-events ─┐                      ┌─ products (global table) ─┐
    players ──────┼─ parse ─▶ PlayerJoin ┼──────────────────────────▶ TopScores ─▶ high-scores
    products ─────┘  (keyed by player)   └─ dead letters ───────────▶ (keyed by   ─▶ leaderboard-dlq
                                                                         product)

- ``PlayerJoin`` holds the ``players`` table (latest name per player id; a null value deletes)
  and enriches each score with the player as known when the score is processed; scores of
  unknown players become dead letters (``unknown_player``).
- ``TopScores`` holds the ``products`` table and each game's top-N list; it enriches scores with
  the game name as known then (``unknown_product`` otherwise) and writes the game's new list to
  ``high-scores`` when it changed (once per game per micro-batch: the last list wins).

Ordering inside a micro-batch: Spark hands a key's rows to its processor together, so the rows
are put back in processing order first — by Kafka timestamp, then table updates before scores
at the same timestamp, then partition and offset. "The player as known when the score is
processed" therefore means: as of the score's timestamp, counting table updates with the same
timestamp. Across micro-batches, batch order is processing order.

Rows that cannot be processed (malformed JSON, missing or mistyped fields, non-finite scores,
oversized or null values, bad table keys) are never dropped silently: they travel through both
operators as ``dlq`` rows (grouped under the reserved key -1, which holds no state) and are
written to the dead-letter topic with their reason. Ids are non-negative integers.
"""

from __future__ import annotations

import json
from typing import Iterator

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

from jobs.common import INT_PATTERN, NON_FINITE, NUMBER_PATTERN, OUTPUT_SCHEMA, JobPlan, kafka_source
from statectl.adapters.kafka import TopicSpec
from statectl.config import LeaderboardConfig
from statectl.leaderboard import ScoreEntry, encode_top, merge_top

#: Every row between the operators has these columns; ``kind`` says what it is. Kept narrow on
#: purpose: PySpark 4.2's pandas state path converts rows one by one, so each column costs.
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

REASONS = [
    "null_value", "oversized", "malformed_json", "missing_field", "mistyped_field", "non_finite_score",
    "invalid_key", "malformed_player", "malformed_product", "unknown_player", "unknown_product",
]

TABLE_KINDS = {"player", "player_delete", "product", "product_delete"}

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
_DELETED = "\x00deleted"


# ---------------------------------------------------------------- parsing (Spark SQL, no Python)
def _parse(src: DataFrame, topics, max_bytes: int) -> DataFrame:
    """Kafka rows of all three topics -> ROW_SCHEMA rows, validated; bad ones become ``dlq`` rows.

    The common case costs one typed JSON parse. Only a score that fails it is parsed again as
    text to say why (missing field, mistyped field, non-finite score, malformed JSON).
    """
    topic = F.col("topic")
    small = F.length("value") <= max_bytes
    is_score = topic == topics.score_events
    is_player = topic == topics.players
    raw = F.when(small, F.col("value").cast("string"))
    typed = F.from_json(raw, "player_id LONG, product_id LONG, score DOUBLE")
    table = F.from_json(raw, "name STRING, _corrupt STRING", {"columnNameOfCorruptRecord": "_corrupt"})
    parsed = src.select(
        "topic", "partition", "offset",
        F.col("key").cast("string").alias("rkey"),
        F.col("value").isNull().alias("is_null"),
        small.alias("small"),
        F.unix_millis("timestamp").alias("ts"),
        F.when(small, raw).otherwise(F.substring(F.col("value").cast("string"), 1, 1024)).alias("raw"),
        is_score.alias("is_score"),
        is_player.alias("is_player"),
        F.when(is_score, typed).alias("s"),
        F.when(~is_score, table).alias("t"),
    )
    s, t = F.col("s"), F.col("t")
    score_ok = (
        (s["player_id"] >= 0) & (s["product_id"] >= 0) & s["score"].isNotNull()
        & ~F.isnan(s["score"]) & (F.abs(s["score"]) != float("inf"))
    )
    # Diagnostics for a score that failed the typed parse, on its text form.
    text = F.from_json(F.col("raw"), "player_id STRING, product_id STRING, score STRING, _corrupt STRING",
                       {"columnNameOfCorruptRecord": "_corrupt"})
    score_text = F.trim(text["score"])
    score_reason = (
        F.when(F.col("is_null"), "null_value")
        .when(~F.col("small"), "oversized")
        .when(score_ok, F.lit(None))
        .when(text.isNull() | text["_corrupt"].isNotNull(), "malformed_json")
        .when(text["player_id"].isNull() | text["product_id"].isNull() | text["score"].isNull(), "missing_field")
        .when(F.lower(score_text).isin(*NON_FINITE) | F.isnan(s["score"]) | (F.abs(s["score"]) == float("inf")),
              "non_finite_score")
        .otherwise("mistyped_field")
    )
    key_ok = F.col("rkey").isNotNull() & F.col("rkey").rlike(INT_PATTERN)
    table_kind = F.when(F.col("is_player"), F.lit("player")).otherwise(F.lit("product"))
    table_reason = (
        F.when(~key_ok, "invalid_key")
        .when(F.col("is_null"), F.lit(None))
        .when(~F.col("small"), "oversized")
        .when(t.isNull() | t["_corrupt"].isNotNull() | t["name"].isNull(), F.concat(F.lit("malformed_"), table_kind))
    )
    # Materialise the reason once; everything below reads the column.
    with_reason = parsed.select("*", F.when(F.col("is_score"), score_reason).otherwise(table_reason).alias("reason"))
    reason = F.col("reason")
    missing = F.concat_ws(", ", *[F.when(text[c].isNull(), F.lit(c)) for c in ("player_id", "product_id", "score")])
    detail = (
        F.when(reason == "missing_field", F.concat(F.lit("missing "), missing))
        .when(reason == "mistyped_field", F.lit("player_id and product_id must be non-negative JSON integers, score a JSON number"))
        .when(reason == "oversized", F.lit(f"larger than {max_bytes} bytes"))
        .when(reason == "invalid_key", F.lit("a table key must be a non-negative integer id"))
        .when(reason.startswith("malformed_") & ~F.col("is_score"), F.lit('expected a JSON object with a "name"'))
    )
    good = reason.isNull()
    is_score, is_player = F.col("is_score"), F.col("is_player")
    kind = (
        F.when(~good, "dlq")
        .when(is_score, "score")
        .when(F.col("is_null"), F.concat(table_kind, F.lit("_delete")))
        .otherwise(table_kind)
    )
    table_id = F.col("rkey").cast("long")
    dead_letter = F.to_json(F.struct(
        reason.alias("reason"), F.when(~good, detail).alias("detail"), F.col("topic").alias("sourceTopic"),
        F.col("partition").alias("sourcePartition"), F.col("offset").alias("sourceOffset"), F.col("rkey").alias("sourceKey"),
        F.col("raw").alias("value"),
    ))
    return with_reason.select(
        kind.alias("kind"),
        F.when(good & is_score, s["player_id"]).when(good & is_player, table_id)
        .otherwise(F.lit(PASS_THROUGH)).cast("long").alias("player_id"),
        F.when(good & is_score, s["product_id"]).when(good & ~is_player, table_id)
        .otherwise(F.lit(PASS_THROUGH)).cast("long").alias("product_id"),
        F.when(good & is_score, s["score"]).alias("score"),
        F.when(good & ~is_score, t["name"]).alias("name"),
        F.col("ts"),
        F.col("partition").alias("part"),
        F.col("offset").alias("off"),
        F.when(~good, dead_letter).alias("dlq"),
    )


# ---------------------------------------------------------------- pure pandas helpers
def in_processing_order(rows: Iterator[pd.DataFrame]) -> pd.DataFrame:
    """One key's rows of a micro-batch, in the order they are processed (see module docstring)."""
    pdf = _frames(rows)
    if len(pdf) > 1:
        prio = np.where(pdf["kind"].isin(TABLE_KINDS), 0, 1)
        pdf = pdf.assign(_prio=prio).sort_values(["ts", "_prio", "part", "off"], kind="stable")
        pdf = pdf.drop(columns="_prio").reset_index(drop=True)
    return pdf


def as_of_lookup(pdf: pd.DataFrame, upsert: str, delete: str, initial: str | None) -> tuple[pd.Series, str | None]:
    """For each row (in processing order), the table value known at that point; and the final value.

    ``initial`` is the value held in state before the batch (None: unknown or deleted).
    """
    kinds = pdf["kind"]
    is_upsert = kinds == upsert
    is_delete = kinds == delete
    if not (is_upsert.any() or is_delete.any()):
        known = pd.Series([initial] * len(pdf), index=pdf.index, dtype=object)
        return known, initial
    marks = pd.Series([None] * len(pdf), index=pdf.index, dtype=object)
    marks[is_upsert] = pdf.loc[is_upsert, "name"]
    marks[is_delete] = _DELETED
    known = marks.ffill()
    known = known.where(known.notna(), initial if initial is not None else _DELETED)
    final = known.iloc[-1]
    known = known.where(known != _DELETED, None)
    return known, (None if final == _DELETED else final)


def dead_letter(reason: str, detail: str, topic: str, row) -> str:
    """A dead letter's JSON for a valid score row that could not be joined (its text is rebuilt)."""
    score = float(row.score)
    value = {"score": int(score) if score.is_integer() else score, "product_id": int(row.product_id),
             "player_id": int(row.player_id)}
    return json.dumps({"reason": reason, "detail": detail, "sourceTopic": topic, "sourcePartition": int(row.part),
                       "sourceOffset": int(row.off), "sourceKey": None, "value": json.dumps(value)})


def best_per_game(scores: pd.DataFrame, top_n: int) -> pd.DataFrame:
    """The rows that can still matter: per player and game, the player's ``top_n`` best distinct scores.

    A player can hold at most ``top_n`` places in a game, so a score with ``top_n`` better (or
    equal and earlier) ones of the same player in the same game and batch can never be shown.
    Done with numpy over all the players of a bucket at once.
    """
    if len(scores) <= 1:
        return scores
    player = scores["player_id"].to_numpy()
    game = scores["product_id"].to_numpy()
    score = scores["score"].to_numpy()
    order = np.lexsort((scores["off"].to_numpy(), scores["part"].to_numpy(), scores["ts"].to_numpy(), -score,
                        game, player))
    p, g, sc = player[order], game[order], score[order]
    first = np.ones(len(order), dtype=bool)
    # The earliest of equal (player, game, score) rows.
    first[1:] = (p[1:] != p[:-1]) | (g[1:] != g[:-1]) | (sc[1:] != sc[:-1])
    order, p, g = order[first], p[first], g[first]
    index = np.arange(len(order))
    starts = np.r_[True, (p[1:] != p[:-1]) | (g[1:] != g[:-1])]
    rank = index - np.maximum.accumulate(np.where(starts, index, 0))
    return scores.iloc[order[rank < top_n]]


def join_players(pdf: pd.DataFrame, top_n: int, stored_names) -> tuple[pd.DataFrame, pd.DataFrame, list]:
    """One bucket's scores and player-table rows of a micro-batch, joined as of processing time.

    ``stored_names(ids)`` returns ``{id: name or None}`` as held in state before the batch; it is
    asked only about players with a score that no table row of the batch precedes. Returns the
    known scores that can still matter (``best_per_game``) with ``name`` set, the scores of
    players unknown at the time, and ``[(player_id, name or None)]``: each updated player's final
    table value (None: deleted).
    """
    n = len(pdf)
    kind = pdf["kind"].to_numpy(dtype=object)
    player = pdf["player_id"].to_numpy()
    is_delete = kind == "player_delete"
    is_table = (kind == "player") | is_delete
    order = np.lexsort((pdf["off"].to_numpy(), pdf["part"].to_numpy(), np.where(is_table, 0, 1),
                        pdf["ts"].to_numpy(), player))
    p, table, deleted = player[order], is_table[order], is_delete[order]
    names = pdf["name"].to_numpy(dtype=object)[order]
    index = np.arange(n)
    segment_start = np.maximum.accumulate(np.where(np.r_[True, p[1:] != p[:-1]], index, 0))
    last_table = np.maximum.accumulate(np.where(table, index, -1))
    after_table = last_table >= segment_start  # a table row of the same player precedes (or is) this row
    known = np.full(n, None, dtype=object)
    source = last_table[after_table]
    known[after_table] = np.where(deleted[source], None, names[source])

    is_score = kind[order] == "score"
    from_state = is_score & ~after_table
    if from_state.any():
        ids = np.unique(p[from_state])
        stored = stored_names(ids.tolist())
        values = np.array([stored.get(i) for i in ids.tolist()], dtype=object)
        known[from_state] = values[np.searchsorted(ids, p[from_state])]

    segment_end = np.r_[p[1:] != p[:-1], True] if n else np.zeros(0, dtype=bool)
    final_rows = last_table[segment_end]
    updated = final_rows >= segment_start[segment_end]
    final_rows = final_rows[updated]
    finals = list(zip(p[final_rows].tolist(), np.where(deleted[final_rows], None, names[final_rows]).tolist()))

    scores = pdf.iloc[order[is_score]].reset_index(drop=True)
    name = known[is_score]
    unknown = pd.isna(name)
    joined = scores[~unknown].assign(name=name[~unknown])
    return best_per_game(joined, top_n), scores[unknown], finals


def _frames(rows: Iterator[pd.DataFrame]) -> pd.DataFrame:
    """A key's frames as one frame, indexed from 0."""
    frames = list(rows)
    if len(frames) == 1:
        return frames[0].reset_index(drop=True)
    dtypes = [tuple(f.dtypes) for f in frames]
    if all(d == dtypes[0] for d in dtypes):
        # pd.concat checks every value of an all-null object column (name, dlq: null for every
        # score) in Python; joining the columns' arrays is two orders of magnitude faster.
        return pd.DataFrame({c: np.concatenate([f[c].to_numpy() for f in frames]) for c in frames[0].columns})
    return pd.concat(frames, ignore_index=True)


NAME_STATE = StructType([StructField("name", StringType())])
PLAYER_KEY = StructType([StructField("player_id", LongType())])
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


# ---------------------------------------------------------------- the operators
def stored_name(state) -> str | None:
    stored = state.get()  # None when the key has no value
    return stored[0] if stored is not None else None


def sync_table(state, pdf: pd.DataFrame, upsert: str, delete: str, initial: str | None) -> pd.Series:
    """Apply a batch's table updates (rows in processing order) to ``state``, which held
    ``initial``; returns the value known at each row."""
    known, final = as_of_lookup(pdf, upsert, delete, initial)
    if final is None:
        if initial is not None:
            state.clear()
    elif final != initial:
        state.update((final,))
    return known


def _unknown_player(scores: pd.DataFrame, score_topic: str) -> pd.DataFrame:
    letters = [dead_letter("unknown_player", "no player with this id was known when the score was processed",
                           score_topic, r) for r in scores.itertuples(index=False)]
    return scores.assign(kind="dlq", dlq=letters)


class PlayerJoin(StatefulProcessor):
    """Keyed by player bucket (``player_id mod PLAYER_BUCKETS``): the players table in a map state
    (player id -> name), and scores enriched with the player known then.

    Passes on only a player's best ``top_n`` scores per game (see ``best_per_game``).
    """

    def __init__(self, top_n: int, score_topic: str):
        self.top_n = top_n
        self.score_topic = score_topic

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.players = handle.getMapState("players", PLAYER_KEY, NAME_STATE)

    def _stored_names(self, ids: list[int]) -> dict[int, str | None]:
        found = {}
        for player_id in ids:
            stored = self.players.getValue((player_id,))
            found[player_id] = stored[0] if stored is not None else None
        return found

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        pdf = _frames(rows)[COLUMNS]
        if key[0] == PASS_THROUGH:  # dead letters and product rows
            yield pdf
            return
        joined, unknown, finals = join_players(pdf, self.top_n, self._stored_names)
        for player_id, name in finals:
            if name is None:
                self.players.removeKey((player_id,))
            else:
                self.players.updateValue((player_id,), (name,))
        if len(unknown):
            joined = pd.concat([joined, _unknown_player(unknown, self.score_topic)], ignore_index=True)
        if len(joined):
            yield joined[COLUMNS]


class TopScores(StatefulProcessor):
    """Keyed by product id: the products table and the game's top-N list; emits changed lists."""

    def __init__(self, top_n: int, high_scores_topic: str, dlq_topic: str, score_topic: str):
        self.top_n = top_n
        self.high_scores_topic = high_scores_topic
        self.dlq_topic = dlq_topic
        self.score_topic = score_topic

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.game = handle.getValueState("game", NAME_STATE)
        self.top = handle.getListState("top", TOP_STATE)

    def _dead_letters(self, letters: list[str]) -> pd.DataFrame:
        return pd.DataFrame({"topic": self.dlq_topic, "key": None, "value": letters,
                             "reason": [json.loads(x)["reason"] for x in letters]})

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        pdf = in_processing_order(rows)
        letters = list(pdf.loc[pdf["kind"] == "dlq", "dlq"])
        if key[0] == PASS_THROUGH:
            if letters:
                yield self._dead_letters(letters)
            return
        product_id = int(key[0])
        known = sync_table(self.game, pdf, "product", "product_delete", stored_name(self.game))

        is_score = pdf["kind"] == "score"
        scores = pdf[is_score].assign(game_name=known[is_score])
        unknown = scores["game_name"].isna()
        letters += [dead_letter("unknown_product", "no product with this id was known when the score was processed",
                                self.score_topic, r)
                    for r in scores[unknown].itertuples(index=False)]
        if letters:
            yield self._dead_letters(letters)
        scores = scores[~unknown]
        if not len(scores):
            return
        # Only the best few of this batch can enter the list: rank and dedupe them in pandas first.
        best = (
            scores.assign(_neg=-scores["score"])
            .sort_values(["_neg", "ts", "part", "off"], kind="stable")
            .drop_duplicates(["player_id", "score"])
            .head(self.top_n)
        )
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
            return
        self.top.put([(e.player_id, e.player_name, e.game_name, e.score, e.ts, e.partition, e.offset) for e in top])
        yield pd.DataFrame(
            {"topic": [self.high_scores_topic], "key": [str(product_id)], "value": [encode_top(top)], "reason": [None]}
        )

    def close(self) -> None:
        pass


# ---------------------------------------------------------------- the job
TABLE_TOPIC_CONFIGS = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1", "segment.ms": "600000"}


def build(spark, config: LeaderboardConfig, bootstrap: str) -> JobPlan:
    t = config.topics
    k = config.kafka
    # Separate sources so that max_offsets_per_trigger throttles only the score events: table
    # updates produced before a score always arrive in the same or an earlier micro-batch, which
    # keeps the result independent of how the input was cut into batches (restarts included).
    scores = kafka_source(spark, bootstrap, [t.score_events], k.starting_offsets, k.max_offsets_per_trigger,
                          k.min_partitions)
    tables = [kafka_source(spark, bootstrap, [name], k.starting_offsets) for name in (t.players, t.products)]
    src = scores.unionByName(tables[0]).unionByName(tables[1])
    rows = _parse(src, t, config.leaderboard.max_record_bytes)
    bucket = F.when(F.col("player_id") >= 0, F.pmod(F.col("player_id"), F.lit(PLAYER_BUCKETS))).otherwise(
        F.lit(PASS_THROUGH)).cast("long")
    enriched = rows.withColumn("bucket", bucket).groupBy("bucket").transformWithStateInPandas(
        statefulProcessor=PlayerJoin(config.leaderboard.top_n, t.score_events), outputStructType=ROW_SCHEMA, outputMode="Append", timeMode="None",
    )
    output = enriched.groupBy("product_id").transformWithStateInPandas(
        statefulProcessor=TopScores(config.leaderboard.top_n, t.high_scores, t.dlq, t.score_events),
        outputStructType=OUTPUT_SCHEMA, outputMode="Append", timeMode="None",
    )
    topics = [
        TopicSpec(t.score_events, 4),
        TopicSpec(t.players, 2, configs=dict(TABLE_TOPIC_CONFIGS)),
        TopicSpec(t.products, 2, configs=dict(TABLE_TOPIC_CONFIGS)),
        TopicSpec(t.high_scores, 4, configs=dict(TABLE_TOPIC_CONFIGS)),
        TopicSpec(t.dlq, 1, configs={"retention.ms": str(7 * 24 * 3600 * 1000)}),
    ]
    return JobPlan(output=output, topics=topics, reasons=REASONS, output_topics=[t.high_scores, t.dlq],
                   description=f"top {config.leaderboard.top_n} scores per game -> {t.high_scores}")
