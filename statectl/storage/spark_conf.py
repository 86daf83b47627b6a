"""What Spark needs to keep a query's checkpoint where statectl reads it: the same fs.s3a.*
settings, and a checkpoint file manager that never renames."""

from __future__ import annotations

from statectl.storage.files import is_object_path
from statectl.storage.settings import spark_hadoop_conf
from statectl.storage.stores import current_config

#: Spark's checkpoint file manager for object stores: each file is written by a stream that is
#: aborted on failure, never as a temporary file renamed into place (a rename is copy + delete).
OBJECT_STORE_FILE_MANAGER = "org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager"


def spark_conf_for(checkpoint: object) -> dict[str, str]:
    """The Spark settings a query whose checkpoint is ``checkpoint`` needs: none for a local one;
    for ``s3a://``, the fs.s3a.* settings in force and the rename-free checkpoint file manager."""
    if not is_object_path(checkpoint):
        return {}
    return {
        # S3A's optimized copyFromLocalFile (how RocksDB uploads its SST files) goes through the
        # SDK's async client on netty. statectl loads the SDK's modules, not its bundle (which
        # shades its own netty), so that client runs on Spark's netty 4.2, and it takes S3's
        # "100 Continue" for the answer to the upload. The classic path uses the sync client.
        "spark.hadoop.fs.s3a.optimized.copy.from.local.enabled": "false",
        **spark_hadoop_conf(current_config()),
        "spark.sql.streaming.checkpointFileManagerClass": OBJECT_STORE_FILE_MANAGER,
    }
