"""The chapter-4 video game leaderboard on Spark Structured Streaming.

Topology (one query, one source per topic, one RocksDB-backed stateful operator):

    score-events ─┐                                  ┌─▶ high-scores
    players ──────┼─ parse ─▶ Leaderboard (keyed by ─┤
    products ─────┘           game bucket)           └─▶ leaderboard-dlq

``Leaderboard`` is keyed by game bucket (``GAME_BUCKET_KEYS[product_id mod 8]``): a bucket
receives its games' scores and products-table rows, and every players-table row. Each bucket holds, in
map states, a replica of the ``players`` table (latest name per player id; a null value
deletes) and its games' names, both in pages of 256 ids (``PagedTable``), and each of its games'
top-N list. It enriches each score with the
player and the game as known when the score is processed; the others become dead letters
(``unknown_player``, else ``unknown_product``). Then it merges the joined scores into their
games' top lists and writes each game whose list changed to ``high-scores`` (once per game per
micro-batch: the list after the whole batch).

One operator, not a join operator keyed by player and a ranking operator keyed by game: every
row that crosses into Python (Arrow, pandas) and back costs, and the ranking needs only a few
rows per game. The price is the players table held once per bucket (8 replicas), fine for a
table of players' names.

Ordering inside a micro-batch: Spark hands a key's rows to the processor together, so the rows
are put back in processing order first (per player for the players table, per game for the
products table) — by
Kafka timestamp, then table updates before scores at the same timestamp, then partition and
offset. "The player as known when the score is processed" therefore means: as of the score's
timestamp, counting table updates with the same timestamp. Across micro-batches, batch order is
processing order.

Rows that cannot be processed (malformed JSON, missing or mistyped fields, non-finite scores,
oversized or null values, bad table keys) are never dropped silently: they travel through the
operator as ``dlq`` rows (grouped under the reserved key -1, which holds no state) and are
written to the dead-letter topic with their reason. Ids are non-negative integers.

The processor lives in ``jobs/leaderboard_operators.py`` and its batch logic (numpy, pandas) in
``jobs/leaderboard_frames.py``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.common import INT_PATTERN, NON_FINITE, OUTPUT_SCHEMA, JobPlan, kafka_source
from jobs.leaderboard_operators import GAME_BUCKET_KEYS, PASS_THROUGH, Leaderboard
from statectl.adapters.kafka import TopicSpec
from statectl.config import LeaderboardConfig

REASONS = [
    "null_value", "oversized", "malformed_json", "missing_field", "mistyped_field", "non_finite_score",
    "invalid_key", "malformed_player", "malformed_product", "unknown_player", "unknown_product",
]

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


# ---------------------------------------------------------------- the job
def check_checkpoint(layout) -> str | None:
    """Refuse a checkpoint written by an earlier statectl, whose leaderboard kept its state in
    another layout: 0.1 kept one key per player (a ``player`` value state), 0.2 a join operator
    keyed by player bucket and a ranking operator (a ``top`` list state), 0.3 one map-state
    entry per player and per game (``players``, ``games``). Spark would accept any of them and
    this version would start with empty tables, dead-lettering the scores of every known player
    (and with empty top lists, for 0.1 and 0.2)."""
    variables = {(v.name, v.type) for op in layout.operators.values() for v in op.state_variables}
    # Checked newest layout last: 0.2's join operator had a ``players`` map state too.
    if ("player", "ValueState") in variables:
        written_by = "0.1, which kept the players table one key per player"
    elif ("top", "ListState") in variables:
        written_by = "0.2, which kept the players table and the top lists in two operators"
    elif ("players", "MapState") in variables:
        written_by = "0.3, which kept the players and games tables one state entry per id"
    else:
        return None
    return (f"checkpoint {layout.root} was written by statectl {written_by}; this version keeps its state "
            "in one operator keyed by game bucket, the tables in pages of 256 ids, and cannot continue it. "
            "Start a new checkpoint (--checkpoint-dir, or delete this one): the topics are read again "
            "from the beginning")


TABLE_TOPIC_CONFIGS = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1", "segment.ms": "600000"}


def with_bucket(rows: DataFrame, every_bucket: bool = False) -> DataFrame:
    """The operator's grouping column: a score's or products-table row's game bucket (its key
    in ``GAME_BUCKET_KEYS``), dead letters the pass-through key. With ``every_bucket`` (the
    players source), a players-table row goes to every bucket: each holds a replica of the table."""
    keys = F.array(*[F.lit(k) for k in GAME_BUCKET_KEYS])
    if every_bucket:
        buckets = F.when(F.col("kind").isin("player", "player_delete"), keys).otherwise(F.array(F.lit(PASS_THROUGH)))
        return rows.withColumn("bucket", F.explode(buckets.cast("array<bigint>")))
    bucket = F.element_at(keys, F.pmod(F.col("product_id"), F.lit(len(GAME_BUCKET_KEYS))).cast("int") + 1)
    return rows.withColumn("bucket", F.when(F.col("product_id") >= 0, bucket).otherwise(F.lit(PASS_THROUGH))
                           .cast("bigint"))


def bucketed_rows(spark, config: LeaderboardConfig, bootstrap: str) -> DataFrame:
    """The operator's input: the three topics read, parsed, and given their ``bucket``."""
    t = config.topics
    k = config.kafka
    # Separate sources so that max_offsets_per_trigger throttles only the score events: table
    # updates produced before a score always arrive in the same or an earlier micro-batch, which
    # keeps the result independent of how the input was cut into batches (restarts included).
    scores = kafka_source(spark, bootstrap, [t.score_events], k.starting_offsets, k.max_offsets_per_trigger,
                          k.min_partitions)
    players, products = (kafka_source(spark, bootstrap, [name], k.starting_offsets) for name in (t.players, t.products))
    # Each source is parsed on its own so that only the players' rows pass through an explode.
    max_bytes = config.leaderboard.max_record_bytes
    return (with_bucket(_parse(scores, t, max_bytes))
            .unionByName(with_bucket(_parse(players, t, max_bytes), every_bucket=True))
            .unionByName(with_bucket(_parse(products, t, max_bytes))))


def build(spark, config: LeaderboardConfig, bootstrap: str) -> JobPlan:
    t = config.topics
    rows = bucketed_rows(spark, config, bootstrap)
    output = rows.groupBy("bucket").transformWithStateInPandas(
        statefulProcessor=Leaderboard(config.leaderboard.top_n, t.score_events, t.high_scores, t.dlq),
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
