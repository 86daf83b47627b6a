"""A run warns, with the count, when its dead-letter rate jumps.

Inputs tried: a first batch that is mostly dead letters (a reprocessing run on compacted tables),
a second such batch (warned once per run only), a batch under the minimum count, a run whose
earlier batches already had that share (no jump), a batch without input, and a summary above
and below the 1 % share.
"""

from __future__ import annotations

import io

from rich.console import Console

from statectl.render.run import PlainRunLines, dead_letters_jump_text, run_summary
from statectl.run.events_file import validate_event
from statectl.run.lifecycle import DeadLetterWatch
from statectl.run.runner import RunSummary


def _batch(batch_id: int, rows: int, **dropped: int) -> dict:
    return {
        "type": "batch_progress",
        "time": 1_700_000_000.0 + batch_id,
        "query_id": "q",
        "run_id": "r",
        "batch_id": batch_id,
        "input_rows": rows,
        "observed": {"statectl": {"output_rows": rows, **{f"dropped_{k}": v for k, v in dropped.items()}}},
    }


def test_a_first_batch_of_dead_letters_is_a_jump_warned_once():
    watch = DeadLetterWatch()
    event = watch.after(_batch(0, 4_400_000, unknown_player=1_400_024, malformed_json=0))
    assert event is not None and event["type"] == "dead_letters_jump"
    assert (event["letters"], event["input_rows"], event["by_reason"]) == (
        1_400_024,
        4_400_000,
        {"unknown_player": 1_400_024},
    )
    assert watch.after(_batch(1, 1000, unknown_player=900)) is None


def test_no_warning_below_the_minimum_or_without_a_jump():
    assert DeadLetterWatch().after(_batch(0, 100, unknown_player=50)) is None  # under 100 letters
    assert DeadLetterWatch().after(_batch(0, 1_000_000, unknown_player=200)) is None  # 0.02 %
    assert DeadLetterWatch().after(_batch(0, 0)) is None
    steady = DeadLetterWatch()
    assert steady.after(_batch(0, 90, unknown_player=45)) is None  # 50 %, but too few to warn
    assert steady.after(_batch(1, 1000, unknown_player=500)) is None  # the run was already at 50 %


def test_the_event_is_a_valid_event_and_says_what_to_check(tmp_path):
    event = DeadLetterWatch().after(_batch(3, 2000, unknown_player=300, oversized=2))
    event["state"] = "RUNNING"
    assert validate_event(event) == []
    text = dead_letters_jump_text(event)
    assert text.startswith("batch 3 sent 302 of 2,000 records (15.1 %) to the dead-letter topic: ")
    assert "oversized 2, unknown_player 300" in text and "leaderboard.tables" in text
    console = Console(file=io.StringIO(), width=300)
    PlainRunLines(console)(event)
    assert console.file.getvalue().startswith("warning: batch 3 sent 302")


def _summary(rows: int, **dropped: int) -> RunSummary:
    return RunSummary(
        job="leaderboard",
        status="finished",
        query_id="q",
        checkpoint_dir="/tmp/c",
        bootstrap_servers="b",
        batches=1,
        input_rows=rows,
        seconds=1.0,
        dropped=dropped,
    )


def test_the_summary_warns_when_a_run_sent_1_percent_or_more_to_dead_letters(capsys):
    run_summary(_summary(100, unknown_player=3), as_json=False, console=Console(file=io.StringIO()))
    assert "warning: 3 of 100 records (3.0 %) went to the dead-letter topic" in capsys.readouterr().err
    run_summary(_summary(1000, unknown_player=3), as_json=False, console=Console(file=io.StringIO()))
    assert "warning" not in capsys.readouterr().err
