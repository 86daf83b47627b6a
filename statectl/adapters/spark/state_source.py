"""Spark's state data sources (`statestore`, `state-metadata`): the `--rows` path of inspect-state.

The only part of inspect-state that starts a JVM. Both sources are read-only batch reads of the
checkpoint.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Protocol

from statectl.errors import OperationalError
from statectl.text import first_error_line


class StateSourceRead(Protocol):
    """What to read (``statectl.checkpoint.state_read.StateReadRequest`` is one)."""

    path: str
    limit: int
    options: dict[str, str]
    conf: dict[str, str]
    description: str


@dataclass
class StateSourceRows:
    """What the two sources returned, as plain Python."""

    metadata: list[dict[str, Any]] = field(default_factory=list)  # `state-metadata` rows
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)  # the first `limit` rows
    total: int | None = None


def read_state_rows(request: StateSourceRead, master: str = "local[*]", remote: str | None = None) -> StateSourceRows:
    """Read `state-metadata` and the first ``request.limit`` state rows the request describes.
    ``remote``: on that Spark Connect engine, which must run on this machine (the path is local)."""
    if remote is not None:
        from statectl.adapters.spark.remote import close_session, parse_remote, remote_session
        from statectl.errors import UsageError

        host, _ = parse_remote(remote)
        if host not in ("localhost", "127.0.0.1", "::1"):
            raise UsageError(
                f"inspect-state --rows --remote {remote}: the engine reads a copy of the checkpoint "
                "statectl makes on this machine, so it must run here (sc://localhost:PORT); use "
                "--remote none for a driver in this process"
            )
        spark = remote_session(remote, request.conf, app_name="statectl-inspect-state")
        try:
            return _read(spark, request)
        finally:
            close_session(spark)
    from statectl.adapters.spark.session import session_with_conf

    with session_with_conf("statectl-inspect-state", master, request.conf) as spark:
        return _read(spark, request)


def _read(spark, request: StateSourceRead) -> StateSourceRows:
    # The statestore reader talks to the StateStoreCoordinator, which Spark registers together
    # with the streaming query manager; a session that never touched streaming lacks it.
    _ = spark.streams.active
    path = os.path.abspath(request.path)
    result = StateSourceRows()
    try:
        metadata = spark.read.format("state-metadata").load(path)
        result.metadata = [_plain(r.asDict(recursive=True)) for r in metadata.collect()]
        reader = spark.read.format("statestore")
        for key, value in request.options.items():
            reader = reader.option(key, value)
        df = reader.load(path)
        result.columns = list(df.columns)
        result.rows = (
            [_plain(r.asDict(recursive=True)) for r in df.limit(request.limit).collect()] if request.limit else []
        )
        result.total = df.count()
    except Exception as exc:  # py4j/analysis errors come in many types; one sentence for the user
        raise OperationalError(
            f"Spark could not read the state ({request.description}): {first_error_line(exc, 400)}"
        ) from exc
    return result


def _plain(value: Any) -> Any:
    """Rows as plain Python: nested Rows become dicts, bytes become hex."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if hasattr(value, "asDict"):
        return _plain(value.asDict(recursive=True))
    return value
