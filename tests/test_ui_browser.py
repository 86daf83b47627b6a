"""statectl ui in a real headless browser: Debian's Chromium (/usr/bin/chromium, installed by
scripts/setup.sh --tests) driven by Playwright, one browser for the module.

What is checked: the page loads with no console errors (nor failed requests or CSP refusals); the
charts hold the series the events file holds (the numbers in each SVG path's data-points against
the file, read here independently: a real run's file, tests/data/events/leaderboard-runs.jsonl);
a live run's lag moves on the page while events lines are appended to the file (the recorded
batch_progress line, with its batch id, time and lag figures set per step: the page is open the
whole time); restore progress shows during a restore (the recorded restart's restore events
appended step by step while the test holds the checkpoint's run lock, as a run does); the
inspect-state tree and findings show; a server bound to every address refuses the page and the
API without its token and works with the printed URL (cookie); no secret in the page.

Bad inputs tried: no token and a wrong token from the browser; the events file of a job that has
none yet (the page says so); a half-written line mid-way through the live test.

Screenshots go to .statectl/screenshots/ ($STATECTL_SCREENSHOTS to choose another folder); each
test prints the path of what it saved.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.test_ui import CHECKPOINT, JOB_SECRET, RECORDED, REPO, SECRET, _Served, secret_project

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(os.environ.get("STATECTL_SCREENSHOTS") or REPO / ".statectl" / "screenshots")
#: As the machine's notes advise: no background networking (a closed network refuses it loudly).
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LINES = RECORDED.read_text().splitlines()


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium: scripts/setup.sh --tests installs Debian's chromium when run as root")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


class Page:
    """A page in a fresh context that records console errors, page errors and failed requests."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on(
            "console", lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None
        )
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url}"))

    def shot(self, name: str) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / name
        self.page.screenshot(path=str(path), full_page=True)
        print(f"screenshot: {path}")
        return path

    def points(self, key: str) -> list[list[float]]:
        return json.loads(self.page.get_attribute(f'path.series[data-key="{key}"]', "data-points"))

    def close(self):
        self.context.close()


@pytest.fixture
def open_page(browser):
    pages = []

    def make():
        pages.append(Page(browser))
        return pages[-1]

    yield make
    for p in pages:
        p.close()


@pytest.fixture
def job_files(tmp_path):
    """A job whose checkpoint is a copy of a real one and whose events file the test writes."""
    from statectl.ui.jobs import UiJob

    checkpoint = tmp_path / "ck"
    shutil.copytree(CHECKPOINT, checkpoint)
    events = tmp_path / "leaderboard.jsonl"
    return UiJob("leaderboard", events, job="leaderboard", checkpoint=str(checkpoint)), events


@pytest.fixture
def served():
    made = []

    def serve(jobs, **kwargs):
        from statectl.ui.dashboard import Dashboard

        made.append(_Served(Dashboard(jobs, {"file": None, "context": None}), **kwargs))
        return made[-1]

    yield serve
    for s in made:
        s.close()


def _file_series(path: Path, key: str) -> list[list[float]]:
    """[[time, value]] of one chart, read from the events file here (not by the code under test)."""
    out = []
    for line in path.read_text().splitlines():
        e = json.loads(line)
        if e["type"] != "batch_progress":
            continue
        if key == "records_behind":
            values = [s["records_behind"] for s in e["sources"] if s["records_behind"] is not None]
            value = sum(values) if values else None
        elif key == "lag_seconds":
            values = [s["lag_seconds"] for s in e["sources"] if s.get("lag_seconds") is not None]
            value = max(values) if values else None
        else:
            value = e[key]
        if value is not None:
            out.append([e["time"], value])
    return out


CHART_KEYS = (
    "records_behind",
    "lag_seconds",
    "input_rows_per_second",
    "processed_rows_per_second",
    "batch_duration_ms",
    "state_rows_total",
    "state_memory_bytes",
)


def test_the_page_loads_without_errors_and_its_charts_hold_the_events_files_series(open_page, served, job_files):
    job, events = job_files
    shutil.copy(RECORDED, events)
    s = served([job])
    p = open_page()
    p.page.goto(s.base + "/")
    p.page.wait_for_function("() => document.querySelectorAll('path.series').length >= 7")
    for key in CHART_KEYS:
        assert p.points(key) == _file_series(events, key), key
    assert len(_file_series(events, "state_rows_total")) == 2  # the recorded file: two runs of one batch each
    assert p.page.inner_text("#card-batch") == "1"
    assert p.page.inner_text("#card-state").strip() == "TERMINATED"
    assert p.page.locator("#runs tbody tr").count() == 2
    p.shot("dashboard.png")
    assert p.errors == []


def _batch_line(batch_id: int, time: float, behind: list[int], seconds: list[float], run_id: str) -> str:
    event = json.loads(LINES[1])
    event.update(batch_id=batch_id, time=time, run_id=run_id)
    for source, b, sec in zip(event["sources"], behind, seconds):
        source.update(records_behind=b, lag_seconds=sec)
    return json.dumps(event, separators=(",", ":")) + "\n"


def test_a_live_runs_lag_updates_on_the_page(open_page, served, job_files, request):
    """The run here is simulated by appending events lines to the file while the page is open:
    the recorded batch line with batch ids, times and lag figures set per step (a run with a real
    broker: tests/integration/test_ui_live.py)."""
    from statectl.checkpoint.lock import CheckpointLock

    job, events = job_files
    first = json.loads(LINES[0])
    events.write_text(LINES[0] + "\n")
    lock = CheckpointLock(Path(job.checkpoint), writes_batches=True).__enter__()  # as the run holds it
    request.addfinalizer(lambda: lock.__exit__(None, None, None))
    s = served([job])
    p = open_page()
    p.page.goto(s.base + "/")
    p.page.wait_for_selector("#card-lag-records")
    assert p.page.inner_text("#card-lag-records") == "–"
    t0 = first["time"]
    steps = [
        ([4000, 900, 100], [12.25, 3.0, 1.0]),
        ([2500, 400, 100], [7.4, 2.0, 0.5]),
        ([1200, 0, 0], [2.5, 0.0, 0.0]),
        ([0, 0, 0], [0.0, 0.0, 0.0]),
    ]
    for i, (behind, seconds) in enumerate(steps):
        line = _batch_line(i, t0 + 5 * (i + 1), behind, seconds, first["run_id"])
        with open(events, "a") as f:
            f.write(line[:60])  # a line half written: the page must wait for the rest
            f.flush()
            f.write(line[60:])
        p.page.wait_for_function(
            "() => JSON.parse(document.querySelector('path.series[data-key=records_behind]')"
            f".dataset.points).length === {i + 1}",
            timeout=10000,
        )
        assert p.page.inner_text("#card-lag-records") == _num(sum(behind))
        lag = max(seconds)
        assert p.page.inner_text("#card-lag-seconds") == (f"{lag:.0f} s" if lag >= 10 else f"{lag:.1f} s")
        assert p.page.inner_text("#card-batch") == str(i)
        assert p.page.inner_text("#card-state").strip() == "RUNNING"
        if i == 1:
            p.shot("live-lag.png")
    for key in ("records_behind", "lag_seconds"):
        assert p.points(key) == _file_series(events, key), key
    assert [v for _, v in p.points("records_behind")] == [5000, 3000, 1200, 0]
    assert p.page.inner_text('#jobs tr[data-job="leaderboard"] .lag-records') == "0"
    p.shot("live-lag-caught-up.png")
    assert p.errors == []


def _num(v: int) -> str:
    return f"{v / 1000:.1f}k" if v >= 10000 else str(v)


def test_restore_progress_shows_during_a_restore(open_page, served, job_files):
    """The recorded restart (query_started, restore_started, restore_progress..., restore_finished)
    appended step by step while this test holds the checkpoint's run lock, as a running run does."""
    from statectl.checkpoint.lock import CheckpointLock

    job, events = job_files
    restart = LINES[3:]
    kinds = [json.loads(line)["type"] for line in restart]
    finished = kinds.index("restore_finished")
    progress = [i for i, k in enumerate(kinds) if k == "restore_progress"]
    with CheckpointLock(Path(job.checkpoint), writes_batches=True):
        events.write_text("\n".join(restart[: progress[2] + 1]) + "\n")
        s = served([job])
        p = open_page()
        p.page.goto(s.base + "/")
        p.page.wait_for_selector("#restore:not([hidden]) .restore-op")
        assert p.page.inner_text("#card-state").strip() == "RESTORING"
        middle = json.loads(restart[progress[2]])
        tasks = p.page.locator(".restore-op .bar.tasks progress")
        assert (tasks.get_attribute("value"), tasks.get_attribute("max")) == (
            str(middle["tasks_done"]),
            str(middle["tasks_total"]),
        )
        assert "restoring…" in p.page.inner_text(".restore-head")
        assert p.page.get_attribute("#restore", "class") == "active"
        p.shot("restore-in-progress.png")
        with open(events, "a") as f:
            f.write("\n".join(restart[progress[2] + 1 : finished + 1]) + "\n")
        p.page.wait_for_function("() => document.querySelector('.restore-head').textContent.includes('restored in')")
        done = json.loads(restart[finished])
        assert f"restored in {done['duration_ms']} ms" in p.page.inner_text(".restore-head")
        assert p.page.locator(".restore-op .bar.tasks .count").inner_text() == "2 / 2"
        p.shot("restore-finished.png")
    assert p.errors == []


def test_the_inspect_state_tree_and_findings_show(open_page, served, job_files):
    job, events = job_files
    shutil.copy(RECORDED, events)
    s = served([job])
    p = open_page()
    p.page.goto(s.base + "/")
    p.page.wait_for_selector("#inspect:not([disabled])")
    p.page.click("#inspect")
    p.page.wait_for_selector("#checkpoint-tree")
    report = json.loads(s.get("/api/jobs/leaderboard/checkpoint")[2])
    tree = p.page.inner_text("#checkpoint-tree")
    assert report["query_id"] in tree
    assert "operator 0 · transformWithStateInPandasExec" in tree
    assert "restore plan" in tree and "stateful operators" in tree
    assert p.page.locator("#findings tbody tr.finding").count() == len(report["findings"]) > 0
    assert p.page.inner_text("#checkpoint-verdict") == ("healthy" if report["healthy"] else "unhealthy")
    p.page.click("#checkpoint-tree summary >> text=stateful operators")  # collapses: a real tree
    p.shot("inspect-state.png")
    assert p.errors == []


def test_a_non_loopback_bind_needs_the_token(open_page, job_files, browser):
    from statectl.ui.dashboard import Dashboard
    from statectl.ui.server import make_server

    job, events = job_files
    shutil.copy(RECORDED, events)
    server = make_server(Dashboard([job]), "0.0.0.0", 0)
    import threading

    threading.Thread(target=server.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        refused = open_page()
        assert refused.page.goto(base + "/").status == 401
        assert "a token is required" in refused.page.inner_text("body")
        assert refused.page.goto(base + "/?token=wrong").status == 403
        assert refused.context.request.get(base + "/api/jobs").status == 401
        p = open_page()
        response = p.page.goto(server.url.replace("0.0.0.0", "127.0.0.1"))
        assert response.status == 200 and p.page.url == base + "/"  # the token left the address bar
        p.page.wait_for_selector('#jobs tr[data-job="leaderboard"]')
        assert p.context.request.get(base + "/api/jobs").status == 200  # the cookie
        assert server.token not in p.page.content()
        p.shot("token-accepted.png")
        assert p.errors == []
    finally:
        server.httpd.shutdown()
        server.close()


def test_no_secret_in_the_page(open_page, tmp_path, monkeypatch):
    from statectl import project, redact
    from statectl.ui.dashboard import Dashboard

    try:
        found = secret_project(tmp_path, monkeypatch)
        s = _Served(Dashboard(found, {"file": str(tmp_path / "statectl.yaml"), "context": "dev"}))
        try:
            p = open_page()
            p.page.goto(s.base + "/")
            p.page.wait_for_selector("#card-error")
            p.page.click("#inspect")
            p.page.wait_for_selector("#checkpoint-tree")
            p.page.locator("#checkpoint-tree details").evaluate_all("ds => ds.forEach(d => d.open = true)")
            html = p.page.content()
            assert SECRET not in html and JOB_SECRET not in html
            assert "login as alice with password *** failed" in p.page.inner_text("#card-error")
            p.shot("no-secrets.png")
            assert p.errors == []
        finally:
            s.close()
    finally:
        project.reset()
        redact.forget_all()


def test_a_growing_state_shows_a_banner_and_its_projection_on_the_state_chart(open_page, served, tmp_path):
    """statectl advise's verdict on the page: the warning with its fix above the cards, the trend
    and the time to the nearest limit under the state rows chart."""
    from statectl.ui.jobs import UiJob
    from tests.growth_checkpoint import Growing, build_growing

    events = tmp_path / "clicks.jsonl"
    shutil.copy(RECORDED, events)
    job = UiJob("clicks", events, checkpoint=str(build_growing(tmp_path / "ck", Growing())))
    s = served([job])
    p = open_page()
    p.page.goto(s.base + "/#job=clicks")
    p.page.wait_for_selector("#state-advice p.advice-warning")
    banner = p.page.inner_text("#state-advice")
    assert "unbounded-state" in banner and "withWatermark" in banner, banner
    p.page.wait_for_selector('[data-box="state_rows"] .projection')
    caption = p.page.inner_text('[data-box="state_rows"] .projection')
    assert caption.startswith("trend: linear, 3600 rows an hour; at this rate"), caption
    assert p.errors == []
