"""A user's job in many versions, for `statectl check-restart` (tests/integration/test_check_restart.py).

``params.variant`` picks the version of the query; everything else is the same. Imports nothing of
statectl. Family ``agg`` (an aggregation of page views), ``dedup`` (two dropDuplicates in a row)
and ``tws`` (a transformWithStateInPandas count with a TTL).
"""

from __future__ import annotations

import pandas as pd
from pydantic import BaseModel
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor
from pyspark.sql.types import LongType, StringType, StructField, StructType


class Params(BaseModel):
    variant: str
    clicks: str
    more_clicks: str = ""
    #: maxOffsetsPerTrigger: a run over a backlog commits several batches, so the state has
    #: versions behind it, as a real job's has
    per_batch: int | None = None


COUNT = StructType([StructField("n", LongType())])
OUT = StructType([StructField("k", StringType()), StructField("n", LongType())])


class Counter(StatefulProcessor):
    def __init__(self, state_name: str, ttl_ms: int | None) -> None:
        self.state_name, self.ttl_ms = state_name, ttl_ms

    def init(self, handle) -> None:
        self.count = handle.getValueState(self.state_name, COUNT, self.ttl_ms)

    def handleInputRows(self, key, rows, timerValues):
        n = self.count.get()[0] if self.count.exists() else 0
        for batch in rows:
            n += len(batch)
        self.count.update((n,))
        yield pd.DataFrame({"k": [key[0]], "n": [n]})

    def close(self) -> None:
        pass


def build(ctx):
    p = ctx.params
    v = p.variant

    def read(topic: str):
        reader = ctx.kafka_reader(topic)
        return (reader.option("maxOffsetsPerTrigger", p.per_batch) if p.per_batch else reader).load()

    raw = read(p.clicks)
    if v == "source-added":
        raw = raw.unionByName(read(p.more_clicks))
    views = raw.select(F.col("key").cast("string").alias("user"), F.col("value").cast("string").alias("page"))
    if v.startswith("tws"):
        state_name = "total" if v == "tws-renamed" else "count"
        ttl = 2 * 3600_000 if v == "tws-ttl-changed" else 3600_000
        out = views.groupBy("user").transformWithStateInPandas(
            statefulProcessor=Counter(state_name, ttl),
            outputStructType=OUT,
            outputMode="Update",
            timeMode="ProcessingTime",
        )
        return out.writeStream.format("noop").outputMode("update")
    if v.startswith("dedup"):
        first, second = ("user", "page") if v == "dedup-reordered" else ("page", "user")
        out = views.dropDuplicates([first]).dropDuplicates([second])
        return out.writeStream.format("noop").outputMode("append")
    if v == "operator-removed":
        return views.writeStream.format("noop").outputMode("append")
    if v == "operator-added":
        views = views.dropDuplicates(["user", "page"])
    key = F.length("page").alias("page") if v == "key-retyped" else F.col("page")
    aggs = {
        "value-added": [F.count("*").alias("n"), F.max("user").alias("last"), F.sum(F.length("page")).alias("chars")],
        "value-removed": [F.count("*").alias("n")],
        "value-retyped": [F.count("*").alias("n"), F.max(F.length("user")).alias("last")],
    }.get(v, [F.count("*").alias("n"), F.max("user").alias("last")])
    out = views.groupBy(key).agg(*aggs)
    return out.writeStream.format("noop").outputMode("update")
