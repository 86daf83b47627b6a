"""The ``statectl run`` events as pydantic models: the one definition of the events format.

The run itself never builds these: ``statectl.run.lifecycle``, ``restore_tracking`` and
``monitor`` emit plain dicts, so a run pays neither pydantic's import nor a model per batch.
The models check those dicts (``statectl.run.events_file.validate_event``, the tests) and are
the source of ``resources/events.schema.json`` and of the event reference in ``docs/events.md``
(``scripts/gen_events_doc.py`` writes both).

Every model forbids unknown keys and is strict, as JSON is: an integer field takes no ``"7"``,
no ``7.0`` and no ``true``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema

SCHEMA_ID = "https://statectl.invalid/schemas/run-events.json"
SCHEMA_TITLE = "statectl run events"
SCHEMA_DESCRIPTION = (
    "One JSON object per line, written by `statectl run --events-file PATH` / `--events -`. See docs/events.md."
)

Count = Annotated[int, Field(ge=0)]
Rate = Annotated[float, Field(ge=0)]
# The values of statectl.run.lifecycle.State; a Literal, as the events carry plain strings.
StateName = Literal["CREATED", "RESTORING", "RUNNING", "IDLE", "STOPPING", "TERMINATED", "FAILED"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# ---------------------------------------------------------------- nested objects
class PlannedStore(_Model):
    """One store instance of the restore plan."""

    partition: Count = Field(description="The state partition.")
    store: str = Field(description="The store's name within the partition (`default` unless the operator has several).")
    snapshot_version: Count = Field(
        description="The snapshot version the restore loads; 0: none, it replays from the start."
    )
    replay_files: Count = Field(description="Changelog files the restore replays on top of the snapshot.")
    replay_bytes: Count = Field(description="Their size.")
    snapshot_bytes: Count = Field(description="The snapshot's size (its zip and SST files).")


class RestorePlan(_Model):
    """What the restore plan, read from the checkpoint before the query starts, says one operator loads."""

    target_version: Count = Field(description="The state version the restore loads.")
    snapshot_files: Count = Field(description="Snapshot files to load (zips and their SST files).")
    snapshot_bytes: Count = Field(description="Their size.")
    replay_files: Count = Field(description="Changelog files to replay.")
    replay_bytes: Count = Field(description="Their size.")
    ok: bool = Field(description="False: files the restore needs are missing from the checkpoint.")
    # Optional, not nullable: restore_started carries the stores, restore_finished only the totals.
    stores: list[PlannedStore] = Field(
        default_factory=list, description="Per store instance; only in `restore_started`."
    )


class StoreLoad(_Model):
    """One store instance's load, as the Spark log shows it."""

    partition: Count = Field(description="The state partition.")
    store: str = Field(description="The store's name within the partition.")
    phase: Literal["waiting", "loading", "loading_snapshot", "replaying", "loaded"] = Field(
        description="Where its load is."
    )
    snapshot_version: Count | None = Field(description="The snapshot version it loads; null until the log says.")
    files_replayed: Count = Field(description="Changelog files replayed so far.")
    files_to_replay: Count | None = Field(description="Changelog files it replays; null until the log says.")
    load_ms: Count | None = Field(description="How long its load took; null until it is loaded.")


class RestoreLog(_Model):
    """An operator's restore as the Spark log showed it, over the store instances it saw loaded."""

    stores_loaded: Count = Field(description="Store instances the log showed loaded.")
    replay_files: Count = Field(description="Changelog files replayed.")
    load_ms_total: Count = Field(description="Load time, summed over the store instances.")
    load_ms_max: Count = Field(description="The longest load of one store instance.")
    snapshot_ms_total: Count = Field(description="Time spent loading snapshots, summed.")
    replay_ms_total: Count = Field(description="Time spent replaying changelogs, summed.")
    bytes_copied: Count = Field(description="Bytes copied from the checkpoint.")
    wall_ms: Count = Field(description="From the first `Loading` line to the last `Loaded` line.")


class StateOperator(_Model):
    """One stateful operator's figures for a batch."""

    operator_id: Count = Field(description="Spark's operator id.")
    name: str | None = Field(description="Spark's name for the operator.")
    rows_total: Count = Field(description="Rows in its state.")
    rows_updated: Count = Field(description="Rows the batch updated.")
    rows_removed: Count = Field(description="Rows the batch removed.")
    memory_bytes: Count = Field(description="Memory its state stores use.")
    commit_ms: Count = Field(description="Time committing its state stores.")
    partitions: Count = Field(description="Its state store instances.")


LagTrend = Literal["caught_up", "falling", "steady", "growing", "stalled", "unknown"]


class TopicLagProgress(_Model):
    """How far behind the batch left one topic of a Kafka source."""

    records_behind: Count = Field(
        description="The latest offsets Spark saw minus the batch's end offsets, summed over the topic's partitions."
    )
    lag_seconds: Rate | None = Field(
        description="Now minus the timestamp of the next unread record, for the "
        "furthest-behind partition; 0 when nothing is left to read; null when "
        "the records could not be read in time."
    )
    lag_trend: LagTrend = Field(description="The lag's trend over the run's last 10 batches (docs/commands/lag.md).")


class SourceProgress(_Model):
    """One source's figures for a batch."""

    description: str | None = Field(description="Spark's description of the source.")
    input_rows: Count = Field(description="Rows the batch read from it.")
    input_rows_per_second: Rate = Field(description="Spark's input rate.")
    processed_rows_per_second: Rate = Field(description="Spark's processing rate.")
    records_behind: Count | None = Field(
        description="Kafka: the latest offsets Spark saw minus the batch's end offsets, summed over partitions; "
        "null for other sources."
    )
    offsets_behind_avg: Rate | None = Field(description="Spark's `avgOffsetsBehindLatest`, when it reports it.")
    offsets_behind_max: Count | None = Field(description="Spark's `maxOffsetsBehindLatest`, when it reports it.")
    lag_seconds: Rate | None = Field(
        default=None,
        description="Kafka: the largest `lag_by_topic[].lag_seconds`; null when unknown. Absent for "
        "other sources and in runs that do not measure it.",
    )
    lag_trend: LagTrend | None = Field(
        default=None,
        description="Kafka: the topics' trends as one (stalled, then growing, steady, falling, "
        "caught_up). Absent for other sources.",
    )
    lag_by_topic: dict[str, TopicLagProgress] | None = Field(
        default=None,
        description="Kafka: per topic, `{records_behind, lag_seconds, lag_trend}`: its records behind (summed "
        "over its partitions), the age of its furthest-behind next unread record (0: none "
        "left; null: not read in time) and its trend over the run's last 10 batches "
        "(docs/commands/lag.md). Absent for other sources.",
    )


class SourceLag(_Model):
    """How far behind one source is."""

    description: str | None = Field(description="Spark's description of the source.")
    records_behind: Count | None = Field(description="As in `batch_progress.sources[]`.")
    offsets_behind_avg: Rate | None = Field(description="As in `batch_progress.sources[]`.")
    offsets_behind_max: Count | None = Field(description="As in `batch_progress.sources[]`.")


# ---------------------------------------------------------------- the events
class EventFields(_Model):
    """Fields every event has."""

    type: str = Field(description="The event type: one of the ten below.")
    time: Rate = Field(description="When it happened: Unix time in seconds, millisecond precision.")
    state: StateName = Field(description="The run's lifecycle state after this event.")
    query_id: str | None = Field(description="The checkpoint's query id, the same across restarts.")
    run_id: str | None = Field(description="This start of the query.")


_TYPE = "The event type."


class QueryStarted(EventFields):
    """The query started; the state stays `CREATED` (no batch has finished)."""

    model_config = ConfigDict(title="query_started")

    type: Literal["query_started"] = Field(description=_TYPE)
    query_id: str = Field(description="The checkpoint's query id, the same across restarts.")
    run_id: str = Field(description="This start of the query.")
    name: str | None = Field(description="The query name (the job id).")
    job: str | None = Field(description="The job statectl started.")
    checkpoint: str | None = Field(description="Its checkpoint path.")
    trigger: str | None = Field(description="Its trigger: `available-now` or `processing-time 1 second`.")
    restore_planned: bool = Field(description="The checkpoint holds state the first batch will load.")
    notes: list[str] = Field(
        description="E.g. where the Prometheus metrics are served, or why there is no restore plan."
    )


class RestoreStarted(EventFields):
    """One per stateful operator, when the first batch starts; the state becomes `RESTORING` (from
    `CREATED`, or from `IDLE` when the query waited for data first)."""

    model_config = ConfigDict(title="restore_started")

    type: Literal["restore_started"] = Field(description=_TYPE)
    operator_id: Count = Field(description="Spark's operator id (`state/<operator_id>/` in the checkpoint).")
    operator: str | None = Field(description="What it is, e.g. `transformWithStateInPandas`.")
    partitions: Count = Field(description="Its state partitions.")
    stores: Count = Field(description="Its store instances (partitions × stores per partition).")
    plan: RestorePlan = Field(description="What the restore plan says it loads.")
    live_sources: list[Literal["status_tracker", "log"]] = Field(
        description="Where progress will come from: `status_tracker`, and `log` when the Spark log is local."
    )


class RestoreProgress(EventFields):
    """While the first batch loads, whenever something moved."""

    model_config = ConfigDict(title="restore_progress")

    type: Literal["restore_progress"] = Field(description=_TYPE)
    operator_id: Count = Field(description="Spark's operator id.")
    source: Literal["log", "status_tracker"] = Field(description="What this update came from.")
    stores_total: Count = Field(description="Store instances planned.")
    stores_loaded: Count = Field(description="Store instances loaded (log).")
    stores_loading: Count = Field(description="Store instances being loaded (log).")
    files_replayed: Count = Field(description="Changelog files replayed so far (log).")
    files_to_replay: Count = Field(description="Changelog files the plan replays.")
    tasks_done: Count | None = Field(description="Tasks done of the stages loading this operator (status tracker).")
    tasks_total: Count | None = Field(description="Tasks of those stages.")
    tasks_scope: Literal["operator", "batch", None] = Field(
        description="`batch` when the operator's stages could not be told apart (no local log): "
        "the tasks are then the whole batch's."
    )
    stages: list[Count] = Field(description="Spark stage ids that load this operator.")
    partitions: list[StoreLoad] = Field(description="Per store instance seen in the log.")


class RestoreFinished(EventFields):
    """One per operator, when the first batch's progress arrives; the state still says `RESTORING`.

    It carries Spark's figures and the log's, says which it trusts (`duration_source`,
    `replay_files_source`) and lists their disagreements in `notes`.
    """

    model_config = ConfigDict(title="restore_finished")

    type: Literal["restore_finished"] = Field(description=_TYPE)
    operator_id: Count = Field(description="Spark's operator id.")
    operator: str | None = Field(description="What it is, e.g. `transformWithStateInPandas`.")
    partitions: Count = Field(description="Its state partitions.")
    duration_ms: Count = Field(
        description="How long loading this operator's stores took: first `Loading` to last `Loaded` line "
        '(`duration_source: "log"`), else Spark\'s `rocksdbLoadLatencyMs` (`"spark"`, a sum over '
        'partitions), else the first batch (`"batch"`).'
    )
    duration_source: Literal["log", "spark", "batch"] = Field(description="Where `duration_ms` comes from.")
    first_batch_ms: Count = Field(description="The whole first batch (triggerExecution): load plus processing.")
    since_start_ms: Count | None = Field(description="From the start of the restore to this event.")
    replay_files: Count | None = Field(
        description="Changelog files really replayed; null when neither the log nor Spark reported them."
    )
    replay_files_source: Literal["log", "spark", None] = Field(description="Where `replay_files` comes from.")
    agrees_with_plan: bool | None = Field(description="`replay_files` equals the plan's; null when it is null.")
    plan: RestorePlan = Field(description="The plan's totals (as in `restore_started`, without `stores`).")
    spark: dict[str, int] = Field(
        description="Spark's `rocksdb*Load*` / `rocksdb*Replay*` figures from the first batch's progress, "
        "each a sum over the operator's partitions."
    )
    log: RestoreLog | None = Field(description="What the Spark log showed; null when it showed no load.")
    notes: list[str] = Field(description="Disagreements between plan, log and Spark, in words.")


class BatchProgress(EventFields):
    """After every micro-batch; the state becomes `RUNNING` (it stays `STOPPING` once a stop was asked for)."""

    model_config = ConfigDict(title="batch_progress")

    type: Literal["batch_progress"] = Field(description=_TYPE)
    batch_id: Count = Field(description="Spark's batch id.")
    input_rows: Count = Field(description="Rows the batch read.")
    input_rows_per_second: Rate = Field(description="Spark's input rate.")
    processed_rows_per_second: Rate = Field(description="Spark's processing rate.")
    batch_duration_ms: Count = Field(description="The batch's duration.")
    duration_ms: dict[str, Count] = Field(
        description="Spark's breakdown of it (`addBatch`, `queryPlanning`, `walCommit`, `commitOffsets`, "
        "`latestOffset`, `getBatch`, `triggerExecution`)."
    )
    started_at_ms: Count | None = Field(
        default=None,
        description="When the batch started (Spark's trigger time), in ms since the epoch: with "
        "`duration_ms.triggerExecution`, where it ended and how long the run waited for the next one "
        "(absent from events written before 0.6).",
    )
    state_rows_total: Count = Field(description="State rows, summed over the stateful operators.")
    state_rows_updated: Count = Field(description="State rows updated, summed.")
    state_rows_removed: Count = Field(description="State rows removed, summed.")
    state_memory_bytes: Count = Field(description="State store memory, summed.")
    state_operators: list[StateOperator] = Field(description="Per stateful operator, in plan order.")
    sources: list[SourceProgress] = Field(description="Per source.")
    observed: dict[str, dict[str, float]] = Field(
        description="Spark's observed metrics of the batch, by observation name then metric, "
        "e.g. `statectl` → `dropped_unknown_player` (dead letters by reason)."
    )


class CatchingUp(EventFields):
    """After a batch that left Kafka input behind, and once when caught up.

    "Behind" is measured against the latest offsets Spark fetched when it planned the batch;
    records produced later show up in the next batch's figures.
    """

    model_config = ConfigDict(title="catching_up")

    type: Literal["catching_up"] = Field(description=_TYPE)
    batch_id: Count = Field(description="The batch it follows.")
    caught_up: bool = Field(description="True once, on the first batch that leaves nothing behind.")
    records_behind: Count = Field(description="Records behind, over all Kafka sources.")
    offsets_behind_max: Count = Field(description="The largest `offsets_behind_max` of the sources.")
    sources: list[SourceLag] = Field(description="The sources that report how far behind they are.")


class DeadLettersJump(EventFields):
    """Once per run, after the first batch that sends at least 100 records and 1 % of its input to
    the dead-letter topic while the run's earlier batches sent less: a warning that something
    upstream changed (or that a reprocessing run joins against tables it cannot see)."""

    model_config = ConfigDict(title="dead_letters_jump")

    type: Literal["dead_letters_jump"] = Field(description=_TYPE)
    batch_id: Count = Field(description="The batch it follows.")
    letters: Count = Field(description="Dead letters of that batch.")
    input_rows: Count = Field(description="Input rows of that batch.")
    by_reason: dict[str, Count] = Field(description="That batch's dead letters per reason.")
    run_letters: Count = Field(description="Dead letters of the run so far, this batch included.")
    run_input_rows: Count = Field(description="Input rows of the run so far, this batch included.")


class KafkaConnection(EventFields):
    """Kafka stopped answering (no broker of the cluster answered a metadata request), or answers
    again. One broker down of several is not this: the others answer. The lifecycle state does not
    change; Spark's Kafka source waits for the brokers, the run waits at most
    `kafka.unavailable_timeout` and then stops with an error."""

    model_config = ConfigDict(title="kafka_connection")

    type: Literal["kafka_connection"] = Field(description=_TYPE)
    reachable: bool = Field(description="False when Kafka stopped answering, true when it answers again.")
    down_seconds: Rate = Field(
        description="How long no broker had answered: at the first probe that got no answer, or for the whole outage "
        "once it is over."
    )
    timeout_seconds: Rate | None = Field(
        description="`kafka.unavailable_timeout` in seconds: the run stops with an error after that long without an "
        "answer; null: it waits."
    )


class Idle(EventFields):
    """The query found no new data (continuous mode). No further fields."""

    model_config = ConfigDict(title="idle")

    type: Literal["idle"] = Field(description=_TYPE)


class Stopping(EventFields):
    """A stop was asked for (Ctrl-C, SIGTERM): the micro-batch that is running finishes and commits,
    no new one starts. The state becomes `STOPPING` and stays so, through that batch's
    `batch_progress`, until `terminated`."""

    model_config = ConfigDict(title="stopping")

    type: Literal["stopping"] = Field(description=_TYPE)
    batch_id: Count | None = Field(
        description="The batch that finishes before the query stops; null when none was running."
    )
    reason: Literal["SIGINT", "SIGTERM", "requested", "time_limit"] = Field(
        description="`SIGINT` (Ctrl-C) or `SIGTERM`; `requested` when the program running the job asked; "
        "`time_limit` when a run given a duration reached it."
    )


class Terminated(EventFields):
    """The query ended: `FAILED` with an error, `TERMINATED` without. Both are final."""

    model_config = ConfigDict(title="terminated")

    type: Literal["terminated"] = Field(description=_TYPE)
    error: str | None = Field(
        description="The line of the exception that says what went wrong (no stack frames); null for a clean stop."
    )
    error_class: str | None = Field(description="Spark's error class, when it has one.")
    source: Literal["spark", "statectl"] = Field(
        description="`statectl` when the query never started and Spark sent no event."
    )


Event = Annotated[
    QueryStarted
    | RestoreStarted
    | RestoreProgress
    | RestoreFinished
    | BatchProgress
    | CatchingUp
    | DeadLettersJump
    | KafkaConnection
    | Idle
    | Stopping
    | Terminated,
    Field(discriminator="type"),
]
EVENT_MODELS: tuple[type[EventFields], ...] = get_args(get_args(Event)[0])


def event_type(model: type[EventFields]) -> str:
    """The ``type`` value a model stands for."""
    return get_args(model.model_fields["type"].annotation)[0]


@lru_cache(maxsize=1)
def event_adapter() -> TypeAdapter:
    """Validates any event, picking its model by ``type``."""
    return TypeAdapter(Event)


class _SchemaGenerator(GenerateJsonSchema):
    # Per-field titles would only repeat the key in title case.
    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def json_schema(model: Any = None) -> dict:
    """The JSON Schema (2020-12) of all events, or of one ``model``."""
    if model is not None:
        return TypeAdapter(model).json_schema(schema_generator=_SchemaGenerator)
    generated = event_adapter().json_schema(schema_generator=_SchemaGenerator)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": SCHEMA_TITLE,
        "description": SCHEMA_DESCRIPTION,
        **generated,
    }
