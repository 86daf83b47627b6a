"""Helpers of the object-storage tests: copy a local tree into a bucket and back, hash every
object, compare statectl's answers on a local checkpoint and its copy in S3."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def upload_tree(client, bucket: str, prefix: str, local: Path) -> int:
    """Put every file under ``local`` at ``prefix``/relative path; returns the number of objects."""
    n = 0
    for dirpath, _, names in os.walk(local):
        for name in names:
            path = Path(dirpath) / name
            rel = path.relative_to(local).as_posix()
            client.put_object(Bucket=bucket, Key=f"{prefix}/{rel}" if prefix else rel, Body=path.read_bytes())
            n += 1
    return n


def object_hashes(client, bucket: str, prefix: str) -> dict[str, str]:
    """{key relative to prefix: sha256} of every object under ``prefix``/."""
    out = {}
    token = None
    while True:
        args = {"Bucket": bucket, "Prefix": prefix.rstrip("/") + "/"}
        if token:
            args["ContinuationToken"] = token
        page = client.list_objects_v2(**args)
        for obj in page.get("Contents", []):
            body = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
            out[obj["Key"][len(args["Prefix"]) :]] = hashlib.sha256(body).hexdigest()
        if not page.get("IsTruncated"):
            return out
        token = page["NextContinuationToken"]


def tree_hashes(local: Path) -> dict[str, str]:
    return {
        p.relative_to(local).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(local.rglob("*"))
        if p.is_file()
    }
