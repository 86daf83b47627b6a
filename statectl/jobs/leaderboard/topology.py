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
rows per game. The price is the players table held once per bucket (8 replicas), and at most 8
tasks in the stateful stage.

``leaderboard.layout: sharded`` pays for two operators without sending every row twice:
``PlayerShard``, keyed by player shard (``SHARD_KEYS``; a page of the players table lives in one
shard), holds the players table once and a replica of the products table, joins as the buckets
do, and hands on per game only the scores of its part of the batch that can still rank (plus the
dead letters); ``GameRanking``, keyed by game shard, merges them into the top lists. Both stages
use every state partition up to 32.

Ordering inside a micro-batch: Spark hands a key's rows to the processor together, so the rows
are put back in processing order first (per player for the players table, per game for the
products table) — by
Kafka timestamp, then table updates before scores at the same timestamp, then partition and
offset. "The player as known when the score is processed" therefore means: as of the score's
timestamp, counting table updates with the same timestamp. Across micro-batches, batch order is
processing order. With ``leaderboard.tables: bootstrap`` (the default) the table topics are read
from their beginning, and on a new checkpoint every table record that was in them when the run
started counts before the first score, whatever its timestamp (see ``Leaderboard``): a compacted
table keeps only each key's latest record, which is often newer than the scores that need it.

Rows that cannot be processed (malformed JSON, missing or mistyped fields, non-finite scores,
oversized or null values, bad table keys) are never dropped silently: they travel through the
operator under the reserved key -1, which holds no state, and are written to the dead-letter topic
with their reason. A bad table row arrives as its finished letter (kind ``KIND_DEAD_LETTER``, the
letter's JSON in ``text``); a score event Spark could not parse into valid ids and a finite score
arrives raw (kind ``KIND_BAD_SCORE``) and the operator says why, with a strict JSON parser. Ids
are non-negative integers.

Each row crosses into Python (Arrow, then pandas), so the operator's input is kept narrow: a
byte for what the row is, the ids, the score, one text column (a table row's name, a score's
key and headers, or a dead letter), a score's value bytes (a dead letter keeps the original
record) and the processing-order fields (see ``ROW_SCHEMA``).

The processor lives in ``statectl/jobs/leaderboard/operators.py`` and its batch logic (numpy, pandas) in
``statectl/jobs/leaderboard/frames.py``.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from statectl.jobs.common import INT_PATTERN, OUTPUT_SCHEMA, JobPlan, dlq_value, kafka_source
from statectl.jobs.leaderboard.config import LeaderboardConfig
from statectl.jobs.leaderboard.kinds import (
    KIND_BAD_SCORE,
    KIND_DEAD_LETTER,
    KIND_PLAYER,
    KIND_PLAYER_DELETE,
    KIND_PRODUCT,
    KIND_PRODUCT_DELETE,
    KIND_SCORE,
)
from statectl.jobs.leaderboard.operators import (
    COLUMNS,
    GAME_BUCKET_KEYS,
    PAGE_BITS,
    PASS_THROUGH,
    ROUTED_SCHEMA,
    SHARD_KEYS,
    GameRanking,
    Leaderboard,
    PlayerShard,
)

REASONS = [
    "null_value",
    "oversized",
    "malformed_json",
    "missing_field",
    "mistyped_field",
    "non_finite_score",
    "invalid_key",
    "malformed_player",
    "malformed_product",
    "unknown_player",
    "unknown_product",
]

# ---------------------------------------------------------------- parsing (Spark SQL, no Python)
SCORE_SCHEMA = "player_id LONG, product_id LONG, score DOUBLE"


def _keys(keys: tuple[int, ...]) -> Column:
    return F.array(*[F.lit(k) for k in keys]).cast("array<bigint>")


def _key_of(keys: tuple[int, ...], value: Column) -> Column:
    return F.element_at(_keys(keys), F.pmod(value, F.lit(len(keys))).cast("int") + 1)


def _game_bucket(product_id: Column) -> Column:
    """A game's bucket: its key in ``GAME_BUCKET_KEYS``, by product id."""
    return _key_of(GAME_BUCKET_KEYS, product_id)


class Routing:
    """Which key of the joining operator a row goes to, per layout (``leaderboard.layout``):
    ``buckets`` by game bucket, every players-table row to every bucket; ``sharded`` by the
    player's shard (its page of the players table), every products-table row to every shard."""

    def __init__(self, layout: str):
        self.sharded = layout == "sharded"

    def score(self, player_id: Column, product_id: Column) -> Column:
        if self.sharded:
            return _key_of(SHARD_KEYS, F.shiftright(player_id, PAGE_BITS))
        return _game_bucket(product_id)

    def replicates(self, table: str) -> bool:
        """Whether every row of ``table`` (``player`` or ``product``) goes to every key."""
        return table == ("product" if self.sharded else "player")

    def all_keys(self) -> Column:
        return _keys(SHARD_KEYS if self.sharded else GAME_BUCKET_KEYS)


def _record_meta() -> Column:
    """A score's key and headers for the dead letter it may become: JSON ``{"k": key, "h":
    headers}`` (bytes in base64, as Spark writes binary), or null, and free, for the usual
    record with neither. Its value travels as bytes beside it (``raw``)."""
    has_meta = F.col("key").isNotNull() | (F.size("headers") > 0)
    return F.when(has_meta, F.to_json(F.struct(F.col("key").alias("k"), F.col("headers").alias("h"))))


def _parse_scores(src: DataFrame, max_bytes: int, routing: Routing) -> DataFrame:
    """The score-events source -> ``ROW_SCHEMA`` rows (and ``bucket``); bad ones go on raw.

    A good score costs one typed JSON parse and a few comparisons: this runs once per event,
    and it is most of what the job does in Spark. A score that fails goes on as its raw record
    (kind ``KIND_BAD_SCORE``; ``text``: its key, value and size) and the operator says why
    (``leaderboard_frames.explain_bad_score``). Spark's ``from_json`` cannot be compiled into
    whole-stage generated code: a second, diagnostic parse here took this projection, which every
    event goes through, out of it, only to explain the few that fail. Every score carries its
    original record for the dead letter it may become: ``raw`` its value's bytes, ``text`` its
    key and headers (``_record_meta``).
    """
    small = F.length("value") <= max_bytes
    typed = src.select(
        "key",
        "value",
        "headers",
        "partition",
        "offset",
        F.unix_millis("timestamp").alias("ts"),
        F.from_json(F.when(small, F.col("value").cast("string")), SCORE_SCHEMA).alias("s"),
    )
    s = F.col("s")
    ok = F.coalesce(
        (s["player_id"] >= 0)
        & (s["product_id"] >= 0)
        & s["score"].isNotNull()
        & ~F.isnan(s["score"])
        & (F.abs(s["score"]) != float("inf")),
        F.lit(False),  # not parsed at all
    )
    return typed.select(
        F.when(ok, routing.score(s["player_id"], s["product_id"]))
        .otherwise(F.lit(PASS_THROUGH))
        .cast("bigint")
        .alias("bucket"),
        F.when(ok, F.lit(KIND_SCORE)).otherwise(F.lit(KIND_BAD_SCORE)).cast("byte").alias("kind"),
        F.when(ok, s["player_id"]).otherwise(F.lit(PASS_THROUGH)).cast("long").alias("player_id"),
        F.when(ok, s["product_id"]).otherwise(F.lit(PASS_THROUGH)).cast("long").alias("product_id"),
        F.when(ok, s["score"]).alias("score"),
        _record_meta().alias("text"),
        F.col("value").alias("raw"),
        "ts",
        F.col("partition").alias("part"),
        F.col("offset").alias("off"),
    )


def _parse_table(src: DataFrame, table: str, max_bytes: int, routing: Routing) -> DataFrame:
    """A table source (``table`` is ``player`` or ``product``) -> ``ROW_SCHEMA`` rows (and ``bucket``):
    an upsert, a delete (null value), or a dead letter (bad key, oversized or malformed value).
    A players-table row goes to every bucket (each holds a replica of the table), a
    products-table row to its game's."""
    small = F.length("value") <= max_bytes
    rkey = F.col("key").cast("string")
    parsed = src.select(
        "key",
        "value",
        "headers",
        "topic",
        "partition",
        "offset",
        "timestamp",
        F.unix_millis("timestamp").alias("ts"),
        F.from_json(
            F.when(small, F.col("value").cast("string")),
            "name STRING, _corrupt STRING",
            {"columnNameOfCorruptRecord": "_corrupt"},
        ).alias("t"),
    )
    t = F.col("t")
    is_null = F.col("value").isNull()
    reason = (
        F.when(rkey.isNull() | ~rkey.rlike(INT_PATTERN), "invalid_key")
        .when(is_null, F.lit(None))
        .when(~small, "oversized")
        .when(t.isNull() | t["_corrupt"].isNotNull() | t["name"].isNull(), f"malformed_{table}")
    )
    # The reason is computed once (the key's regex among it); the rest reads the column.
    with_reason = parsed.select("*", reason.alias("reason"))
    reason = F.col("reason")
    detail = (
        F.when(reason == "invalid_key", F.lit("a table key must be a non-negative integer id"))
        .when(reason == "oversized", F.lit(f"larger than {max_bytes} bytes"))
        .when(reason.startswith("malformed_"), F.lit('expected a JSON object with a "name"'))
    )
    good = reason.isNull()
    upsert, delete = (KIND_PLAYER, KIND_PLAYER_DELETE) if table == "player" else (KIND_PRODUCT, KIND_PRODUCT_DELETE)
    kind = F.when(~good, F.lit(KIND_DEAD_LETTER)).when(is_null, F.lit(delete)).otherwise(F.lit(upsert))
    table_id = F.when(good, rkey.cast("long")).otherwise(F.lit(PASS_THROUGH))
    rows = with_reason.select(
        kind.cast("byte").alias("kind"),
        (table_id if table == "player" else F.lit(PASS_THROUGH)).cast("long").alias("player_id"),
        (table_id if table == "product" else F.lit(PASS_THROUGH)).cast("long").alias("product_id"),
        F.lit(None).cast("double").alias("score"),
        F.when(good, t["name"]).otherwise(dlq_value(reason, detail, max_bytes)).alias("text"),
        F.lit(None).cast("binary").alias("raw"),
        "ts",
        F.col("partition").alias("part"),
        F.col("offset").alias("off"),
    )
    dead = F.col("kind") == KIND_DEAD_LETTER
    if routing.replicates(table):
        buckets = F.when(dead, F.array(F.lit(PASS_THROUGH).cast("bigint"))).otherwise(routing.all_keys())
        rows = rows.withColumn("bucket", F.explode(buckets))
    else:
        table_id = F.col("player_id" if table == "player" else "product_id")
        rows = rows.withColumn(
            "bucket", F.when(dead, F.lit(PASS_THROUGH)).otherwise(routing.score(table_id, table_id)).cast("bigint")
        )
    return rows.select("bucket", *COLUMNS)


def bucketed_rows(spark, config: LeaderboardConfig, bootstrap: str) -> DataFrame:
    """The operator's input: the three topics read, parsed, and given their ``bucket``."""
    t = config.topics
    k = config.kafka
    # Separate sources so that max_offsets_per_trigger throttles only the score events: table
    # updates produced before a score always arrive in the same or an earlier micro-batch, which
    # keeps the result independent of how the input was cut into batches (restarts included).
    scores = kafka_source(
        spark, bootstrap, [t.score_events], k.starting_offsets, k.max_offsets_per_trigger, k.min_partitions
    )
    # A table is read from its beginning to bootstrap it, whatever the score events start from.
    table_start = "earliest" if config.leaderboard.tables == "bootstrap" else k.starting_offsets
    players, products = (kafka_source(spark, bootstrap, [name], table_start) for name in (t.players, t.products))
    # Each source is parsed on its own: the score events, nearly every row, take the short path.
    max_bytes = config.leaderboard.max_record_bytes
    routing = Routing(config.leaderboard.layout)
    return (
        _parse_scores(scores, max_bytes, routing)
        .unionByName(_parse_table(players, "player", max_bytes, routing))
        .unionByName(_parse_table(products, "product", max_bytes, routing))
    )


def build(spark, config: LeaderboardConfig, bootstrap: str) -> JobPlan:
    t = config.topics
    rows = bucketed_rows(spark, config, bootstrap)
    table_ends = None
    if config.leaderboard.tables == "bootstrap":
        from statectl.adapters.kafka.offsets import end_offsets

        ends = end_offsets(bootstrap, [t.players, t.products])
        table_ends = {"players": ends.get(t.players, {}), "products": ends.get(t.products, {})}
    settings = (
        config.leaderboard.top_n,
        t.score_events,
        t.high_scores,
        t.dlq,
        config.leaderboard.max_record_bytes,
        table_ends,
    )
    if config.leaderboard.layout == "sharded":
        routed = rows.groupBy("bucket").transformWithStateInPandas(
            statefulProcessor=PlayerShard(*settings),
            outputStructType=ROUTED_SCHEMA,
            outputMode="Append",
            timeMode="None",
        )
        output = routed.groupBy("slot").transformWithStateInPandas(
            statefulProcessor=GameRanking(config.leaderboard.top_n, t.high_scores, t.dlq),
            outputStructType=OUTPUT_SCHEMA,
            outputMode="Append",
            timeMode="None",
        )
    else:
        output = rows.groupBy("bucket").transformWithStateInPandas(
            statefulProcessor=Leaderboard(*settings),
            outputStructType=OUTPUT_SCHEMA,
            outputMode="Append",
            timeMode="None",
        )
    return JobPlan(
        output=output,
        reasons=REASONS,
        output_topics=[t.high_scores, t.dlq],
        description=f"top {config.leaderboard.top_n} scores per game -> {t.high_scores}",
    )
