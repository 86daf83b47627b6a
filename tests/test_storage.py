"""The object-storage layer's pure parts: locations, fs.s3a.* settings with the AWS environment
under them, ObjectPath's path operations, and each S3 failure as one line. No server here (the
integration tests use a real one)."""

from __future__ import annotations

import pytest

from statectl.errors import ConfigError, OperationalError, UsageError
from statectl.storage.files import as_path, checkpoint_path
from statectl.storage.location import Location, is_remote, local_path_of, parse_location
from statectl.storage.objects import ObjectPath
from statectl.storage.settings import StorageConfig, from_properties, from_spark_conf, s3_settings, spark_hadoop_conf


@pytest.mark.parametrize(
    "text, expected",
    [
        ("s3a://bkt/a/b", Location("s3a", "bkt", "a/b")),
        ("s3://bkt/a/b/", Location("s3a", "bkt", "a/b")),
        ("s3n://my.bucket-1/x", Location("s3a", "my.bucket-1", "x")),
        ("s3a://bkt", Location("s3a", "bkt", "")),
        ("gs://bucket/ck", Location("gs", "bucket", "ck")),
    ],
    ids=["s3a", "s3-alias", "s3n-alias", "bucket-root", "gs"],
)
def test_locations(text, expected):
    assert parse_location(text) == expected


@pytest.mark.parametrize(
    "text, says",
    [
        ("s3a:///ck", "no bucket"),
        ("s3a://Upper/ck", "not a valid S3 bucket name"),
        ("s3a://ab/ck", "not a valid S3 bucket name"),
        ("s3a://key:secret@bkt/ck", "credentials do not go in the URL"),
        ("s3a://bkt/a/../b", "'..' do not work"),
        ("s3a://bkt/a//b", "empty path segment"),
    ],
    ids=["no-bucket", "upper-case", "too-short", "credentials", "dot-dot", "double-slash"],
)
def test_malformed_locations_are_usage_errors(text, says):
    with pytest.raises(UsageError, match=says):
        parse_location(text)


def test_local_paths_and_file_urls():
    assert not is_remote("/data/ck") and not is_remote("file:///data/ck") and is_remote("s3a://b/x")
    assert local_path_of("file:///data/ck") == "/data/ck"
    assert local_path_of("file://localhost/data/ck") == "/data/ck"
    with pytest.raises(UsageError, match="names a path on this machine"):
        local_path_of("file://otherhost/data/ck")
    assert str(checkpoint_path("file:///tmp/ck")) == "/tmp/ck"
    assert isinstance(checkpoint_path("s3://bkt/ck"), ObjectPath)


def test_object_path_operations():
    p = ObjectPath("s3a://bkt/jobs/ck")
    assert str(p / "state" / "0") == "s3a://bkt/jobs/ck/state/0"
    assert p.name == "ck" and str(p.parent) == "s3a://bkt/jobs" and str(p.parent.parent.parent) == "s3a://bkt"
    assert str(p.with_name("ck.lock")) == "s3a://bkt/jobs/ck.lock"
    assert str((p / "state/0/1.zip").relative_to(p)) == "state/0/1.zip"
    assert p.expanduser().resolve() is p and p == ObjectPath("s3://bkt/jobs/ck/")
    assert as_path("s3a://bkt/jobs/ck") == p
    with pytest.raises(ValueError):
        (p / "x").relative_to(ObjectPath("s3a://other/jobs"))
    with pytest.raises(TypeError):  # never handed to os by mistake
        open(p)


ENDPOINT = {"fs.s3a.endpoint": "http://127.0.0.1:9000", "fs.s3a.path.style.access": "true"}


def test_settings_from_properties_win_over_the_environment():
    config = StorageConfig(
        {**ENDPOINT, "fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK", "fs.s3a.endpoint.region": "eu-west-1"},
        "s3.properties",
    )
    env = {"AWS_ACCESS_KEY_ID": "ENVAK", "AWS_SECRET_ACCESS_KEY": "ENVSK", "AWS_REGION": "us-west-2"}
    got = s3_settings(config, "bkt", env)
    assert (got.endpoint_url, got.path_style, got.access_key, got.secret_key, got.region) == (
        "http://127.0.0.1:9000",
        True,
        "AK",
        "SK",
        "eu-west-1",
    )
    assert got.credentials_from == "fs.s3a.access.key in s3.properties"
    assert "SK" not in repr(got) and "AK" not in repr(got)


def test_the_aws_environment_fills_what_the_settings_leave_out():
    env = {"AWS_ENDPOINT_URL_S3": "http://minio:9000", "AWS_REGION": "eu-central-1", "AWS_PROFILE": "prod"}
    got = s3_settings(StorageConfig(), "bkt", env)
    assert (got.endpoint_url, got.region, got.access_key, got.profile) == (
        "http://minio:9000",
        "eu-central-1",
        None,
        "prod",
    )
    assert got.credentials_from == "AWS profile 'prod'" and got.endpoint_from == "$AWS_ENDPOINT_URL_S3"
    conf = spark_hadoop_conf(StorageConfig(), env)
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://minio:9000"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-central-1"
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith("DefaultCredentialsProvider")


def test_per_bucket_settings_as_hadoop_has_them():
    config = StorageConfig(
        {
            **ENDPOINT,
            "fs.s3a.bucket.logs.endpoint": "https://s3.eu-west-1.amazonaws.com",
            "fs.s3a.bucket.logs.path.style.access": "false",
        },
        "f",
    )
    assert s3_settings(config, "logs", {}).endpoint_url == "https://s3.eu-west-1.amazonaws.com"
    assert s3_settings(config, "logs", {}).path_style is False
    assert s3_settings(config, "other", {}).endpoint_url == "http://127.0.0.1:9000"


@pytest.mark.parametrize(
    "props, says",
    [
        ({"fs.s3a.path.style.access": "yes"}, "'yes' is not true or false"),
        ({"fs.s3a.endpoint": "ftp://host"}, "is not host[:port] or http(s)://host[:port]"),
        ({"fs.s3a.endpoint": "host:port"}, "has a port that is not a number"),
        ({"fs.s3a.access.key": "AK"}, "fs.s3a.access.key is set without fs.s3a.secret.key"),
        (
            {
                "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
                "fs.s3a.access.key": "A",
                "fs.s3a.secret.key": "S",
            },
            "fs.s3a.session.token is not set",
        ),
        ({"fs.s3a.aws.credentials.provider": "com.example.Mine"}, "com.example.Mine is not a provider"),
    ],
    ids=["bool", "scheme", "port", "half-keys", "temporary-no-token", "unknown-provider"],
)
def test_malformed_settings_are_config_errors(props, says):
    with pytest.raises(
        ConfigError, match=says.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(").replace(")", r"\)")
    ):
        s3_settings(StorageConfig(props, "s3.properties"), "bkt", {})


def test_a_properties_file_holds_only_s3a_settings():
    config = from_properties(
        [("fs.s3a.endpoint", "http://h:1"), ("spark.hadoop.fs.s3a.path.style.access", "true")], "f"
    )
    assert config.properties == {"fs.s3a.endpoint": "http://h:1", "fs.s3a.path.style.access": "true"}
    with pytest.raises(ConfigError, match="bootstrap.servers: not an fs.s3a.\\* setting"):
        from_properties([("bootstrap.servers", "x")], "f")


def test_the_job_configs_spark_settings_and_their_secrets():
    config = from_spark_conf(
        {
            "spark.hadoop.fs.s3a.access.key": "AKIA1234",
            "spark.hadoop.fs.s3a.secret.key": "s3cr3t",
            "spark.sql.shuffle.partitions": 4,
            "spark.hadoop.fs.s3a.path.style.access": True,
        },
        "job",
    )
    assert config.properties == {
        "fs.s3a.access.key": "AKIA1234",
        "fs.s3a.secret.key": "s3cr3t",
        "fs.s3a.path.style.access": "true",
    }
    assert sorted(config.secret_values()) == ["AKIA1234", "s3cr3t"]


def _client_error(code: str, status: int, headers: dict | None = None):
    from botocore.exceptions import ClientError

    return ClientError(
        {
            "Error": {"Code": code, "Message": "m"},
            "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": headers or {}},
        },
        "ListObjectsV2",
    )


@pytest.mark.parametrize(
    "exc, kind, says",
    [
        (lambda: _client_error("NoSuchBucket", 404), OperationalError, "bucket 'bkt' does not exist"),
        (lambda: _client_error("InvalidAccessKeyId", 403), OperationalError, "refused the credentials"),
        (
            lambda: _client_error("AuthorizationHeaderMalformed", 400, {"x-amz-bucket-region": "eu-west-1"}),
            OperationalError,
            "is not in region us-east-1 (AuthorizationHeaderMalformed): it is in eu-west-1",
        ),
        (lambda: _client_error("PermanentRedirect", 301), OperationalError, "set fs.s3a.endpoint.region"),
        (lambda: _client_error("AccessDenied", 403), OperationalError, "give them s3:ListBucket"),
        (lambda: _client_error("NoSuchKey", 404), FileNotFoundError, "No such file"),
    ],
    ids=["no-bucket", "bad-key", "region-malformed", "region-redirect", "denied", "no-key"],
)
def test_each_s3_failure_is_one_line_saying_what_to_do(exc, kind, says):
    """Regions: the local S3 server does not check them, so the mapping is tested here, on the
    errors S3 returns (and the x-amz-bucket-region header it sends)."""
    from statectl.storage.s3 import S3Store
    from statectl.storage.settings import S3Settings

    store = S3Store("bkt", S3Settings(region="us-east-1"))
    failure = store._fail(exc(), "ListObjectsV2", "ck")
    assert isinstance(failure, kind)
    assert says in str(failure) and "\n" not in str(failure)


def test_access_keys_are_secret_settings():
    from statectl.redact import is_secret_key

    assert is_secret_key("fs.s3a.access.key") and is_secret_key("fs.s3a.secret.key")
    assert is_secret_key("spark.hadoop.fs.s3a.session.token") and not is_secret_key("fs.s3a.endpoint")


def test_a_replica_holds_only_the_versions_a_restart_loads(tmp_path):
    """What --rows and check-restart download of an object-store checkpoint: of each store, the
    snapshot the restore plan loads and the changelogs after it, nothing older or newer."""
    from statectl.checkpoint.reader import read_layout
    from statectl.checkpoint.restore import files_a_restart_reads, restore_plan
    from tests.checkpoint_factory import build_checkpoint

    build_checkpoint(tmp_path / "ck", batches=9, snapshot_every=4, crc=False)  # versions 1..9, zips at 4 and 8
    layout = read_layout(tmp_path / "ck")
    keep = files_a_restart_reads(restore_plan(layout))
    files = sorted(p.relative_to(tmp_path / "ck").as_posix() for p in (tmp_path / "ck").rglob("*") if p.is_file())
    state = [f for f in files if f.startswith("state/0/0/") and f.count("/") == 3]
    kept = [f.split("/")[-1] for f in state if keep(f)]
    assert kept == ["8.zip", "9.changelog"], kept
    assert keep("offsets/3") and keep("state/0/_metadata/metadata") and keep("state/0/0/SSTs/000001.sst")
