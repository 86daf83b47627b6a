"""The commented starter statectl.yaml that `statectl init` writes (it loads cleanly as it is)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from statectl.errors import UsageError
from statectl.project import PROJECT_FILE

STARTER = """\
# statectl project file: named contexts and this project's jobs (docs/project.md).
#
# Every command finds this file in the folder it runs in or the nearest one above it
# (or --project FILE, or $STATECTL_PROJECT). The context in use:
#   --context NAME  >  $STATECTL_CONTEXT  >  `statectl context use NAME`  >  current-context below.
# What a setting comes from: flag > environment > context > job config > default.
#
# No secrets here: this file is committed. Kafka credentials go in a client.properties file
# (client_config), and any secret setting is written as a reference, ${ENV_VAR} or @path/to/file.

current-context: local

contexts:
  # The embedded broker of `statectl kafka up`. Spark: no spark_master or spark_remote, so a run
  # uses the warm engine of `statectl engine up` when one is up, else a driver in its own process.
  local:
    bootstrap_servers: localhost:9092
    checkpoint_root: .statectl/checkpoints        # relative paths start from this file's folder

  # A shared cluster: uncomment and fill in.
  # staging:
  #   bootstrap_servers: kafka-1.staging:9093,kafka-2.staging:9093
  #   client_config: secrets/staging-client.properties   # security.protocol, sasl.*, ssl.* (kept out of git)
  #   spark_remote: sc://spark-connect.staging:15002    # or spark_master: spark://spark-master:7077
  #   checkpoint_root: s3a://my-bucket/statectl/checkpoints
  #   storage_config: secrets/staging-s3a.properties    # fs.s3a.* properties file
  #   storage:                                          # or inline fs.s3a.* keys
  #     fs.s3a.endpoint: https://s3.eu-west-1.amazonaws.com
  #     fs.s3a.access.key: ${AWS_ACCESS_KEY_ID}         # a secret: a reference, never the value
  #     fs.s3a.secret.key: ${AWS_SECRET_ACCESS_KEY}

# This project's jobs: a name you type (statectl run NAME) -> its job config, relative to this file.
jobs: {}
#  leaderboard: configs/leaderboard.yaml
#  sales-threshold: configs/advanced-state/sales-threshold.yaml
"""


@dataclass(frozen=True)
class Written:
    path: Path
    replaced: bool

    def to_dict(self) -> dict:
        return {"path": str(self.path), "replaced": self.replaced}


def write_starter(folder: Path | None = None, force: bool = False) -> Written:
    """Write the starter statectl.yaml into ``folder`` (default: here); refuses to replace one
    without ``force`` (a UsageError, nothing written)."""
    folder = (folder or Path.cwd()).expanduser()
    path = folder / PROJECT_FILE if folder.suffix not in (".yaml", ".yml") else folder
    existed = path.exists()
    if existed and not force:
        raise UsageError(f"{path} exists; --force replaces it (its contexts and jobs are lost)")
    if path.is_dir():
        raise UsageError(f"{path} is a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(STARTER, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    return Written(path.absolute(), existed)
