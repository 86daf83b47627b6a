"""The Kafka-facing commands without a broker: a closed port, `kafka down --port`, how `consume`
turns records into JSON lines, and the unknown-game message of `query leaderboard`."""

from __future__ import annotations

import json
import socket

import pytest

from statectl.adapters.kafka.consume import ConsumedRecord


@pytest.fixture
def closed_port():
    """A loopback port that refuses connections: bound, never listening, held for the test."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


@pytest.mark.parametrize(
    "args",
    [
        ["topic-config", "players"],
        ["produce-test-data", "leaderboard"],
        ["query", "leaderboard"],
        ["serve", "leaderboard", "--port", "0"],
        ["run", "leaderboard", "--available-now"],
        ["consume", "high-scores", "--from-beginning"],
    ],
    ids=["topic-config", "produce-test-data", "query", "serve", "run", "consume"],
)
def test_a_closed_port_fails_at_once_with_the_same_one_line_error(cli, closed_port, args):
    """Bad input: -b naming a port nothing listens on. topic-config said so at once, while
    produce-test-data, query, serve and run waited out the client's 5 s reach timeout and then
    said something else ("within 5 s")."""
    bootstrap = f"127.0.0.1:{closed_port}"
    result = cli(*args, "-b", bootstrap)
    assert result.exit_code == 1
    # (produce-test-data's progress display, empty when no topic started, leaves a blank line
    # on a stderr that is not a terminal)
    assert [line for line in result.stderr.splitlines() if line.strip()] == [
        f"error: cannot reach Kafka at {bootstrap}: connection refused; is the broker running? "
        "(start a local one with `statectl kafka up`, or pass --bootstrap-servers)"
    ]
    assert result.stdout == ""


def test_every_bootstrap_address_is_named_with_its_reason(cli, closed_port):
    """Bad input: two bootstrap addresses, one that does not resolve and one closed port."""
    bootstrap = f"no-such-host.invalid:9092,127.0.0.1:{closed_port}"
    result = cli("query", "leaderboard", "-b", bootstrap)
    assert result.exit_code == 1
    assert (
        f"cannot reach Kafka at {bootstrap} (no-such-host.invalid:9092: host 'no-such-host.invalid' "
        f"does not resolve; 127.0.0.1:{closed_port}: connection refused)"
    ) in result.stderr


def test_kafka_down_takes_port_like_up(cli, closed_port, tmp_path):
    """Bad input: `kafka down --port` (refused as "No such option" before) for a port no broker
    is on, with and without --data-dir, and for a port another process holds."""
    from statectl.adapters.local.broker import free_port

    port = free_port()
    result = cli("kafka", "down", "--port", str(port))
    assert result.exit_code == 0, result.output
    assert result.stderr.strip() == f"No Kafka broker is running on port {port}."
    result = cli("kafka", "down", "--port", str(port), "--data-dir", str(tmp_path / "kafka"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["running"] is False
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        result = cli("kafka", "down", "--port", str(busy))
    assert result.exit_code == 2
    assert f"port {busy} is in use by a process that is not a broker statectl started" in result.stderr


# ---------------------------------------------------------------- consume: records as JSON lines
def _record(
    key: bytes | None, value: bytes | None, timestamp: int | None = 1_700_000_000_000, headers=None
) -> ConsumedRecord:
    return ConsumedRecord("leaderboard-dlq", 2, 41, key, value, timestamp, headers)


@pytest.mark.parametrize(
    "key, value, expected_key, expected_value",
    [
        (
            b"3",
            b'{"reason": "unknown_player", "sourceOffset": 7}',
            "3",
            {"reason": "unknown_player", "sourceOffset": 7},
        ),
        (None, b'[{"playerId": 3}]', None, [{"playerId": 3}]),
        (b"1", b"check-in", "1", "check-in"),
        (b"1", b"{not json", "1", "{not json"),
        (b"1", b'{"score": NaN}', "1", '{"score": NaN}'),
        (b"1", b"42", "1", 42),
        (b"1", None, "1", None),
        (b"\xff\x00k", b"caf\xc3\xa9 \xff", "\\xff\x00k", "caf\u00e9 \\xff"),
        (b"", b"", "", ""),
    ],
    ids=[
        "json-object",
        "no-key",
        "text",
        "malformed-json",
        "nan-stays-text",
        "json-number",
        "tombstone",
        "not-utf8",
        "empty",
    ],
)
def test_a_record_becomes_one_json_line(key, value, expected_key, expected_value):
    """Bad inputs: values that are not JSON, malformed JSON, NaN (not JSON, so it must stay text
    for the line to parse), bytes that are not UTF-8, a tombstone, an empty key and value."""
    from statectl.query.consume import record_json

    line = json.dumps(record_json(_record(key, value)))
    assert json.loads(line) == {
        "topic": "leaderboard-dlq",
        "partition": 2,
        "offset": 41,
        "timestamp": 1_700_000_000_000,
        "key": expected_key,
        "value": expected_value,
        "headers": [],
    }
    assert "NaN" not in line or isinstance(expected_value, str)


@pytest.mark.parametrize(
    "headers, expected",
    [
        (None, []),
        ([("statectl.batch", b"7")], [["statectl.batch", "7"]]),
        ([("a", b"1"), ("b", None), ("a", b"2")], [["a", "1"], ["b", None], ["a", "2"]]),
        ([("bin", b"\x00\xfe")], [["bin", "\x00\\xfe"]]),
    ],
    ids=["none", "batch-header", "repeated-name-and-null", "not-utf8"],
)
def test_headers_are_name_value_pairs_in_their_order(headers, expected):
    """Bad inputs: a header name given twice (an object would lose one), a null header value,
    bytes that are not UTF-8."""
    from statectl.query.consume import record_json

    assert json.loads(json.dumps(record_json(_record(b"k", b"1", headers=headers))))["headers"] == expected


def test_the_start_message_says_what_the_read_does():
    """The three modes: from the end (following), from the beginning, from the beginning then following."""
    from statectl.query.consume import ConsumeRequest, start_message

    at_end = ConsumeRequest("b:1", "leaderboard-dlq")
    assert at_end.follows
    assert start_message(at_end, 3, 12, 0) == (
        "following leaderboard-dlq (3 partitions) from its end (up to 12 earlier records: add --from-beginning "
        "to see them); Ctrl-C to stop"
    )
    whole = ConsumeRequest("b:1", "leaderboard-dlq", from_beginning=True)
    assert not whole.follows
    assert start_message(whole, 1, 0, 1) == "reading leaderboard-dlq (1 partition) from the beginning (up to 1 record)"
    then_follow = ConsumeRequest("b:1", "leaderboard-dlq", from_beginning=True, follow=True)
    assert then_follow.follows


@pytest.mark.parametrize(
    "request_args, before, to_end, expected",
    [
        ({"from_beginning": True}, 0, 0, "reading t (2 partitions) from the beginning (no records)"),
        ({"from_beginning": True}, 0, 5, "reading t (2 partitions) from the beginning (up to 5 records)"),
        (
            {"from_beginning": True, "read_committed": False},
            0,
            5,
            "reading t (2 partitions, uncommitted records too) from the beginning (up to 5 records)",
        ),
        (
            {"from_beginning": True, "follow": True},
            0,
            0,
            "reading t (2 partitions) from the beginning (no records so far), then following; Ctrl-C to stop",
        ),
        (
            {},
            1,
            0,
            "following t (2 partitions) from its end (up to 1 earlier record: add --from-beginning to see "
            "them); Ctrl-C to stop",
        ),
    ],
    ids=["empty", "offsets-not-records", "read-uncommitted", "follow-empty", "one-earlier"],
)
def test_the_start_message_counts_offsets_as_up_to_records(request_args, before, to_end, expected):
    """A transactional topic's markers take offsets: 5 offsets may be 3 records and 2 markers, so
    the message never claims they are records."""
    from statectl.query.consume import ConsumeRequest, start_message

    assert start_message(ConsumeRequest("b:1", "t", **request_args), 2, before, to_end) == expected


# ---------------------------------------------------------------- query: an unknown game
def test_an_unknown_game_names_a_few_known_ids_and_how_many():
    """Bad input: game 999 of a view with 100 games (all 100 ids were listed), and of an empty view."""
    from statectl.errors import UsageError
    from statectl.query.views import select_game

    view = {str(i): [] for i in range(1, 101)}
    with pytest.raises(UsageError) as info:
        select_game(view, "999")
    assert str(info.value) == (
        "no leaderboard for product '999' (did you mean '99'?); 100 games known: 1, 2, 3, 4, 5 and 95 more"
    )
    with pytest.raises(UsageError) as info:
        select_game({"1": [], "6": []}, "7")
    assert str(info.value) == "no leaderboard for product '7'; 2 games known: 1, 6"
    with pytest.raises(UsageError) as info:
        select_game({}, "7")
    assert str(info.value) == "no leaderboard for product '7'; no game has a leaderboard yet"
