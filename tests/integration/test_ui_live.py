"""statectl ui on a real run: a real broker (the session's), a real leaderboard run (`statectl run`
in a subprocess, --available-now, maxOffsetsPerTrigger 300 over 3000 score events: about ten
batches that each leave less behind) appending to its default events file
(.statectl/events/leaderboard.jsonl under $STATECTL_HOME), and the page open in Chromium the
whole time: the lag on the page moves as the run writes, and at the end the charts hold exactly
the series the run's file holds.

Bad inputs tried: none beyond the unit and browser tests' (tests/test_ui.py,
tests/test_ui_browser.py); this is the live path end to end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.integration.leaderboard_setup import seeded_leaderboard
from tests.test_ui_browser import ARGS, CHROMIUM, SHOTS, _file_series

EVENTS = 3000
LIMIT = 300


def test_a_real_runs_lag_moves_on_the_page(cli, bootstrap, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium: scripts/setup.sh --tests installs Debian's chromium when run as root")
    sync_api = pytest.importorskip("playwright.sync_api")
    from statectl.adapters.kafka.produce import fast_producer
    from statectl.ui.dashboard import Dashboard
    from statectl.ui.jobs import UiJob
    from tests.test_ui import _Served

    seeded = seeded_leaderboard(cli, bootstrap, tmp_path, "ui", [f"kafka.max_offsets_per_trigger={LIMIT}"])
    topics, checkpoint, config_file = seeded.topics, seeded.checkpoint, seeded.config_file
    producer = fast_producer(bootstrap)
    for n in range(EVENTS):
        producer.produce(
            topics["score_events"], value=json.dumps({"score": n, "product_id": 1, "player_id": 1}), partition=n % 2
        )
        producer.poll(0)
    assert producer.flush(30) == 0

    home = tmp_path / "home"
    events = home / "events" / "leaderboard.jsonl"
    served = _Served(
        Dashboard(
            [UiJob("leaderboard", events, job="leaderboard", config=str(config_file), checkpoint=str(checkpoint))]
        )
    )
    env = {**os.environ, "STATECTL_HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "statectl",
            "run",
            "leaderboard",
            "--config",
            str(config_file),
            "--available-now",
            "-b",
            bootstrap,
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: list[str] = []
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(served.base + "/")
            deadline = time.monotonic() + 280
            while run.poll() is None and time.monotonic() < deadline:
                text = page.inner_text("#card-lag-records") if page.locator("#card-lag-records").count() else "–"
                if not seen or seen[-1] != text:
                    seen.append(text)
                    if len(seen) == 3:
                        SHOTS.mkdir(parents=True, exist_ok=True)
                        page.screenshot(path=str(SHOTS / "real-run-lag.png"), full_page=True)
                        print(f"screenshot: {SHOTS / 'real-run-lag.png'}")
                time.sleep(0.2)
            out, err = run.communicate(timeout=60)
            assert run.returncode == 0, err[-3000:]
            page.wait_for_function(
                "n => JSON.parse(document.querySelector('path.series[data-key=records_behind]')"
                ".dataset.points).length === n",
                arg=len(_file_series(events, "records_behind")),
                timeout=10000,
            )
            for key in ("records_behind", "processed_rows_per_second", "batch_duration_ms", "state_rows_total"):
                got = json.loads(page.get_attribute(f'path.series[data-key="{key}"]', "data-points"))
                assert got == _file_series(events, key), key
            page.screenshot(path=str(SHOTS / "real-run-done.png"), full_page=True)
            print(f"screenshot: {SHOTS / 'real-run-done.png'}")
            browser.close()
        behind = [v for _, v in _file_series(events, "records_behind")]
        assert len(behind) >= 5 and behind[0] > 0 and behind[-1] == 0
        numbers = [s for s in seen if s != "–"]
        assert len(set(numbers)) >= 3, f"the page showed {seen} while the run went"  # it moved while the run went
        assert errors == []
    finally:
        if run.poll() is None:
            run.kill()
        served.close()
