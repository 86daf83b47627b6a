"""A named context of the project file: which Kafka, which Spark, where checkpoints and their
object store are. Plain data; secrets appear here only as references (``${ENV}``, ``@file``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Context:
    """One context, every path absolute (relative ones start from the project file's folder)."""

    name: str
    bootstrap_servers: str | None = None
    #: a Kafka client.properties file (TLS, SASL), as --client-config takes it
    client_config: Path | None = None
    spark_master: str | None = None
    spark_remote: str | None = None
    #: where the jobs' checkpoints go, one folder per job: a local path or an s3a:// URL
    checkpoint_root: str | None = None
    #: an fs.s3a.* properties file, as --storage-config takes it
    storage_config: Path | None = None
    #: inline fs.s3a.* settings; a secret one is a reference, resolved by storage_properties()
    storage: Mapping[str, str] = field(default_factory=dict)
    #: the line of the context in the project file (for messages)
    line: int | None = None

    def checkpoint_for(self, job_name: str) -> str | None:
        """The checkpoint of ``job_name`` under this context's root, or None without a root."""
        if not self.checkpoint_root:
            return None
        return self.checkpoint_root.rstrip("/") + "/" + job_name.replace("/", "-")

    def storage_properties(
        self, env: Mapping[str, str] | None = None, origin: str = "the project file"
    ) -> dict[str, str]:
        """The inline storage settings with ``${ENV}`` and ``@file`` resolved (every resolved secret
        registered with statectl.redact)."""
        from statectl import redact
        from statectl.cluster.properties import Property
        from statectl.cluster.settings import resolve_value

        env = os.environ if env is None else env
        out = {}
        for key, value in self.storage.items():
            # @relative paths were made absolute from the project file's folder when it was read.
            resolved = resolve_value(Property(key, value, f"{origin}: contexts.{self.name}.storage"), env, None)
            if redact.is_secret_key(key):
                redact.register(resolved)
            out[key] = resolved
        return out

    def to_dict(self) -> dict:
        """What ``statectl context show`` prints (references as written: no secret is resolved)."""
        return {
            "name": self.name,
            "bootstrap_servers": self.bootstrap_servers,
            "client_config": str(self.client_config) if self.client_config else None,
            "spark_master": self.spark_master,
            "spark_remote": self.spark_remote,
            "checkpoint_root": self.checkpoint_root,
            "storage_config": str(self.storage_config) if self.storage_config else None,
            "storage": dict(self.storage),
        }
