"""The project file and its contexts, pure: finding the file, strict loading, secrets refused,
choosing the context, the starter file, and the precedence table (flag > env > context > job
config > default) as each setting's code applies it.

Bad inputs tried: a misspelt context key, an unknown top-level key, a key given twice, a wrong
type, a current-context naming no context, spark_master beside spark_remote, a spark_remote that
is not sc://, a non-fs.s3a storage key, a bad context name, YAML syntax errors, a literal secret
(storage key, secret-named key in an unknown place, an inline token in a URL) — never echoed; a
--project / $STATECTL_PROJECT that does not exist; an unknown --context, $STATECTL_CONTEXT and
recorded context; --context without a project file; a context's client config that does not
exist; a storage reference to an unset variable; init over an existing file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from statectl import redact
from statectl.errors import ConfigError, UsageError
from statectl.project import ActiveProject, find_project_file, load, record_context

GOOD = """\
current-context: dev
contexts:
  dev:
    bootstrap_servers: localhost:9092
    checkpoint_root: cp
    storage:
      fs.s3a.endpoint: http://localhost:9000
      fs.s3a.secret.key: ${S3_SECRET}
      fs.s3a.access.key: "@keys/access"
  prod:
    bootstrap_servers: kafka:9093
    client_config: secrets/prod.properties
    spark_remote: sc://spark:15002
    checkpoint_root: s3a://bucket/cp
    storage_config: s3a.properties
  cluster:
    spark_master: spark://m:7077
jobs:
  lb: configs/lb.yaml
"""


def _project(tmp_path: Path, text: str = GOOD, name: str = "statectl.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------- finding the file
def test_no_file_is_an_empty_project(tmp_path):
    project = load(env={}, cwd=tmp_path)
    assert project == ActiveProject()
    assert (project.file, project.root, project.context, project.jobs, project.contexts) == (None, None, None, {}, {})


def test_found_in_the_nearest_folder_above(tmp_path):
    path = _project(tmp_path)
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_project_file(env={}, cwd=deep) == path
    project = load(env={}, cwd=deep)
    assert project.file == path.resolve()
    assert project.root == tmp_path.resolve()
    assert project.jobs == {"lb": tmp_path.resolve() / "configs" / "lb.yaml"}


def test_flag_beats_env_beats_search(tmp_path):
    here = _project(tmp_path)
    other = _project(tmp_path, GOOD, "other.yaml")
    env_file = _project(tmp_path, GOOD, "env.yaml")
    assert find_project_file(other, {"STATECTL_PROJECT": str(env_file)}, tmp_path) == other.absolute()
    assert find_project_file(None, {"STATECTL_PROJECT": str(env_file)}, tmp_path) == env_file.absolute()
    assert find_project_file(None, {}, tmp_path) == here
    assert find_project_file(tmp_path, {}, Path("/")) == here.absolute()  # a folder means its statectl.yaml


@pytest.mark.parametrize(
    "flag, env, via",
    [
        ("missing.yaml", {}, "--project"),
        (None, {"STATECTL_PROJECT": "missing.yaml"}, "$STATECTL_PROJECT"),
    ],
    ids=["flag", "env"],
)
def test_a_named_file_must_exist(tmp_path, flag, env, via):
    with pytest.raises(UsageError) as caught:
        find_project_file(Path(flag) if flag else None, env, tmp_path)
    assert str(caught.value) == f"project file missing.yaml ({via}) does not exist; `statectl init` writes one"


def test_context_without_a_project_file(tmp_path):
    with pytest.raises(UsageError) as caught:
        load(context="prod", env={}, cwd=tmp_path)
    assert str(caught.value).startswith("--context prod: no project file here")


# ---------------------------------------------------------------- loading
def test_contexts_as_loaded(tmp_path):
    _project(tmp_path)
    root = tmp_path.resolve()
    project = load(env={}, cwd=tmp_path)
    assert project.context_name == "dev" and project.context_source == "current-context"
    dev, prod, cluster = project.contexts["dev"], project.contexts["prod"], project.contexts["cluster"]
    assert dev.checkpoint_root == str(root / "cp")
    assert dev.storage == {
        "fs.s3a.endpoint": "http://localhost:9000",
        "fs.s3a.secret.key": "${S3_SECRET}",
        "fs.s3a.access.key": f"@{root}/keys/access",
    }
    assert (prod.client_config, prod.storage_config) == (root / "secrets/prod.properties", root / "s3a.properties")
    assert (prod.spark_remote, prod.checkpoint_root, prod.bootstrap_servers) == (
        "sc://spark:15002",
        "s3a://bucket/cp",
        "kafka:9093",
    )
    assert (cluster.spark_master, cluster.bootstrap_servers) == ("spark://m:7077", None)
    assert dev.checkpoint_for("advanced-state/tombstones") == f"{root}/cp/advanced-state-tombstones"
    assert prod.checkpoint_for("leaderboard") == "s3a://bucket/cp/leaderboard"


BAD = [
    (
        "misspelt-key",
        "contexts:\n  dev:\n    bootstrap_server: x\n",
        ["{f}:3: contexts.dev.bootstrap_server: unknown key (did you mean 'bootstrap_servers'?)"],
    ),
    ("top-level", "context:\n  dev: {}\n", ["{f}:1: context: unknown key (did you mean 'contexts'?)"]),
    (
        "twice",
        "contexts:\n  dev: {}\n  dev: {}\n",
        ["{f}:3: contexts.dev: appears twice (YAML keeps only the last one)"],
    ),
    (
        "wrong-type",
        "contexts:\n  dev:\n    bootstrap_servers: [a, b]\n",
        ["{f}:3: contexts.dev.bootstrap_servers: expected HOST:PORT[,HOST:PORT...], found ['a', 'b']"],
    ),
    (
        "current-names-nothing",
        "current-context: prd\ncontexts:\n  prod: {}\n",
        ["{f}:1: current-context: names no context of the file (contexts: prod) (did you mean 'prod'?)"],
    ),
    (
        "two-sparks",
        "contexts:\n  dev:\n    spark_master: local[*]\n    spark_remote: sc://h:1\n",
        ["{f}:2: contexts.dev: spark_master and spark_remote both say where Spark runs; give one"],
    ),
    (
        "not-sc",
        "contexts:\n  dev:\n    spark_remote: spark://h:7077\n",
        ["{f}:3: contexts.dev.spark_remote: expected a Spark Connect URL sc://HOST:PORT, found 'spark://h:7077'"],
    ),
    (
        "storage-key",
        "contexts:\n  dev:\n    storage:\n      endpoint: x\n",
        ["{f}:3: contexts.dev.storage: expected fs.s3a.* keys (Hadoop's S3A settings), found 'endpoint'"],
    ),
    (
        "context-name",
        "contexts:\n  -dev: {}\n",
        ["{f}:2: contexts.-dev: takes letters, digits, '.', '_' and '-', starting with a letter or digit"],
    ),
    ("yaml", "contexts:\n  dev: [\n", None),
    ("not-a-mapping", "- a\n", ["{f}:1: expected a mapping of keys at the top level, found list"]),
]


@pytest.mark.parametrize("text, expected", [(t, e) for _, t, e in BAD], ids=[i for i, _, _ in BAD])
def test_strict_loading(tmp_path, text, expected):
    path = _project(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load(env={}, cwd=tmp_path)
    if expected is None:
        assert caught.value.problems[0].startswith(f"{path}:")
        assert "YAML syntax error" in caught.value.problems[0]
    else:
        assert caught.value.problems == [e.format(f=path) for e in expected]
    assert caught.value.exit_code == 2


def test_every_problem_together(tmp_path):
    path = _project(tmp_path, "contexts:\n  dev:\n    bootstrap_server: x\n    spark_remote: y\nextra: 1\n")
    with pytest.raises(ConfigError) as caught:
        load(env={}, cwd=tmp_path)
    assert caught.value.problems == [
        f"{path}:3: contexts.dev.bootstrap_server: unknown key (did you mean 'bootstrap_servers'?)",
        f"{path}:4: contexts.dev.spark_remote: expected a Spark Connect URL sc://HOST:PORT, found 'y'",
        f"{path}:5: extra: unknown key (known keys: current-context, contexts, jobs)",
    ]


SECRETS = [
    (
        "storage-secret",
        "contexts:\n  dev:\n    storage:\n      fs.s3a.secret.key: Hunter2Secret\n",
        4,
        "contexts.dev.storage.fs.s3a.secret.key",
    ),
    (
        "access-key",
        "contexts:\n  dev:\n    storage:\n      fs.s3a.access.key: AKIAHunter2\n",
        4,
        "contexts.dev.storage.fs.s3a.access.key",
    ),
    ("unknown-place", "contexts:\n  dev:\n    sasl_password: Hunter2Secret\n", 3, "contexts.dev.sasl_password"),
    (
        "inline-token",
        "contexts:\n  dev:\n    spark_remote: sc://h:15002/;token=Hunter2Secret\n",
        3,
        "contexts.dev.spark_remote",
    ),
    # a properties line in a list where a mapping belongs: the type error would quote the list
    (
        "listed-property",
        "contexts:\n  dev:\n    storage:\n      - fs.s3a.secret.key=Hunter2Secret\n",
        3,
        "contexts.dev.storage",
    ),
]


@pytest.mark.parametrize("text, line, key", [(t, n, k) for _, t, n, k in SECRETS], ids=[i for i, *_ in SECRETS])
def test_a_literal_secret_is_refused_and_never_shown(tmp_path, text, line, key):
    path = _project(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load(env={}, cwd=tmp_path)
    assert caught.value.problems == [
        f"{path}:{line}: {key}: a secret written into the project file; put it in the environment and write "
        f"${{NAME}}, or in a file and write @PATH (the file is committed, the secret must not be)"
    ]
    assert "Hunter2" not in str(caught.value)
    assert redact.scrub(text).count("Hunter2") == 0  # registered: any later message hides it too


def test_references_are_not_secrets(tmp_path):
    _project(
        tmp_path,
        "contexts:\n  dev:\n    storage:\n      fs.s3a.secret.key: ${S}\n"
        "      fs.s3a.session.token: '@tok'\n"
        "      fs.s3a.aws.credentials.provider: org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider\n",
    )
    context = load(env={}, cwd=tmp_path).contexts["dev"]
    (tmp_path / "tok").write_text("the-session-token\n")
    assert context.storage_properties({"S": "s3cr3t-value"}) == {
        "fs.s3a.secret.key": "s3cr3t-value",
        "fs.s3a.session.token": "the-session-token",
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    }
    assert redact.scrub("s3cr3t-value and the-session-token") == "*** and ***"
    with pytest.raises(ConfigError) as caught:
        context.storage_properties({})
    assert (
        str(caught.value)
        == "the project file: contexts.dev.storage: fs.s3a.secret.key: ${S} is not set in the environment"
    )


def test_host_names_and_providers_are_not_inline_secrets(tmp_path):
    _project(
        tmp_path,
        "contexts:\n  dev:\n    bootstrap_servers: kafka-token-1:9092,kafka-token-2:9092\n"
        "    spark_master: spark://secret-master:7077\n",
    )
    assert load(env={}, cwd=tmp_path).contexts["dev"].bootstrap_servers == "kafka-token-1:9092,kafka-token-2:9092"


# ---------------------------------------------------------------- which context
def test_context_precedence(tmp_path):
    _project(tmp_path)
    assert load(env={}, cwd=tmp_path).context_name == "dev"
    record_context(load(env={}, cwd=tmp_path), "cluster")
    assert (tmp_path / ".statectl" / "current-context").read_text() == "cluster\n"
    assert (load(env={}, cwd=tmp_path).context_name, load(env={}, cwd=tmp_path).context_source) == (
        "cluster",
        ".statectl/current-context",
    )
    env = {"STATECTL_CONTEXT": "prod"}
    assert (load(env=env, cwd=tmp_path).context_name, load(env=env, cwd=tmp_path).context_source) == (
        "prod",
        "$STATECTL_CONTEXT",
    )
    chosen = load(context="dev", env=env, cwd=tmp_path)
    assert (chosen.context_name, chosen.context_source, chosen.context.bootstrap_servers) == (
        "dev",
        "--context",
        "localhost:9092",
    )
    assert "current-context" not in (tmp_path / "statectl.yaml").read_text().split("\n", 1)[1]  # file untouched


@pytest.mark.parametrize(
    "context, env, recorded, message",
    [
        (
            "prd",
            {},
            None,
            "context 'prd' (--context) is not in {f} (contexts: cluster, dev, prod) (did you mean 'prod'?)",
        ),
        (
            None,
            {"STATECTL_CONTEXT": "qa"},
            None,
            "context 'qa' ($STATECTL_CONTEXT) is not in {f} (contexts: cluster, dev, prod)",
        ),
        (
            None,
            {},
            "gone",
            "context 'gone' (.statectl/current-context) is not in {f} (contexts: cluster, dev, prod); "
            "`statectl context use NAME` records another",
        ),
    ],
    ids=["flag", "env", "recorded"],
)
def test_an_unknown_context(tmp_path, context, env, recorded, message):
    path = _project(tmp_path)
    if recorded:
        (tmp_path / ".statectl").mkdir()
        (tmp_path / ".statectl" / "current-context").write_text(recorded)
    with pytest.raises(UsageError) as caught:
        load(context=context, env=env, cwd=tmp_path)
    assert str(caught.value) == message.format(f=path.resolve())


def test_use_refuses_an_unknown_context_and_records_nothing(tmp_path):
    _project(tmp_path)
    with pytest.raises(UsageError):
        record_context(load(env={}, cwd=tmp_path), "nope")
    assert not (tmp_path / ".statectl").exists()
    with pytest.raises(UsageError):
        record_context(ActiveProject(), "dev")


def test_active_follows_the_command_line(tmp_path, monkeypatch):
    import statectl.project as project

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STATECTL_CONTEXT", raising=False)
    monkeypatch.delenv("STATECTL_PROJECT", raising=False)
    project.reset()
    assert project.active().file is None
    _project(tmp_path)
    project.choose(None, "prod")
    try:
        assert project.active().context_name == "prod"
        assert project.active() is project.active()  # loaded once per choice
    finally:
        project.reset()


# ---------------------------------------------------------------- the starter file
def test_the_starter_loads_cleanly_and_is_not_overwritten(tmp_path):
    from statectl.project.starter import STARTER, write_starter

    written = write_starter(tmp_path)
    assert (written.path, written.replaced) == (tmp_path / "statectl.yaml", False)
    project = load(env={}, cwd=tmp_path)
    assert (project.context_name, list(project.contexts), project.jobs) == ("local", ["local"], {})
    assert project.context.bootstrap_servers == "localhost:9092"
    written.path.write_text("# mine\n")
    with pytest.raises(UsageError) as caught:
        write_starter(tmp_path)
    assert (
        str(caught.value)
        == f"{tmp_path / 'statectl.yaml'} exists; --force replaces it (its contexts and jobs are lost)"
    )
    assert written.path.read_text() == "# mine\n"
    assert write_starter(tmp_path, force=True).replaced and written.path.read_text() == STARTER


def test_the_starters_commented_context_loads_when_uncommented(tmp_path):
    from statectl.project.starter import STARTER

    lines = STARTER.splitlines()
    start = lines.index("  # staging:")
    uncommented = [line.replace("  # ", "  ", 1) if start <= i < start + 10 else line for i, line in enumerate(lines)]
    _project(tmp_path, "\n".join(uncommented) + "\n")
    staging = load(env={}, cwd=tmp_path).contexts["staging"]
    assert staging.spark_remote == "sc://spark-connect.staging:15002"
    assert staging.storage["fs.s3a.secret.key"] == "${AWS_SECRET_ACCESS_KEY}"


# ---------------------------------------------------------------- the precedence table
def test_the_table_names_every_context_field():
    from dataclasses import fields

    from statectl.project.context import Context
    from statectl.project.precedence import SETTINGS

    named = " ".join(s.context or "" for s in SETTINGS)
    assert [f.name for f in fields(Context) if f.name not in ("name", "line") and f.name not in named] == []


def test_the_table_is_documented():
    from statectl.project.precedence import SETTINGS
    from tests.conftest import REPO

    doc = (REPO / "docs" / "project.md").read_text()
    for setting in SETTINGS:
        row = next((line for line in doc.splitlines() if line.startswith(f"| {setting.name} |")), None)
        assert row is not None, setting.name
        assert f"`{setting.context.split(' ')[0].rstrip(',')}`" in row
        if setting.env:
            assert f"`{setting.env}`" in row


def _cluster(tmp_path, flag=None, env=None, client=None, ctx_bootstrap=None, ctx_client=None, job=None):
    from statectl.cluster.load import load_cluster

    return load_cluster(
        flag,
        client,
        config_bootstrap=job,
        env=env or {},
        context_bootstrap=ctx_bootstrap,
        context_client_config=ctx_client,
        context_source="context dev",
    ).bootstrap


def test_bootstrap_precedence(tmp_path):
    flag_file = tmp_path / "flag.properties"
    flag_file.write_text("bootstrap.servers=flagfile:1\n")
    ctx_file = tmp_path / "ctx.properties"
    ctx_file.write_text("bootstrap.servers=ctxfile:1\n")
    env = {"KAFKA_BOOTSTRAP_SERVERS": "env:1"}
    assert _cluster(tmp_path, "flag:1", env, flag_file, "ctx:1", ctx_file, "job:1") == "flag:1"
    assert _cluster(tmp_path, None, env, flag_file, "ctx:1", ctx_file, "job:1") == "env:1"
    assert _cluster(tmp_path, None, {}, flag_file, "ctx:1", ctx_file, "job:1") == "flagfile:1"
    assert _cluster(tmp_path, None, {}, None, "ctx:1", ctx_file, "job:1") == "ctx:1"
    assert _cluster(tmp_path, None, {}, None, None, ctx_file, "job:1") == "ctxfile:1"
    assert _cluster(tmp_path, None, {}, None, None, None, "job:1") == "job:1"
    assert _cluster(tmp_path) == "localhost:9092"


def test_the_contexts_client_config_is_read_and_the_flags_wins(tmp_path):
    from statectl.cluster.load import load_cluster

    ctx_file = tmp_path / "ctx.properties"
    ctx_file.write_text("security.protocol=SSL\n")
    assert load_cluster(env={}, context_client_config=ctx_file).settings.librdkafka["security.protocol"] == "SSL"
    flag_file = tmp_path / "flag.properties"
    flag_file.write_text("client.id=x\n")
    flags = load_cluster(None, flag_file, env={}, context_client_config=ctx_file).settings.librdkafka
    assert (flags["security.protocol"], flags["client.id"]) == ("PLAINTEXT", "x")  # the flag's file alone
    with pytest.raises(ConfigError) as caught:
        load_cluster(env={}, context_client_config=tmp_path / "gone.properties", context_source="context prod")
    assert (
        str(caught.value) == f"client config {tmp_path / 'gone.properties'} (context prod's client_config) does "
        f"not exist or is not a file"
    )


@pytest.mark.parametrize(
    "flag, master, env, ctx_remote, ctx_master, config_remote, expected",
    [
        ("sc://flag:1", None, "sc://env:1", "sc://ctx:1", None, "sc://cfg:1", ("sc://flag:1", "--remote")),
        (None, "local[2]", "sc://env:1", "sc://ctx:1", None, None, (None, "--master")),
        (None, None, "sc://env:1", "sc://ctx:1", None, "sc://cfg:1", ("sc://env:1", "$SPARK_REMOTE")),
        (None, None, None, "sc://ctx:1", None, "sc://cfg:1", ("sc://ctx:1", "spark_remote of the project's context")),
        (None, None, None, None, "spark://m:7077", "sc://cfg:1", (None, "spark_master of the project's context")),
        (None, None, None, None, None, "sc://cfg:1", ("sc://cfg:1", "spark.remote in the config")),
        (None, None, None, None, None, None, (None, "no engine is up")),
    ],
    ids=["flag", "master-flag", "env", "context-remote", "context-master", "job-config", "default"],
)
def test_engine_precedence(flag, master, env, ctx_remote, ctx_master, config_remote, expected):
    from statectl.config.engine_choice import choose_engine

    choice = choose_engine(
        flag, master, env, config_remote, "local[*]", None, context_remote=ctx_remote, context_master=ctx_master
    )
    assert (choice.remote, choice.why) == expected


def test_spark_target_passes_the_context_on_as_a_run_takes_it(tmp_path):
    from statectl.project.context import Context
    from statectl.project.precedence import spark_target

    remote_ctx = Context("prod", spark_remote="sc://ctx:1")
    master_ctx = Context("cluster", spark_master="spark://m:7077")
    no_engine = {"STATECTL_ENGINE_DIR": str(tmp_path)}
    assert spark_target(None, None, None, remote_ctx, no_engine) == ("sc://ctx:1", None)
    assert spark_target(None, None, None, master_ctx, no_engine) == (None, "spark://m:7077")
    assert spark_target(None, None, None, remote_ctx, {**no_engine, "SPARK_REMOTE": "sc://env:1"}) == (None, None)
    assert spark_target("none", None, None, remote_ctx, no_engine) == ("none", None)
    assert spark_target(None, "local[1]", None, master_ctx, no_engine) == (None, "local[1]")
    assert spark_target(None, None, None, Context("dev"), no_engine) == (None, None)


def test_storage_precedence(tmp_path, monkeypatch):
    from statectl.project.context import Context
    from statectl.project.precedence import context_storage
    from statectl.storage.settings import from_spark_conf, read_storage_config

    ctx_file = tmp_path / "ctx.properties"
    ctx_file.write_text("fs.s3a.endpoint=http://file:9000\nfs.s3a.path.style.access=true\n")
    flag_file = tmp_path / "flag.properties"
    flag_file.write_text("fs.s3a.path.style.access=false\n")
    context = Context(
        "dev",
        storage_config=ctx_file,
        storage={"fs.s3a.endpoint": "http://inline:9000", "fs.s3a.endpoint.region": "eu"},
    )
    job = from_spark_conf(
        {"spark.hadoop.fs.s3a.endpoint.region": "us", "spark.hadoop.fs.s3a.connection.maximum": "9"}, "job"
    )
    merged = job.merged(context_storage(context)).merged(read_storage_config(flag_file, env={}))
    assert dict(merged.properties) == {
        "fs.s3a.endpoint.region": "eu",
        "fs.s3a.connection.maximum": "9",
        "fs.s3a.endpoint": "http://inline:9000",
        "fs.s3a.path.style.access": "false",
    }


def test_resolve_job_reads_project_jobs_and_the_contexts_checkpoint(tmp_path, monkeypatch):
    import shutil

    import statectl.project as project
    from statectl.checkpoint.lock import checkpoint_for
    from statectl.cli.common import resolve_job
    from statectl.jobs.registry import default_config

    (tmp_path / "configs").mkdir()
    shutil.copy(default_config("advanced-state/sales-threshold"), tmp_path / "configs" / "sales.yaml")
    shutil.copy(default_config("advanced-state/sales-threshold"), tmp_path / "configs" / "sales-eu.yaml")
    _project(
        tmp_path,
        "current-context: dev\ncontexts:\n  dev:\n    checkpoint_root: cps\n  bare: {}\n"
        "jobs:\n  sales: configs/sales.yaml\n  sales-eu: configs/sales-eu.yaml\n",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STATECTL_CONTEXT", raising=False)
    monkeypatch.delenv("STATECTL_PROJECT", raising=False)
    project.reset()
    try:
        resolved = resolve_job("sales", None, None)
        assert (resolved.id, resolved.config_path) == (
            "advanced-state/sales-threshold",
            tmp_path.resolve() / "configs" / "sales.yaml",
        )
        # a project job's checkpoint is named after it: two jobs over one shipped job share none
        assert checkpoint_for(resolved.config, None) == tmp_path.resolve() / "cps" / "sales"
        assert (
            checkpoint_for(resolve_job("sales-eu", None, None).config, None) == tmp_path.resolve() / "cps" / "sales-eu"
        )
        # --config naming a project job's file finds the same checkpoint as its name
        assert resolve_job(None, None, Path("configs/sales-eu.yaml")).config.checkpoint_dir == str(
            tmp_path.resolve() / "cps" / "sales-eu"
        )
        assert checkpoint_for(resolved.config, Path("/flag")) == Path("/flag")  # the flag still wins
        shipped = resolve_job("leaderboard", None, None)
        assert shipped.config.checkpoint_dir == str(tmp_path.resolve() / "cps" / "leaderboard")
        # and its events file (`statectl ui` reads it) too, by the same name
        assert (resolved.name, resolve_job(None, None, Path("configs/sales-eu.yaml")).name, shipped.name) == (
            "sales",
            "sales-eu",
            "leaderboard",
        )
        # --set checkpoint_dir=... is a flag: it goes over the context's root too
        assert resolve_job("leaderboard", None, None, ["checkpoint_dir=/set"]).config.checkpoint_dir == "/set"
        assert resolve_job("sales", None, None, ["checkpoint_dir=/set"]).config.checkpoint_dir == "/set"
        project.choose(None, "bare")
        # a context without a root: the job config's own checkpoint_dir
        assert resolve_job("leaderboard", None, None).config.checkpoint_dir == ".statectl/checkpoints/leaderboard"
        with pytest.raises(UsageError):
            resolve_job("nosuchjob", None, None)
    finally:
        project.reset()
