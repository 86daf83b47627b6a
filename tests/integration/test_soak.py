"""The soak's short version (benchmarks/soak.py; the hour-long one is in docs/performance.md): the
leaderboard for three minutes at 2,000 events/s on its own three-broker cluster, brokers
SIGKILLed and started again 30 s later, the job SIGKILLed and started again while a broker is down, `status`, `lag` and
`inspect-state` polled every 15 s; then every game's top list and the dead letters per reason
equal to the oracle, nothing failed to deliver, no traceback anywhere.

Marked ``soak``: CI runs it beside the checkpoint matrix (.ci/run), not in the main suite.
"""

from __future__ import annotations

from argparse import Namespace

import pytest

from benchmarks.soak import print_report, soak

pytestmark = [pytest.mark.integration, pytest.mark.soak]


def test_three_minutes_of_rolling_faults_lose_nothing(tmp_path, capsys):
    # The job is killed and started again while a killed broker is still down (minute 1, 2): its
    # start must wait for the dead broker's partitions and controller to move (the hour-long
    # soak once saw a start fail there).
    report = soak(
        Namespace(
            minutes=3,
            rate=2000,
            broker_kill_every=50,
            broker_down=30,
            job_kill_every=60,
            poll_every=15,
            drain_timeout=300,
            keep=False,
            out=tmp_path,
        )
    )
    with capsys.disabled():
        print_report(report)
    what = [f["what"] for f in report["faults"]]
    assert "job killed" in what and any(w.startswith("broker") and "killed" in w for w in what), what
    assert any(w.startswith("broker") and "back" in w for w in what), what
    assert report["events_acked"] == report["events_produced"] > 300_000
    assert report["delivery_failures"] == {}
    assert report["lists_match"], report["wrong_games"]
    assert report["dlq_found"] == report["dlq_expected"] and report["dlq_expected"]["unknown_player"] > 0
    assert report["dlq_not_letters"] == 0
    assert report["drained"] and report["tracebacks"] == 0
    assert report["printed"] == [], report["printed"]
    # every kill lands on a run that has committed a batch: each restart restores that state
    assert len(report["restores"]) >= what.count("job killed") >= 1, (report["restores"], what)
    assert len(report["samples"]) >= 10 and all(s["lag_records"] is not None for s in report["samples"][-3:])
    assert report["nothing_lost"]
