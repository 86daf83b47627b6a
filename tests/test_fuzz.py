"""Fuzzed inputs: every reader of a file a user hands statectl, on mutated real files. The property
is the same everywhere: a clear finding or a one-line error (a StatectlError, exit 1 or 2) —
never a traceback, never a hang (each case runs under an alarm), never a write (the files around
are fingerprinted before and after).

What is fuzzed, from real files:
- checkpoints, through the whole `statectl inspect-state --verify all --json`: the offset and commit
  logs, `metadata`, operator metadata v1 and v2, the v2 and v3 state schema files, RocksDB
  changelogs v1 to v4 (PySpark 4.2's own files, tests/data/spark-4.2-state-files), the snapshot
  zip, HDFS delta and snapshot files, checkpoint format 2's checksum sidecars;
- job configs (`load_job_config`, every shipped config), the topics file, `client.properties`
  (no secret may show in the error), the events file (`events summarize`), and the lines of
  `produce-test-data --file` (with and without keys).

Mutations: bits flipped, bytes inserted, deleted, replaced, the file cut short or emptied,
replaced by random bytes or random text, a line duplicated or dropped; for text files also
random text spliced in. Cases per reader: FUZZ_EXAMPLES (default 150; STATECTL_FUZZ_EXAMPLES=N
runs more, as the closing note's counts did). Hypothesis runs derandomized (the same cases on
every run) and keeps no database in the tree.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statectl.errors import StatectlError
from tests.checkpoint_factory import OperatorSpec, build_checkpoint, tree_fingerprint
from tests.conftest import REPO

FUZZ_EXAMPLES = int(os.environ.get("STATECTL_FUZZ_EXAMPLES", "150"))
#: A case slower than this is a hang.
CASE_SECONDS = 20
DATA = REPO / "tests" / "data"
REAL_STATE = DATA / "spark-4.2-state-files"

FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@contextlib.contextmanager
def no_hang(what: str):
    """Fail, instead of waiting for ever, when one case takes longer than CASE_SECONDS."""

    def expired(signum, frame):
        raise AssertionError(f"{what} still running after {CASE_SECONDS} s: a hang")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(CASE_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------- mutations
def _flip(data: bytes, draw) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 8))):
        i = draw(st.integers(0, len(out) - 1))
        out[i] ^= draw(st.integers(1, 255))
    return bytes(out)


def _insert(data: bytes, draw) -> bytes:
    i = draw(st.integers(0, len(data)))
    return data[:i] + draw(st.binary(min_size=1, max_size=64)) + data[i:]


def _delete(data: bytes, draw) -> bytes:
    if not data:
        return data
    i = draw(st.integers(0, len(data) - 1))
    return data[:i] + data[i + draw(st.integers(1, 64)) :]


def _truncate(data: bytes, draw) -> bytes:
    return data[: draw(st.integers(0, max(len(data) - 1, 0)))]


def _lines(data: bytes, draw) -> bytes:
    lines = data.split(b"\n")
    i = draw(st.integers(0, len(lines) - 1))
    if draw(st.booleans()):
        lines.insert(i, lines[i])
    else:
        del lines[i]
    return b"\n".join(lines)


def _splice_text(data: bytes, draw) -> bytes:
    i = draw(st.integers(0, len(data)))
    text = draw(st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=40)).encode()
    return data[:i] + text + data[i + draw(st.integers(0, 8)) :]


MUTATIONS = {
    "flip": _flip,
    "insert": _insert,
    "delete": _delete,
    "truncate": _truncate,
    "lines": _lines,
    "splice": _splice_text,
    "empty": lambda data, draw: b"",
    "random-bytes": lambda data, draw: draw(st.binary(max_size=512)),
    "random-text": lambda data, draw: draw(st.text(max_size=300)).encode(),
}


@st.composite
def mutated(draw, data: bytes) -> tuple[str, bytes]:
    name = draw(st.sampled_from(sorted(MUTATIONS)))
    return name, MUTATIONS[name](data, draw)


def assert_one_line_error(exc: StatectlError) -> None:
    text = str(exc)
    assert "Traceback" not in text
    assert text.strip(), "an error without a message"
    # A config error lists its problems one per line; any other error is one line.
    if not hasattr(exc, "problems"):
        assert "\n" not in text.strip(), text


# ---------------------------------------------------------------- checkpoints
def _replace(path: Path, source: Path) -> None:
    path.write_bytes(source.read_bytes())


def _base_checkpoints(root: Path) -> dict[str, Path]:
    """Checkpoints holding real files: PySpark's own logs, metadata and schema files (the
    leaderboard's 0.3 checkpoint) and its state files (changelogs v1-v4, a snapshot zip, HDFS
    delta and snapshot) in place of the synthetic ones, without sidecar checksums (so that the
    decoders, not a checksum, meet the damage) except in format 2 (its JSON sidecars are fuzzed too)."""
    bases = {}
    lb = root / "leaderboard"
    shutil.copytree(DATA / "leaderboard-0.3-checkpoint", lb)
    (lb / "state" / "0" / "0").mkdir(parents=True)
    _replace(lb / "state" / "0" / "0" / "1.changelog", REAL_STATE / "rocksdb-v2.changelog")
    bases["leaderboard"] = lb

    rocks = build_checkpoint(root / "rocksdb", batches=2, crc=False, snapshot_every=2).root
    _replace(rocks / "state" / "0" / "0" / "1.changelog", REAL_STATE / "rocksdb-v1.changelog")
    _replace(rocks / "state" / "0" / "1" / "1.changelog", REAL_STATE / "rocksdb-v1-deletes.changelog")
    _replace(rocks / "state" / "0" / "0" / "2.zip", REAL_STATE / "rocksdb.zip")
    bases["rocksdb"] = rocks

    hdfs = build_checkpoint(root / "hdfs", batches=2, crc=False, provider="hdfs", snapshot_every=2).root
    _replace(hdfs / "state" / "0" / "0" / "1.delta", REAL_STATE / "hdfs.delta")
    _replace(hdfs / "state" / "0" / "0" / "2.snapshot", REAL_STATE / "hdfs.snapshot")
    bases["hdfs"] = hdfs

    built = build_checkpoint(
        root / "format2",
        batches=2,
        crc=False,
        format_version=2,
        operators=(OperatorSpec(state_variables=(("top", "MapState", False),)),),
    )
    store = built.root / "state" / "0" / "0"
    for version, real in ((1, "rocksdb-v3.changelog"), (2, "rocksdb-v4.changelog")):
        target = store / f"{version}_{built.unique_ids[(0, 0, 'default')][version]}.changelog"
        _replace(target, REAL_STATE / real)
    bases["format2"] = built.root
    return bases


def _checkpoint_files(base: Path) -> list[str]:
    return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file() and not p.name.endswith(".sst"))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    bases = _base_checkpoints(tmp_path_factory.mktemp("fuzz-bases"))
    return {name: (path, _checkpoint_files(path)) for name, path in bases.items()}


def _inspect(runner, app, checkpoint: Path):
    return runner.invoke(app, ["inspect-state", str(checkpoint), "--verify", "all", "--json"])


def test_the_base_checkpoints_read_cleanly(checkpoints):
    """Before fuzzing: every base checkpoint is read without an error, so a case that fails is
    the mutation's doing."""
    from typer.testing import CliRunner

    from statectl.cli.main import app

    for name, (path, files) in checkpoints.items():
        result = _inspect(CliRunner(), app, path)
        assert result.exit_code in (0, 1), (name, result.stderr)
        json.loads(result.stdout)
        assert any(f.endswith((".changelog", ".delta")) for f in files), name


@FUZZ
@given(data=st.data())
def test_inspect_state_on_a_mutated_checkpoint_file_gives_a_finding_or_one_line(checkpoints, tmp_path_factory, data):
    from typer.testing import CliRunner

    from statectl.cli.main import app

    base_name = data.draw(st.sampled_from(sorted(checkpoints)), label="checkpoint")
    base, files = checkpoints[base_name]
    rel = data.draw(st.sampled_from(files), label="file")
    work = tmp_path_factory.mktemp("case") / "ckpt"
    shutil.copytree(base, work)
    mutation, damaged = data.draw(mutated((base / rel).read_bytes()), label="mutation")
    (work / rel).write_bytes(damaged)
    before = tree_fingerprint(work)
    with no_hang(f"inspect-state on {base_name}/{rel} ({mutation})"):
        result = _inspect(CliRunner(), app, work)
    # An exception that escaped would have failed the invoke (caught as result.exception).
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{base_name}/{rel} ({mutation}): {result.exception!r}"
    )
    assert result.exit_code in (0, 1, 2), (rel, mutation, result.exit_code, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    if result.stdout.strip():
        json.loads(result.stdout)  # --json: valid JSON or nothing
    else:
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr  # the one-line error
    assert tree_fingerprint(work) == before, f"inspect-state wrote into the checkpoint ({rel}, {mutation})"
    shutil.rmtree(work.parent)


# ---------------------------------------------------------------- files users write
CONFIGS = sorted(p for p in (REPO / "statectl" / "jobs" / "configs").rglob("*.yaml") if p.name != "topics.yaml")


def _read_and_check(path: Path, read, what: str, secrets=lambda: ()) -> None:
    """``read(path)`` returns, or raises a StatectlError with a clear message; no other
    exception, no hang, nothing written beside the file, and none of ``secrets()`` (asked after
    the read) in the message as statectl prints it (scrubbed of the secrets it registered)."""
    from statectl import redact

    before = tree_fingerprint(path.parent)
    redact.forget_all()  # only what this file's own reading registered may hide its secrets
    with no_hang(what):
        try:
            read(path)
        except StatectlError as exc:
            assert_one_line_error(exc)
            printed = redact.scrub(str(exc))
            for secret in secrets():
                assert secret not in printed, f"a secret in the error: {printed}"
    assert tree_fingerprint(path.parent) == before, f"reading {what} wrote a file"


def _mutated_copy(data, tmp_path_factory, sources: list[Path], what: str) -> tuple[Path, str]:
    """A mutated copy of one of ``sources`` in a fresh directory, and how to name the case."""
    source = data.draw(st.sampled_from(sources), label=what)
    mutation, damaged = data.draw(mutated(source.read_bytes()), label="mutation")
    path = tmp_path_factory.mktemp("fuzz") / source.name
    path.write_bytes(damaged)
    return path, f"{what} {source.name} ({mutation})"


@FUZZ
@given(data=st.data())
def test_a_mutated_job_config_loads_or_says_what_is_wrong(tmp_path_factory, data):
    from statectl.jobs.registry import load_job_config

    path, case = _mutated_copy(data, tmp_path_factory, CONFIGS, "config")
    _read_and_check(path, lambda p: load_job_config(p, []), case)


TOPICS_FILES = sorted((DATA / "topics" / "valid").glob("*.yaml")) + [
    REPO / "statectl" / "jobs" / "configs" / "topics.yaml"
]


@FUZZ
@given(data=st.data())
def test_a_mutated_topics_file_loads_or_says_what_is_wrong(tmp_path_factory, data):
    from statectl.topics.topics_file import load_topics_file

    path, case = _mutated_copy(data, tmp_path_factory, TOPICS_FILES, "topics file")
    _read_and_check(path, load_topics_file, case)


PASSWORD = "s3cr3t-Pa55w0rd"
CLIENT_PROPERTIES = (
    "bootstrap.servers=broker-1:9093,broker-2:9093\n"
    "security.protocol=SASL_SSL\n"
    "sasl.mechanism=SCRAM-SHA-512\n"
    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
    f'username="app" password="{PASSWORD}";\n'
    "ssl.truststore.location=truststore.jks\n"
    f"ssl.truststore.password={PASSWORD}\n"
    "client.id=statectl-tests\n"
).encode()


@FUZZ
@given(data=st.data())
def test_a_mutated_client_properties_file_loads_or_says_what_is_wrong_without_its_secrets(tmp_path_factory, data):
    from statectl.cluster.load import load_cluster

    mutation, damaged = data.draw(mutated(CLIENT_PROPERTIES), label="mutation")
    path = tmp_path_factory.mktemp("props") / "client.properties"
    path.write_bytes(damaged)
    _read_and_check(
        path,
        lambda p: load_cluster(client_config=p, env={}),
        f"client.properties ({mutation})",
        secrets=lambda: secrets_in(damaged),
    )


def secrets_in(properties: bytes) -> list[str]:
    """The secrets a (mutated) properties file still holds as secrets: the values of properties
    named like one, and a JAAS line's password. (A mutation can also turn a password into, say,
    a trust store path — "ssl.truststore.location=s3cr3t..." — which no reader can tell from a path.)"""
    import re

    from statectl.redact import is_secret_key

    found = []
    for line in properties.decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if is_secret_key(key.strip()) and len(value.strip()) >= 8:
            found.append(value.strip())
        found += [m for m in re.findall(r'password="([^"]{8,})"', value)]
    return [f for f in found if "required" not in f]  # a whole JAAS line is masked by its parts


#: Two real runs of the leaderboard (the second restores its state: restore events).
EVENTS_FILES = [DATA / "events" / "leaderboard-runs.jsonl"]


@FUZZ
@given(data=st.data())
def test_a_mutated_events_file_is_summarized_or_refused_in_one_line(tmp_path_factory, data):
    from typer.testing import CliRunner

    from statectl.cli.main import app

    path, case = _mutated_copy(data, tmp_path_factory, EVENTS_FILES, "events file")
    before = tree_fingerprint(path.parent)
    with no_hang(f"events summarize: {case}"):
        result = CliRunner().invoke(app, ["events", "summarize", str(path), "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1, 2) and "Traceback" not in result.stderr
    if result.exit_code == 0:
        json.loads(result.stdout)
    assert tree_fingerprint(path.parent) == before


PRODUCE_LINES = (
    b'{"score": 1000, "product_id": 1, "player_id": 1}\n'
    b'k-1\t{"score": 42.5, "product_id": 6, "player_id": 4}\n'
    b"\n"
    b"plain text line \xc3\xa9\n"
    b"k-2\t\n"
)


@FUZZ
@given(data=st.data(), parse_key=st.booleans(), separator=st.sampled_from(["\t", ",", "|"]))
def test_mutated_produce_file_lines_parse_or_are_refused_in_one_line(data, parse_key, separator):
    from statectl.produce.datasets import parse_lines

    mutation, damaged = data.draw(mutated(PRODUCE_LINES), label="mutation")
    with no_hang(f"produce --file lines ({mutation})"):
        try:
            parsed = parse_lines(damaged, parse_key=parse_key, separator=separator, source="fuzz.txt")
        except StatectlError as exc:
            assert_one_line_error(exc)
            return
    # Every line is accounted for: a record, or a blank line skipped and counted.
    lines = damaged.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    assert len(parsed) + parsed.skipped_empty == len(lines)
