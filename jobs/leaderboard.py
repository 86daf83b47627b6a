"""The chapter-4 video game leaderboard on Spark Structured Streaming.

Topology (one query, one read of each topic, two RocksDB-backed stateful operators):

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
operators as ``dlq`` rows (grouped under a null key, which holds no state) and are written to
the dead-letter topic with their reason.
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

#: Every row between the operators has these columns; ``kind`` says what it is.
ROW_SCHEMA = StructType(
    [
        StructField("kind", StringType()),  # score | player | player_delete | product | product_delete | dlq
        StructField("player_id", LongType()),
        StructField("product_id", LongType()),
        StructField("score", DoubleType()),
        StructField("name", StringType()),  # the table row's name (player or game)
        StructField("player_name", StringType()),  # filled by PlayerJoin
        StructField("ts", LongType()),
        StructField("part", IntegerType()),
        StructField("off", LongType()),
        StructField("src", StringType()),
        StructField("rkey", StringType()),
        StructField("raw", StringType()),
        StructField("reason", StringType()),
        StructField("detail", StringType()),
    ]
)
COLUMNS = [f.name for f in ROW_SCHEMA.fields]

REASONS = [
    "null_value", "oversized", "malformed_json", "missing_field", "mistyped_field", "non_finite_score",
    "invalid_key", "malformed_player", "malformed_product", "unknown_player", "unknown_product",
]

TABLE_KINDS = {"player", "player_delete", "product", "product_delete"}
_DELETED = "\x00deleted"


# ---------------------------------------------------------------- parsing (Spark SQL, no Python)
def _parse(src: DataFrame, topics, max_bytes: int) -> DataFrame:
    """Kafka rows of all three topics -> ROW_SCHEMA rows, validated; bad ones become ``dlq`` rows."""
    topic = F.col("topic")
    small = F.length("value") <= max_bytes
    raw = F.when(small, F.col("value").cast("string"))
    is_score = topic == topics.score_events
    is_player = topic == topics.players
    table_kind = F.when(is_player, F.lit("player")).otherwise(F.lit("product"))

    sj = F.from_json(raw, "player_id STRING, product_id STRING, score STRING, _corrupt STRING",
                     {"columnNameOfCorruptRecord": "_corrupt"})
    tj = F.from_json(raw, "name STRING, _corrupt STRING", {"columnNameOfCorruptRecord": "_corrupt"})
    df = src.select(
        "topic", "partition", "offset",
        F.col("key").cast("string").alias("rkey"),
        F.col("value").isNull().alias("is_null"),
        small.alias("small"),
        F.unix_millis("timestamp").alias("ts"),
        F.when(small, raw).otherwise(F.substring(F.col("value").cast("string"), 1, 1024)).alias("raw"),
        F.when(is_score, sj).alias("s"),
        F.when(~is_score, tj).alias("t"),
    )
    s, t = F.col("s"), F.col("t")
    score_text = F.trim(s["score"])
    score_value = score_text.cast("double")
    missing = F.concat_ws(", ", *[F.when(s[c].isNull(), F.lit(c)) for c in ("player_id", "product_id", "score")])
    score_reason = (
        F.when(F.col("is_null"), "null_value")
        .when(~F.col("small"), "oversized")
        .when(s.isNull() | s["_corrupt"].isNotNull(), "malformed_json")
        .when(s["player_id"].isNull() | s["product_id"].isNull() | s["score"].isNull(), "missing_field")
        .when(~s["player_id"].rlike(INT_PATTERN) | ~s["product_id"].rlike(INT_PATTERN), "mistyped_field")
        .when(F.lower(score_text).isin(*NON_FINITE), "non_finite_score")
        .when(~score_text.rlike(NUMBER_PATTERN), "mistyped_field")
        .when(F.isnan(score_value) | (F.abs(score_value) == float("inf")), "non_finite_score")
    )
    score_detail = (
        F.when(score_reason == "missing_field", F.concat(F.lit("missing "), missing))
        .when(score_reason == "mistyped_field", F.lit("player_id and product_id must be integers, score a number"))
        .when(score_reason == "oversized", F.concat(F.lit("larger than "), F.lit(str(max_bytes)), F.lit(" bytes")))
    )
    key_ok = F.col("rkey").isNotNull() & F.col("rkey").rlike(INT_PATTERN)
    table_reason = (
        F.when(~key_ok, "invalid_key")
        .when(F.col("is_null"), F.lit(None))
        .when(~F.col("small"), "oversized")
        .when(t.isNull() | t["_corrupt"].isNotNull() | t["name"].isNull(), F.concat(F.lit("malformed_"), table_kind))
    )
    table_detail = (
        F.when(table_reason == "invalid_key", F.lit("a table key must be an integer id"))
        .when(table_reason.startswith("malformed_"), F.lit("expected a JSON object with a \"name\""))
    )
    reason = F.when(is_score, score_reason).otherwise(table_reason)
    kind = (
        F.when(reason.isNotNull(), "dlq")
        .when(is_score, "score")
        .when(F.col("is_null"), F.concat(table_kind, F.lit("_delete")))
        .otherwise(table_kind)
    )
    table_id = F.col("rkey").cast("long")
    return df.select(
        kind.alias("kind"),
        F.when(reason.isNull(), F.when(is_score, s["player_id"].cast("long")).when(is_player, table_id)).alias("player_id"),
        F.when(reason.isNull(), F.when(is_score, s["product_id"].cast("long")).when(~is_player, table_id)).alias("product_id"),
        F.when(is_score & reason.isNull(), score_value).alias("score"),
        F.when(~is_score, t["name"]).alias("name"),
        F.lit(None).cast("string").alias("player_name"),
        F.col("ts"),
        F.col("partition").alias("part"),
        F.col("offset").alias("off"),
        F.col("topic").alias("src"),
        F.col("rkey"),
        F.col("raw"),
        reason.alias("reason"),
        F.when(reason.isNotNull(), F.when(is_score, score_detail).otherwise(table_detail)).alias("detail"),
    )


# ---------------------------------------------------------------- pure pandas helpers
def in_processing_order(rows: Iterator[pd.DataFrame]) -> pd.DataFrame:
    """One key's rows of a micro-batch, in the order they are processed (see module docstring)."""
    pdf = pd.concat(list(rows), ignore_index=True)
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


def _is_null(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def dlq_json(row) -> str:
    return json.dumps(
        {
            "reason": row["reason"],
            "detail": row["detail"] if isinstance(row["detail"], str) else None,
            "sourceTopic": row["src"],
            "sourcePartition": int(row["part"]),
            "sourceOffset": int(row["off"]),
            "value": row["raw"] if isinstance(row["raw"], str) else None,
        }
    )


NAME_STATE = StructType([StructField("name", StringType())])
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
class PlayerJoin(StatefulProcessor):
    """Keyed by player id: the players table, and scores enriched with the player known then."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.player = handle.getValueState("player", NAME_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        pdf = in_processing_order(rows)
        if _is_null(key[0]):  # dead letters and product rows just pass through
            yield pdf[COLUMNS]
            return
        initial = self.player.get()[0] if self.player.exists() else None
        known, final = as_of_lookup(pdf, "player", "player_delete", initial)
        if final is None:
            if initial is not None:
                self.player.clear()
        elif final != initial:
            self.player.update((final,))
        scores = pdf["kind"] == "score"
        if not scores.any():
            return
        out = pdf[scores].copy()
        out["player_name"] = known[scores]
        unknown = out["player_name"].isna()
        out.loc[unknown, "kind"] = "dlq"
        out.loc[unknown, "reason"] = "unknown_player"
        out.loc[unknown, "detail"] = "no player with this id was known when the score was processed"
        yield out[COLUMNS]


class TopScores(StatefulProcessor):
    """Keyed by product id: the products table and the game's top-N list; emits changed lists."""

    def __init__(self, top_n: int, high_scores_topic: str, dlq_topic: str):
        self.top_n = top_n
        self.high_scores_topic = high_scores_topic
        self.dlq_topic = dlq_topic

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.game = handle.getValueState("game", NAME_STATE)
        self.top = handle.getListState("top", TOP_STATE)

    def _dead_letters(self, dlq: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "topic": self.dlq_topic,
                "key": dlq["rkey"].where(dlq["rkey"].notna(), None),
                "value": [dlq_json(r) for _, r in dlq.iterrows()],
                "reason": dlq["reason"],
            }
        )

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        pdf = in_processing_order(rows)
        if _is_null(key[0]):
            dlq = pdf[pdf["kind"] == "dlq"]
            if len(dlq):
                yield self._dead_letters(dlq)
            return
        product_id = int(key[0])
        initial = self.game.get()[0] if self.game.exists() else None
        known, final = as_of_lookup(pdf, "product", "product_delete", initial)
        if final is None:
            if initial is not None:
                self.game.clear()
        elif final != initial:
            self.game.update((final,))

        dlq = pdf[pdf["kind"] == "dlq"]
        scores = pdf[pdf["kind"] == "score"].assign(game_name=known[pdf["kind"] == "score"])
        unknown = scores["game_name"].isna()
        if unknown.any():
            lost = scores[unknown].assign(kind="dlq", reason="unknown_product",
                                          detail="no product with this id was known when the score was processed")
            dlq = pd.concat([dlq, lost[COLUMNS]], ignore_index=True)
        scores = scores[~unknown]
        if len(dlq):
            yield self._dead_letters(dlq)
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
            ScoreEntry(int(p), product_id, pn, gn, float(s), int(ts), int(pt), int(of))
            for p, pn, gn, s, ts, pt, of in zip(best["player_id"], best["player_name"], best["game_name"],
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
    src = kafka_source(spark, bootstrap, [t.score_events, t.players, t.products],
                       config.kafka.starting_offsets, config.kafka.max_offsets_per_trigger,
                       config.kafka.min_partitions)
    rows = _parse(src, t, config.leaderboard.max_record_bytes)
    enriched = rows.groupBy("player_id").transformWithStateInPandas(
        statefulProcessor=PlayerJoin(), outputStructType=ROW_SCHEMA, outputMode="Append", timeMode="None",
    )
    output = enriched.groupBy("product_id").transformWithStateInPandas(
        statefulProcessor=TopScores(config.leaderboard.top_n, t.high_scores, t.dlq),
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
