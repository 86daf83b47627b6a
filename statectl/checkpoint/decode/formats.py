"""Decoders of the files inside a checkpoint: offset and commit log entries, operator metadata,
state schema files (Java DataOutputStream encoding), state file names. Pure: bytes or text in,
plain objects out; the directory walk is ``statectl.checkpoint.reader``."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any

from statectl.checkpoint.layout import DEFAULT_STORE, HDFS, ROCKSDB, CommitEntry, OffsetEntry

STATE_EXTENSIONS = {"zip": ROCKSDB, "changelog": ROCKSDB, "snapshot": HDFS, "delta": HDFS}


UUID_LEN = 36


def parse_offset_entry(batch: int, text: str) -> OffsetEntry:
    lines = text.split("\n")
    version = lines[0].strip()
    if not version.startswith("v"):
        raise ValueError(f"first line is {version[:20]!r}, not a log version like 'v1'")
    meta = json.loads(lines[1]) if len(lines) > 1 and lines[1].strip() else {}
    if not isinstance(meta, dict):
        raise ValueError("second line is not the batch metadata object")
    sources: list[Any] = []
    for line in lines[2:]:
        line = line.strip()
        if not line:
            continue
        sources.append(None if line == "-" else json.loads(line))
    return OffsetEntry(
        batch=batch,
        version=version,
        watermark_ms=meta.get("batchWatermarkMs"),
        timestamp_ms=meta.get("batchTimestampMs"),
        conf={str(k): str(v) for k, v in (meta.get("conf") or {}).items()},
        source_offsets=sources,
    )


def parse_commit_entry(batch: int, text: str) -> CommitEntry:
    lines = text.split("\n")
    version = lines[0].strip()
    if not version.startswith("v"):
        raise ValueError(f"first line is {version[:20]!r}, not a log version like 'v1'")
    doc = json.loads(lines[1]) if len(lines) > 1 and lines[1].strip() else {}
    if not isinstance(doc, dict):
        raise ValueError("second line is not a JSON object")
    ids = doc.get("stateUniqueIds")
    unique_ids = None
    if isinstance(ids, dict) and ids:
        unique_ids = {int(op): [[str(x) for x in part] for part in parts] for op, parts in ids.items()}
    return CommitEntry(
        batch=batch, version=version, next_watermark_ms=doc.get("nextBatchWatermarkMs"), state_unique_ids=unique_ids
    )


def source_kind(offset: Any) -> str | None:
    """Guess a source's type from its offset JSON (the offset log does not name it)."""
    if offset is None:
        return None
    if isinstance(offset, int):
        return "numeric offset (rate, memory or socket source)"
    if isinstance(offset, dict):
        if "logOffset" in offset:
            return "file source"
        if offset and all(
            isinstance(v, dict) and all(str(k).lstrip("-").isdigit() for k in v) for v in offset.values()
        ):
            return "Kafka"
        return "custom source"
    return "custom source"


def parse_operator_metadata(text: str) -> dict[str, Any]:
    """`v1`/`v2` header line + one JSON object (operatorInfo, stateStoreInfo, properties)."""
    lines = text.split("\n", 1)
    version = lines[0].strip()
    if version not in ("v1", "v2"):
        raise ValueError(f"unknown operator metadata version {version[:10]!r}")
    doc = json.loads(lines[1])
    if not isinstance(doc, dict) or "operatorInfo" not in doc:
        raise ValueError("no operatorInfo")
    doc["_version"] = int(version[1:])
    return doc


WATERMARK_DELAY_KEY = "spark.watermarkDelayMs"


@dataclass
class ColumnFamilySchema:
    """One column family (state variable or internal index) of a state schema file."""

    name: str
    key_schema: dict[str, Any] = field(default_factory=dict)
    value_schema: dict[str, Any] = field(default_factory=dict)

    def field_names(self, which: str) -> list[str]:
        schema = self.key_schema if which == "key" else self.value_schema
        return [f"{f.get('name')} {_type_name(f.get('type'))}" for f in schema.get("fields", [])]

    def event_time_columns(self, which: str) -> list[str]:
        """The columns withWatermark marked (Spark keeps ``spark.watermarkDelayMs`` in the field's
        metadata, and a window over such a column carries it too)."""
        schema = self.key_schema if which == "key" else self.value_schema
        return [
            str(f.get("name"))
            for f in schema.get("fields", [])
            if isinstance(f.get("metadata"), dict) and WATERMARK_DELAY_KEY in f["metadata"]
        ]


def parse_state_schema(data: bytes) -> list[ColumnFamilySchema]:
    """Decode a state schema file (`_metadata/schema` v1/v2, `_stateSchema/...` v3).

    Java DataOutputStream encoding: writeUTF strings (2-byte length), v2/v3 split long JSON into
    an int count of UTF chunks. v3 holds one entry per column family: name, key schema id,
    key schema, value schema id, value schema, key encoder spec, user key encoder schema.
    """
    reader = _JavaReader(data)
    version = reader.utf()
    if version == "v1":
        return [ColumnFamilySchema(DEFAULT_STORE, json.loads(reader.utf()), json.loads(reader.utf()))]
    if version == "v2":
        return [ColumnFamilySchema(DEFAULT_STORE, json.loads(reader.chunks()), json.loads(reader.chunks()))]
    if version == "v3":
        out = []
        for _ in range(reader.int32()):
            name = reader.utf()
            reader.short()
            key = json.loads(reader.chunks())
            reader.short()
            value = json.loads(reader.chunks())
            reader.chunks()  # key state encoder spec
            reader.chunks()  # user key encoder schema
            out.append(ColumnFamilySchema(name, key, value))
        return out
    raise ValueError(f"unknown schema version {version[:10]!r}")


class _JavaReader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError("file ends early")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def short(self) -> int:
        return struct.unpack(">h", self._take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self._take(4))[0]

    def utf(self) -> str:
        n = struct.unpack(">H", self._take(2))[0]
        return self._take(n).decode("utf-8")

    def chunks(self) -> str:
        n = self.int32()
        if n < 0 or n > 1 << 20:
            raise ValueError(f"implausible chunk count {n}")
        return "".join(self.utf() for _ in range(n))


def _type_name(t: Any) -> str:
    if isinstance(t, str):
        return t
    if isinstance(t, dict):
        return str(t.get("type", "?"))
    return "?"


def parse_state_file_name(name: str) -> tuple[int, str | None, str] | None:
    """'12.zip' -> (12, None, 'zip'); '12_<uuid>.changelog' -> (12, uuid, 'changelog'); else None."""
    stem, dot, ext = name.rpartition(".")
    if not dot or ext not in STATE_EXTENSIONS:
        return None
    version, _, unique_id = stem.partition("_")
    if not version.isdigit():
        return None
    if unique_id and len(unique_id) != UUID_LEN:
        return None
    return int(version), (unique_id or None), ext
