"""What a restart of a checkpoint needs from the Spark session, and which Spark versions can
restart it at all. Pure: works on a ``CheckpointLayout``.

The offset log pins some session settings for the query's life (the state store provider,
`spark.sql.shuffle.partitions`: a restart uses the logged values whatever the session says) but
not the checkpoint format (`stateStore.checkpointFormatVersion`) nor changelog checkpointing.
Checked on PySpark 4.2.0 with real checkpoints, each restarted in a fresh JVM: a format-2
checkpoint fails to restart without `checkpointFormatVersion=2` ("Error reading streaming state
file of …/1.changelog does not exist": Spark looks for format-1 names), a format-1 checkpoint fails
when the session sets 2 (CANNOT_COMMIT), a checkpoint with changelogs restarts with changelog
checkpointing switched off, and a session's provider and partition count are ignored. Reported,
not checked here: 4.0 fails like 4.2, and 4.3 restarts format 2 without the setting.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from statectl.checkpoint.layout import (
    HDFS,
    HDFS_PROVIDER_CLASS,
    PROVIDER_CONF,
    ROCKSDB,
    ROCKSDB_PROVIDER_CLASS,
    SHUFFLE_PARTITIONS,
    CheckpointLayout,
)

FORMAT_CONF = "spark.sql.streaming.stateStore.checkpointFormatVersion"
CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

REQUIRED = "required"  # set it, or the restart fails
PINNED = "pinned"  # the offset log sets it; the session's value is ignored
RECOMMENDED = "recommended"  # not pinned, either value restarts; this one matches how it was written

#: The first Spark version that writes (and reads) each feature of a checkpoint.
_SINCE = {
    "format2": ((4, 0), "checkpoint format 2"),
    "tws": ((4, 0), "transformWithState"),
    "changelog": ((3, 5), "changelog checkpointing"),
    "dedupeWithinWatermark": ((3, 5), "dropDuplicatesWithinWatermark"),
    "rocksdb": ((3, 2), "the RocksDB state store"),
    "sessionWindowStateStoreSaveExec": ((3, 2), "session windows"),
}
#: The releases that need checkpointFormatVersion=2 set to restart a format-2 checkpoint.
_FORMAT2_NEEDS_CONF = ((4, 0), (4, 2))
_FORMAT2_DETECTED = (4, 3)

_TWS_NAMES = ("transformWithStateExec", "transformWithStateInPandasExec", "transformWithStateInPySparkExec")


@dataclass(frozen=True)
class SessionSetting:
    """One session setting a restart depends on."""

    key: str
    value: str | None  # what the restarting session should have (None: nothing to set)
    status: str  # REQUIRED | PINNED | RECOMMENDED
    why: str


@dataclass(frozen=True)
class VersionVerdict:
    """Whether a range of Spark releases can restart the checkpoint."""

    versions: str  # "4.0–4.2", "4.3 and newer", "before 4.0"
    restarts: str  # "yes" | "only with <setting>=<value>" | "no"
    why: str  # what decides it ("" when nothing in particular)


@dataclass
class RestartNeeds:
    """The session settings a restart needs and the Spark versions that can restart."""

    settings: list[SessionSetting] = field(default_factory=list)
    versions: list[VersionVerdict] = field(default_factory=list)
    minimum_version: str | None = None  # the oldest release that can restart it

    @property
    def session_conf(self) -> dict[str, str]:
        """The settings to put on the session that restarts the checkpoint."""
        return {s.key: s.value for s in self.settings if s.status == REQUIRED and s.value is not None}

    def to_dict(self) -> dict[str, Any]:
        return {
            "settings": [asdict(s) for s in self.settings],
            "session_conf": self.session_conf,
            "minimum_spark_version": self.minimum_version,
            "spark_versions": [asdict(v) for v in self.versions],
        }


def _has_state(layout: CheckpointLayout) -> bool:
    return any(store.versions for op in layout.operators.values() for _, store in op.all_stores())


def restart_needs(layout: CheckpointLayout) -> RestartNeeds:
    """What restarting ``layout`` needs: settings first, then the Spark versions that can."""
    needs = RestartNeeds()
    stateful = bool(layout.operators) and (_has_state(layout) or layout.format_version == 2)
    if stateful:
        needs.settings.append(_format_setting(layout))
        needs.settings.append(_provider_setting(layout))
        changelog = _changelog_setting(layout)
        if changelog is not None:
            needs.settings.append(changelog)
    needs.settings.append(_partitions_setting(layout))
    needs.settings = [s for s in needs.settings if s is not None]
    needs.versions, needs.minimum_version = _versions(layout, stateful)
    return needs


def restart_session_conf(layout: CheckpointLayout | None) -> dict[str, str]:
    """The session confs `statectl run` must set to continue ``layout`` (empty for a new query)."""
    if layout is None:
        return {}
    return restart_needs(layout).session_conf


def _format_setting(layout: CheckpointLayout) -> SessionSetting:
    if layout.format_version == 2:
        return SessionSetting(
            FORMAT_CONF,
            "2",
            REQUIRED,
            "not in the offset log; without it Spark 4.0–4.2 look for format-1 file names and fail "
            '("…/1.changelog does not exist"); 4.3 detects the format',
        )
    return SessionSetting(
        FORMAT_CONF,
        "1",
        REQUIRED,
        "Spark's default (leave it unset); a session that sets 2 fails on a format-1 checkpoint "
        "(Spark 4.2: CANNOT_COMMIT)",
    )


def _provider_setting(layout: CheckpointLayout) -> SessionSetting | None:
    pinned = layout.provider_class
    if pinned:
        return SessionSetting(PROVIDER_CONF, pinned, PINNED, "pinned by the offset log; the session's value is ignored")
    provider = layout.provider
    if provider in (ROCKSDB, HDFS):
        cls = ROCKSDB_PROVIDER_CLASS if provider == ROCKSDB else HDFS_PROVIDER_CLASS
        return SessionSetting(
            PROVIDER_CONF, cls, REQUIRED, f"not pinned by the offset log, and the state files are {provider}'s"
        )
    return None


def _changelog_setting(layout: CheckpointLayout) -> SessionSetting | None:
    if layout.provider != ROCKSDB:
        return None
    enabled = bool(layout.changelog_checkpointing)
    how = "has changelog files" if enabled else "has none"
    return SessionSetting(
        CHANGELOG_CONF,
        "true" if enabled else "false",
        RECOMMENDED,
        f"not pinned; the checkpoint {how}; either value restarts it",
    )


def _partitions_setting(layout: CheckpointLayout) -> SessionSetting | None:
    pinned = layout.pinned_partitions
    if pinned is not None:
        return SessionSetting(
            SHUFFLE_PARTITIONS,
            str(pinned),
            PINNED,
            "pinned by the offset log; the session's value is ignored (repartition-state changes it)",
        )
    counts = {op.num_partitions for op in layout.operators.values() if op.num_partitions}
    if len(counts) == 1:
        return SessionSetting(
            SHUFFLE_PARTITIONS,
            str(counts.pop()),
            REQUIRED,
            "not pinned by the offset log: the session must split the state as it is split",
        )
    return None


def _version_text(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def _versions(layout: CheckpointLayout, stateful: bool) -> tuple[list[VersionVerdict], str | None]:
    features = []
    if stateful and layout.format_version == 2:
        features.append(_SINCE["format2"])
    names = {op.name for op in layout.operators.values()}
    if names & set(_TWS_NAMES) or any(op.metadata_version == 2 for op in layout.operators.values()):
        features.append(_SINCE["tws"])
    for name in ("dedupeWithinWatermark", "sessionWindowStateStoreSaveExec"):
        if name in names:
            features.append(_SINCE[name])
    if stateful and layout.provider == ROCKSDB:
        features.append(_SINCE["changelog"] if layout.changelog_checkpointing else _SINCE["rocksdb"])
    if not features:
        return [VersionVerdict("any", "yes", "")], None
    minimum, _ = max(features)
    needing = ", ".join(what for since, what in sorted(features, reverse=True) if since == minimum)
    out = [VersionVerdict(f"before {_version_text(minimum)}", "no", needing)]
    if stateful and layout.format_version == 2:
        first, last = _FORMAT2_NEEDS_CONF
        out.append(VersionVerdict(f"{_version_text(first)}–{_version_text(last)}", f"only with {FORMAT_CONF}=2", ""))
        out.append(VersionVerdict(f"{_version_text(_FORMAT2_DETECTED)} and newer", "yes", ""))
    else:
        out.append(VersionVerdict(f"{_version_text(minimum)} and newer", "yes", ""))
    return out, _version_text(minimum)
