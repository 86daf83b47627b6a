"""The event types a run writes to its events file, in the order a run meets them (docs/events.md).

The run's models (statectl/run/event_models.py) give each type its fields; the dashboard skips any
other type; tests/test_events_schema.py holds the models, the schema and this list together."""

from __future__ import annotations

EVENT_TYPES: tuple[str, ...] = (
    "query_started",
    "restore_started",
    "restore_progress",
    "restore_finished",
    "batch_progress",
    "catching_up",
    "dead_letters_jump",
    "kafka_connection",
    "idle",
    "stopping",
    "terminated",
)
