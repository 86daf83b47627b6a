"""`statectl dlq replay` without a broker: the letters per transaction, the report's JSON and the
lines it prints, and the isolation level every reader asks for.

Bad inputs tried: a commit interval of 0, a negative one, one that is not a number, an empty one.
"""

from __future__ import annotations

import json

import pytest

from statectl.dlq.replay import COMMIT_EVERY, COMMIT_EVERY_ENV, ReplayReport, commit_every, replay_group
from statectl.errors import UsageError


@pytest.mark.parametrize(
    "environ, expected",
    [
        ({}, COMMIT_EVERY),
        ({COMMIT_EVERY_ENV: ""}, COMMIT_EVERY),
        ({COMMIT_EVERY_ENV: " 150 "}, 150),
        ({COMMIT_EVERY_ENV: "1"}, 1),
    ],
    ids=["unset", "empty", "spaces", "one"],
)
def test_letters_per_transaction(environ, expected):
    assert commit_every(environ) == expected


@pytest.mark.parametrize("raw", ["0", "-5", "ten", "1.5"], ids=["zero", "negative", "text", "fraction"])
def test_a_commit_interval_that_is_no_positive_whole_number_is_refused(raw):
    with pytest.raises(UsageError) as info:
        commit_every({COMMIT_EVERY_ENV: raw})
    assert str(info.value) == (
        f"{COMMIT_EVERY_ENV}={raw!r} is not a positive whole number of letters; unset it for the default (5,000)"
    )


def test_the_group_is_also_the_transactional_id_and_the_json_names_it():
    group = replay_group("leaderboard-dlq", "unknown_player")
    assert group == "statectl-dlq-replay.leaderboard-dlq.unknown_player"
    report = ReplayReport(
        "leaderboard-dlq",
        "unknown_player",
        False,
        group,
        group,
        read=7,
        matched=2,
        sent={"score-events": 2},
        replayed_before=4,
    )
    assert report.to_dict() == {
        "topic": "leaderboard-dlq",
        "reason": "unknown_player",
        "dryRun": False,
        "group": group,
        "transactionalId": group,
        "read": 7,
        "matched": 2,
        "sent": 2,
        "sentByTopic": {"score-events": 2},
        "skippedTruncated": 0,
        "skippedNoTopic": 0,
        "notLetters": 0,
        "replayedBefore": 4,
        "stopped": False,
    }


def _printed(report, capsys) -> tuple[str, str]:
    from statectl.render.dlq import replay_report

    replay_report(report, as_json=False)
    captured = capsys.readouterr()
    return captured.out, captured.err


@pytest.mark.parametrize(
    "report, stdout, stderr",
    [
        (
            ReplayReport("d", "r", False, "g", "g", read=3, matched=2, sent={"t": 2}, replayed_before=5),
            "r: 2 of 3 letters read; sent 2 to t (group g)\n",
            "earlier replays (group g) passed the 5 offsets before these; an offset range replays them again\n",
        ),
        (
            ReplayReport("d", "r", False, None, None, read=3, matched=2, sent={"t": 2}),
            "r: 2 of 3 letters read; sent 2 to t\n",
            "an offset range is sent without a transaction: running it again sends its letters again\n",
        ),
        (
            ReplayReport("d", "r", True, "g", None, read=3, matched=2, sent={"t": 2}),
            "r: 2 of 3 letters read; would send 2 to t\n",
            "",
        ),
        (
            ReplayReport("d", "r", False, "g", "g", read=1, matched=1, sent={"t": 1}, stopped=True),
            "r: 1 of 1 letter read; sent 1 to t (group g)\n",
            "stopped (Ctrl-C): what was sent is committed; run again to go on\n",
        ),
    ],
    ids=["group-after-earlier-replays", "offset-range", "dry-run", "ctrl-c"],
)
def test_the_report_says_offsets_not_letters_and_when_a_range_is_not_transactional(report, stdout, stderr, capsys):
    """`replayedBefore` counts offsets (a transaction's marker takes one), so the line says offsets."""
    assert _printed(report, capsys) == (stdout, stderr)


@pytest.mark.parametrize("read_committed, level", [(True, "read_committed"), (False, "read_uncommitted")])
def test_readers_ask_for_their_isolation_level_explicitly(read_committed, level):
    from statectl.adapters.kafka.consume import isolation

    assert isolation(read_committed) == {"isolation.level": level}


def test_read_uncommitted_reaches_every_reader_from_its_command(monkeypatch):
    """`consume`, `query leaderboard` and `dlq show`/`replay` hand --read-uncommitted to their core call."""
    from typer.testing import CliRunner

    from statectl.cli.main import app

    seen = {}

    def fake_consume(request, emit, announce=None):
        from statectl.query.consume import ConsumeSummary

        seen["consume"] = request.read_committed
        return ConsumeSummary(request.topic, 0, "end")

    def fake_show(cluster, topic, samples, read_committed=True):
        from statectl.dlq.letters import DlqSummary

        seen["show"] = read_committed
        return DlqSummary(topic)

    def fake_replay(request, stop=None, progress=None):
        seen["replay"] = request.read_committed
        return ReplayReport(request.topic, request.reason, request.dry_run, None)

    monkeypatch.setattr("statectl.query.consume.consume", fake_consume)
    monkeypatch.setattr("statectl.dlq.replay.show", fake_show)
    monkeypatch.setattr("statectl.dlq.replay.replay", fake_replay)
    runner = CliRunner()
    for flags, committed in (([], True), (["--read-uncommitted"], False)):
        assert runner.invoke(app, ["consume", "t", "--from-beginning", "-b", "b:1", *flags]).exit_code == 0
        assert runner.invoke(app, ["dlq", "show", "t", "--json", "-b", "b:1", *flags]).exit_code == 0
        result = runner.invoke(app, ["dlq", "replay", "t", "--reason", "r", "--json", "-b", "b:1", *flags])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["transactionalId"] is None
        assert seen == {"consume": committed, "show": committed, "replay": committed}
