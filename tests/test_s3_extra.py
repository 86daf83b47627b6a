"""The S3 client is an extra (``statectl[s3]``): without boto3 an s3a:// checkpoint is one line
naming it, exit 2, never an ImportError. Bad input tried: a checkpoint on s3a:// with boto3 and
botocore unimportable."""

from __future__ import annotations

import sys

import pytest

from statectl.errors import UsageError


def test_without_boto3_an_s3a_checkpoint_names_the_extra(monkeypatch):
    from statectl.storage.s3 import S3Store
    from statectl.storage.settings import S3Settings

    for name in ("boto3", "botocore"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    store = S3Store("bucket", S3Settings())
    with pytest.raises(UsageError) as caught:
        _ = store.client  # the client is made on first access, and that is where boto3 is imported
    assert str(caught.value) == 's3a:// checkpoints need AWS\'s S3 client (boto3): pip install "statectl[s3]"'
    assert caught.value.exit_code == 2


def test_the_cli_says_it_in_one_line(monkeypatch, tmp_path):
    """inspect-state on an s3a:// checkpoint, boto3 missing: the one line and exit 2."""
    from tests.conftest import statectl_in_process

    for name in ("boto3", "botocore"):
        monkeypatch.setitem(sys.modules, name, None)
    result = statectl_in_process("inspect-state", "s3a://bucket/checkpoints/clicks")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert 'pip install "statectl[s3]"' in result.stderr and "Traceback" not in result.stderr
