"""Object-store settings, once, as Spark takes them: Hadoop's ``fs.s3a.*`` properties (from a job
config's Spark settings, as ``spark.hadoop.fs.s3a.*``, or from a ``--storage-config`` properties
file), falling back to AWS's standard chain (``AWS_ACCESS_KEY_ID``, ``AWS_PROFILE``,
``AWS_REGION``, ``AWS_ENDPOINT_URL_S3``...). Pure: the environment is passed in."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from statectl.errors import ConfigError, UsageError

PREFIX = "fs.s3a."
SPARK_PREFIX = "spark.hadoop."
#: The environment variable naming a properties file, for commands run without a job config.
CONFIG_ENV = "STATECTL_STORAGE_CONFIG"

_SIMPLE = {"org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"}
_TEMPORARY = {"org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"}
_ANONYMOUS = {"org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"}
# Providers that find credentials where AWS's SDKs look (environment, profile, instance role):
# statectl's own reads use boto3's chain, which looks in the same places.
_CHAIN = {
    "org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider",
    "org.apache.hadoop.fs.s3a.auth.ProfileAWSCredentialsProvider",
    "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
    "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider",
    "software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider",
    "software.amazon.awssdk.auth.credentials.InstanceProfileCredentialsProvider",
    "software.amazon.awssdk.auth.credentials.ContainerCredentialsProvider",
    "software.amazon.awssdk.auth.credentials.WebIdentityTokenFileCredentialsProvider",
    "com.amazonaws.auth.EnvironmentVariableCredentialsProvider",
    "com.amazonaws.auth.DefaultAWSCredentialsProviderChain",
    "com.amazonaws.auth.InstanceProfileCredentialsProvider",
    "com.amazonaws.auth.profile.ProfileCredentialsProvider",
}
#: fs.s3a.* settings whose values are secrets (never shown, never logged).
SECRET_SETTINGS = ("access.key", "secret.key", "session.token")
_BOOLEAN = ("path.style.access", "connection.ssl.enabled")


@dataclass(frozen=True)
class StorageConfig:
    """The ``fs.s3a.*`` properties in force (keys without the ``spark.hadoop.`` prefix) and where
    they came from, for the messages that name them."""

    properties: Mapping[str, str] = field(default_factory=dict)
    origin: str = "the AWS environment"

    def merged(self, other: StorageConfig) -> StorageConfig:
        """These settings with ``other``'s on top."""
        if not other.properties:
            return self
        if not self.properties:
            return other
        return StorageConfig({**self.properties, **other.properties}, f"{self.origin} and {other.origin}")

    def secret_values(self) -> list[str]:
        return [v for k, v in self.properties.items() if _is_secret(k) and v]


def _is_secret(key: str) -> bool:
    return any(key.endswith("." + s) for s in SECRET_SETTINGS)


def from_spark_conf(conf: Mapping[str, object], origin: str) -> StorageConfig:
    """The ``spark.hadoop.fs.s3a.*`` entries of a job's Spark settings (``fs.s3a.*`` too)."""
    props = {}
    for key, value in conf.items():
        name = key[len(SPARK_PREFIX) :] if key.startswith(SPARK_PREFIX + PREFIX) else key
        if name.startswith(PREFIX):
            props[name] = _text(value)
    return StorageConfig(props, origin) if props else StorageConfig()


def from_properties(pairs: list[tuple[str, str]], origin: str) -> StorageConfig:
    """The ``fs.s3a.*`` lines of a properties file (``spark.hadoop.fs.s3a.*`` lines too); any other
    key is a problem (exit 2): a misspelt setting would otherwise be silently ignored."""
    props, problems = {}, []
    for key, value in pairs:
        name = key[len(SPARK_PREFIX) :] if key.startswith(SPARK_PREFIX) else key
        if not name.startswith(PREFIX):
            problems.append(f"{key}: not an fs.s3a.* setting (the file holds Hadoop's S3A properties)")
            continue
        props[name] = value
    if problems:
        raise ConfigError(problems, origin)
    return StorageConfig(props, origin)


def read_storage_config(path: Path | None, env: Mapping[str, str] | None = None) -> StorageConfig:
    """The properties file given with --storage-config, else ``$STATECTL_STORAGE_CONFIG``'s, else
    none (the AWS environment alone)."""
    from statectl.cluster.properties import read_properties_file

    env = os.environ if env is None else env
    if path is None and env.get(CONFIG_ENV):
        path = Path(env[CONFIG_ENV])
    if path is None:
        return StorageConfig()
    path = path.expanduser()
    if not path.is_file():
        via = "" if env.get(CONFIG_ENV) != str(path) else f" (from ${CONFIG_ENV})"
        raise UsageError(f"storage config {path}{via} does not exist or is not a file")
    return from_properties([(p.key, p.value) for p in read_properties_file(path)], str(path))


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class S3Settings:
    """What a client of one bucket needs: resolved from fs.s3a.* (per-bucket settings
    ``fs.s3a.bucket.NAME.*`` first, as Hadoop does) and the AWS environment."""

    endpoint_url: str | None = None
    region: str | None = None
    path_style: bool = False
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None
    anonymous: bool = False
    profile: str | None = None
    #: where the credentials come from, for an error that says which ones were refused
    credentials_from: str = "the AWS environment"
    #: where the endpoint comes from
    endpoint_from: str = "AWS's default"

    def __repr__(self) -> str:  # never show the keys, even in a traceback
        return (
            f"S3Settings(endpoint_url={self.endpoint_url!r}, region={self.region!r}, "
            f"path_style={self.path_style}, credentials_from={self.credentials_from!r})"
        )


def _bucket_view(props: Mapping[str, str], bucket: str) -> dict[str, str]:
    """fs.s3a.* with the bucket's own ``fs.s3a.bucket.BUCKET.*`` overrides applied, keys without
    the prefix."""
    out, own = {}, {}
    marker = f"{PREFIX}bucket.{bucket}."
    for key, value in props.items():
        if key.startswith(marker):
            own[key[len(marker) :]] = value
        elif key.startswith(PREFIX + "bucket."):
            continue
        elif key.startswith(PREFIX):
            out[key[len(PREFIX) :]] = value
    out.update(own)
    return out


def _boolean(props: dict[str, str], name: str, default: bool, origin: str) -> bool:
    raw = props.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ConfigError([f"fs.s3a.{name}: {raw!r} is not true or false"], origin)
    return value == "true"


def endpoint_url(raw: str, ssl: bool, origin: str) -> str:
    """An fs.s3a.endpoint value (``host[:port]`` or a URL) as the URL a client connects to;
    ConfigError (exit 2) for one that names no host."""
    text = raw.strip()
    if "://" not in text:
        text = ("https://" if ssl else "http://") + text
    parts = urlsplit(text)
    try:
        _ = parts.port  # urlsplit checks the port only when it is asked for it
    except ValueError:
        raise ConfigError([f"fs.s3a.endpoint: {raw!r} has a port that is not a number"], origin) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        raise ConfigError([f"fs.s3a.endpoint: {raw!r} is not host[:port] or http(s)://host[:port]"], origin)
    return f"{parts.scheme}://{parts.netloc}"


def s3_settings(config: StorageConfig, bucket: str, env: Mapping[str, str] | None = None) -> S3Settings:
    """How to reach ``bucket``: the fs.s3a.* settings, then the AWS environment for what they leave out."""
    env = os.environ if env is None else env
    props = _bucket_view(config.properties, bucket)
    origin = config.origin
    problems: list[str] = []
    ssl = True
    path_style = False
    try:
        ssl = _boolean(props, "connection.ssl.enabled", True, origin)
    except ConfigError as exc:
        problems += exc.problems
    try:
        path_style = _boolean(props, "path.style.access", False, origin)
    except ConfigError as exc:
        problems += exc.problems
    endpoint, endpoint_from, endpoint_problems = _endpoint(props, env, ssl, origin)
    problems += endpoint_problems
    region = _region(props, env)

    providers = [p.strip() for p in props.get("aws.credentials.provider", "").split(",") if p.strip()]
    access, secret, token = (props.get(k, "").strip() or None for k in SECRET_SETTINGS)
    anonymous = bool(providers) and all(p in _ANONYMOUS for p in providers)
    problems += _credential_problems(providers, access, secret, token, anonymous)
    if problems:
        raise ConfigError(problems, origin)

    uses_keys = access is not None and not anonymous and (not providers or set(providers) & (_SIMPLE | _TEMPORARY))
    if uses_keys:
        return S3Settings(
            endpoint,
            region,
            path_style,
            access,
            secret,
            token,
            False,
            None,
            f"fs.s3a.access.key in {origin}",
            endpoint_from,
        )
    profile = env.get("AWS_PROFILE") or None
    return S3Settings(
        endpoint,
        region,
        path_style,
        anonymous=anonymous,
        profile=profile,
        credentials_from=_chain_credentials_source(anonymous, profile, env, origin),
        endpoint_from=endpoint_from,
    )


def _endpoint(
    props: Mapping[str, str], env: Mapping[str, str], ssl: bool, origin: str
) -> tuple[str | None, str, list[str]]:
    """The endpoint URL (None: AWS's default), where it comes from, and what is wrong with it:
    fs.s3a.endpoint, else the AWS SDKs' endpoint variables."""
    if props.get("endpoint", "").strip():
        try:
            return endpoint_url(props["endpoint"], ssl, origin), f"fs.s3a.endpoint in {origin}", []
        except ConfigError as exc:
            return None, "AWS's default", list(exc.problems)
    for var in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        if env.get(var, "").strip():
            try:
                return endpoint_url(env[var], True, f"${var}"), f"${var}", []
            except ConfigError:
                return None, "AWS's default", [f"${var}: {env[var]!r} is not an http(s)://host[:port] URL"]
    return None, "AWS's default", []


def _region(props: Mapping[str, str], env: Mapping[str, str]) -> str | None:
    region = (
        props.get("endpoint.region")
        or props.get("region")
        or env.get("AWS_REGION")
        or env.get("AWS_DEFAULT_REGION")
        or None
    )
    if region is not None:
        region = region.strip() or None
    return region


def _credential_problems(
    providers: list[str], access: str | None, secret: str | None, token: str | None, anonymous: bool
) -> list[str]:
    """What is wrong with the credentials settings: an unknown provider, half a key pair, a
    temporary provider without its session token."""
    problems = []
    unknown = [p for p in providers if p not in _SIMPLE | _TEMPORARY | _ANONYMOUS | _CHAIN]
    if unknown:
        problems.append(
            f"fs.s3a.aws.credentials.provider: {', '.join(unknown)} is not a provider statectl "
            f"knows (Simple, Temporary, Anonymous, or one of AWS's default chain)"
        )
    if (access is None) != (secret is None) and not anonymous:
        given, missing = (
            ("fs.s3a.access.key", "fs.s3a.secret.key") if access else ("fs.s3a.secret.key", "fs.s3a.access.key")
        )
        problems.append(f"{given} is set without {missing}; set both, or neither to use the AWS environment")
    if providers and set(providers) <= _TEMPORARY and token is None:
        problems.append(
            "fs.s3a.aws.credentials.provider is TemporaryAWSCredentialsProvider but fs.s3a.session.token is not set"
        )
    return problems


def _chain_credentials_source(anonymous: bool, profile: str | None, env: Mapping[str, str], origin: str) -> str:
    """Where the credentials come from when fs.s3a.* holds no keys, in words."""
    if anonymous:
        return f"no credentials (AnonymousAWSCredentialsProvider in {origin})"
    if env.get("AWS_ACCESS_KEY_ID"):
        return "$AWS_ACCESS_KEY_ID"
    if profile:
        return f"AWS profile {profile!r}"
    return "the AWS default chain (no keys set)"


def spark_hadoop_conf(config: StorageConfig, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Spark settings that give Spark's S3A connector the same view statectl has: every
    fs.s3a.* property as ``spark.hadoop.fs.s3a.*``, and what Hadoop does not read from the AWS
    environment itself (the endpoint, the region, a profile) filled in from it. Keys found in the
    environment stay there: the JVM inherits it and S3A's default chain reads them."""
    env = os.environ if env is None else env
    out = {SPARK_PREFIX + k: v for k, v in config.properties.items()}
    props = config.properties
    if not props.get(PREFIX + "endpoint"):
        for var in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
            if env.get(var):
                out[SPARK_PREFIX + PREFIX + "endpoint"] = env[var].strip()
                break
    if not (props.get(PREFIX + "endpoint.region") or props.get(PREFIX + "region")):
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        if region:
            out[SPARK_PREFIX + PREFIX + "endpoint.region"] = region.strip()
    if (
        not props.get(PREFIX + "access.key")
        and not props.get(PREFIX + "aws.credentials.provider")
        and env.get("AWS_PROFILE")
        and not env.get("AWS_ACCESS_KEY_ID")
    ):
        # Hadoop's default provider list has no profile reader; the SDK's default chain does.
        out[SPARK_PREFIX + PREFIX + "aws.credentials.provider"] = (
            "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
        )
    return out
