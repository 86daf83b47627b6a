"""statectl ui without a browser: the token rule (statectl.endpoints.access) the dashboard, `serve` and a
run's metrics share, the events file followed as chart series, the JSON API's routes, the HTTP
server's access checks and static files, the default events file a run appends to, and secrets.

Bad inputs tried: no token, a wrong token, an empty or blank token, a token with a space or a
control character, a bearer header with no value, a token in the wrong cookie; a Host header naming
another site (DNS rebinding) on a loopback server; binding 0.0.0.0 / :: / a name without a token;
missing events files, a file deleted and replaced while followed, a line still being written,
damaged lines (not JSON, a JSON array, an unknown type, no time, a NaN, a truncated line), a
number given as a string or a boolean; unknown job names in the API (with a did-you-mean), a
non-numeric ?from=, path traversal on static files (`..`, `%2e%2e`, `%2f`, an absolute path,
backslashes, the server's own module names), POST/PUT/DELETE; a job config and client.properties
holding a password (the API never shows it, even when a run's error quotes it); a working area
that cannot be written (the run goes on without its default events file).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from statectl.endpoints import access
from statectl.errors import UsageError
from statectl.ui.dashboard import Dashboard, clean, job_state
from statectl.ui.jobs import UiJob
from statectl.ui.series import EventsSeries, batch_point, problem_of

REPO = Path(__file__).resolve().parent.parent
RECORDED = REPO / "tests" / "data" / "events" / "leaderboard-runs.jsonl"
CHECKPOINT = REPO / "tests" / "data" / "leaderboard-0.3-checkpoint"


# ---------------------------------------------------------------- the token rule
@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.5.0.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("10.1.2.3", False),
        ("192.168.0.10", False),
        ("no-such-host.invalid", False),
    ],
    ids=lambda v: repr(v),
)
def test_is_loopback(host, loopback):
    assert access.is_loopback(host) is loopback


def test_token_for_loopback_needs_none_and_elsewhere_one_is_made_or_required():
    assert access.token_for("127.0.0.1", None, "--token") == (None, False)
    token, generated = access.token_for("0.0.0.0", None, "--token")
    assert generated and len(token) >= 40
    assert access.token_for("0.0.0.0", None, "--token")[0] != token  # fresh every time
    assert access.token_for("0.0.0.0", "s3cret-token", "--token") == ("s3cret-token", False)
    assert access.token_for("127.0.0.1", "s3cret-token", "--token") == ("s3cret-token", False)
    with pytest.raises(UsageError, match=r"binding 0\.0\.0\.0 \(not loopback\) needs a token: give --metrics-token T"):
        access.token_for("0.0.0.0", None, "--metrics-token", generate=False)


@pytest.mark.parametrize(
    "bad, message",
    [
        ("", "the token is empty"),
        ("   ", "the token is empty"),
        ("two words", "may not hold spaces"),
        ("tab\there", "may not hold spaces"),
        ("bell\x07", "control characters"),
        ("semi;colon", "may not hold ;"),
        ('quo"te', "may not hold ;"),
        ("back\\slash", "may not hold ;"),
    ],
)
def test_token_for_refuses_bad_tokens(bad, message):
    with pytest.raises(UsageError, match=message):
        access.token_for("0.0.0.0", bad, "--token")


@pytest.mark.parametrize(
    "headers, target, status",
    [
        ({}, "/api/jobs", 401),
        ({"Authorization": "Bearer right"}, "/", 200),
        ({"Authorization": "bearer right"}, "/", 200),
        ({"Authorization": "Bearer wrong"}, "/", 403),
        ({"Authorization": "Bearer "}, "/", 401),
        ({"Authorization": "Basic cmlnaHQ="}, "/", 401),
        ({}, "/?token=right", 200),
        ({}, "/?token=wrong", 403),
        ({"Cookie": "a=b; statectl_token=right"}, "/", 200),
        ({"Cookie": "statectl_token=wrong"}, "/", 403),
        ({"Cookie": "other_token=right"}, "/", 401),
    ],
    ids=lambda v: repr(v)[:40],
)
def test_check(headers, target, status):
    assert access.check("right", headers, target) == status


def test_check_without_a_token_lets_everything_through():
    assert access.check(None, {}, "/") == 200


@pytest.mark.parametrize(
    "host_header, ok",
    [
        ("127.0.0.1:7070", True),
        ("localhost:7070", True),
        ("[::1]:7070", True),
        ("app.localhost", True),
        (None, True),
        ("evil.example:7070", False),
        ("evil.example", False),
        ("10.0.0.5:7070", False),
        ("127.0.0.1.evil.example", False),
    ],
)
def test_a_loopback_server_refuses_other_host_names(host_header, ok):
    assert access.host_header_ok(None, host_header) is ok
    assert access.host_header_ok("a-token", host_header) is True  # with a token any name goes


# ---------------------------------------------------------------- the events file as series
def _expected_points(path: Path) -> list[dict]:
    """Independently of the code under test: one point per batch_progress line."""
    out = []
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "batch_progress":
            behind = [s["records_behind"] for s in event["sources"] if s["records_behind"] is not None]
            out.append(
                {
                    "time": event["time"],
                    "batch_id": event["batch_id"],
                    "records_behind": sum(behind) if behind else None,
                    "processed_rows_per_second": event["processed_rows_per_second"],
                    "batch_duration_ms": event["batch_duration_ms"],
                    "state_rows_total": event["state_rows_total"],
                }
            )
    return out


def test_the_recorded_events_file_gives_one_point_per_batch_and_two_runs():
    series = EventsSeries(RECORDED).refresh()
    got = [
        {
            k: p[k]
            for k in (
                "time",
                "batch_id",
                "records_behind",
                "processed_rows_per_second",
                "batch_duration_ms",
                "state_rows_total",
            )
        }
        for p in series.series()["points"]
    ]
    assert got == _expected_points(RECORDED)
    summary = series.summary()
    assert (summary["events"], summary["skipped_lines"], len(summary["runs"])) == (14, 0, 2)
    restore = summary["runs"][1]["restores"][0]
    assert (
        restore["stores_total"],
        restore["stores_loaded"],
        restore["tasks_done"],
        restore["tasks_total"],
        restore["finished"],
        restore["duration_ms"],
    ) == (2, 2, 2, 2, True, 488)


def test_lines_are_read_as_they_are_appended_and_a_half_written_line_waits(tmp_path):
    lines = RECORDED.read_text().splitlines(True)
    path = tmp_path / "job.jsonl"
    path.write_text("".join(lines[:2]))
    series = EventsSeries(path).refresh()
    assert series.series()["next"] == 1
    with open(path, "a") as f:
        f.write(lines[2] + lines[3] + lines[12][:50])  # the run's next batch line, cut in the middle
    series.refresh()
    assert (series.summary()["events"], series.summary()["skipped_lines"]) == (4, 0)
    with open(path, "a") as f:
        f.write(lines[12][50:])
    series.refresh()
    answer = series.series(1)
    assert (answer["from"], answer["next"], [p["batch_id"] for p in answer["points"]]) == (1, 2, [1])


def test_damaged_lines_are_counted_and_skipped(tmp_path):
    good = RECORDED.read_text().splitlines()[1]
    path = tmp_path / "job.jsonl"
    path.write_text(
        "\n".join(
            [
                "not json",
                "[1, 2]",
                '{"type": "nonsense", "time": 1}',
                '{"type": "idle"}',
                '{"type": "idle", "time": NaN}',
                good,
                '{"type": "batch_progress", "time": 5, "batch_id": "7", "input_rows": true, "sources": "x"}',
                good[:40],
                "",
            ]
        )
        + "\n"
    )
    series = EventsSeries(path).refresh()
    summary = series.summary()
    assert summary["skipped_lines"] == 6
    assert summary["problems"][:5] == [
        "line 1: not JSON (Expecting value)",
        "line 2: not a JSON object",
        "line 3: no statectl event type ('nonsense')",
        "line 4: idle without a time",
        "line 5: idle without a time",
    ]
    points = series.series()["points"]
    assert len(points) == 2
    # A mistyped line still draws what it can: no batch id, no rows, no sources.
    assert (points[1]["batch_id"], points[1]["input_rows"], points[1]["sources"]) == (None, None, [])


def test_a_missing_file_then_a_replaced_one(tmp_path):
    path = tmp_path / "job.jsonl"
    series = EventsSeries(path).refresh()
    assert series.summary()["exists"] is False and series.series() == {
        "generation": 0,
        "from": 0,
        "next": 0,
        "points": [],
    }
    shutil.copy(RECORDED, path)
    series.refresh()
    assert series.series()["next"] == 2
    path.unlink()
    series.refresh()
    assert series.series()["next"] == 0 and series.generation == 1
    path.write_text(RECORDED.read_text().splitlines()[1] + "\n")
    series.refresh()
    assert series.series()["next"] == 1


def test_a_large_file_is_read_from_its_tail_in_pieces_and_keeps_the_newest_points(tmp_path, monkeypatch):
    from statectl.ui import series as series_module

    batch = next(line for line in RECORDED.read_text().splitlines() if '"batch_progress"' in line)
    path = tmp_path / "job.jsonl"
    event = json.loads(batch)
    with open(path, "w") as f:
        for i in range(300):
            f.write(json.dumps({**event, "batch_id": i}) + "\n")
    size = path.stat().st_size
    monkeypatch.setattr(series_module, "TAIL_BYTES", size // 2)
    monkeypatch.setattr(series_module, "READ_BYTES", 4096)
    monkeypatch.setattr(series_module, "KEEP_POINTS", 40)
    monkeypatch.setattr(series_module, "MAX_POINTS", 40)
    series = EventsSeries(path).refresh()
    summary = series.summary()
    # Only whole lines of the newest half, none of it skipped as damaged.
    assert 0 < summary["skipped_bytes"] <= size // 2 + len(batch) * 2 and summary["skipped_lines"] == 0
    assert len(series.points) <= 80
    answer = series.series()
    assert answer["next"] == summary["points"] and [p["batch_id"] for p in answer["points"]][-1] == 299
    assert len(answer["points"]) == 40
    # Appended points keep their indices across the trimming.
    with open(path, "a") as f:
        for i in range(300, 400):
            f.write(json.dumps({**event, "batch_id": i}) + "\n")
    answer = series.refresh().series(answer["next"])  # a page that asked a while ago: the newest MAX_POINTS
    assert (len(answer["points"]), answer["points"][-1]["batch_id"]) == (40, 399)
    assert [p["batch_id"] for p in series.series(answer["next"] - 5)["points"]] == [395, 396, 397, 398, 399]
    assert len(series.points) <= 80


def test_a_line_without_end_is_skipped_without_being_held(tmp_path, monkeypatch):
    from statectl.ui import series as series_module

    monkeypatch.setattr(series_module, "MAX_LINE_BYTES", 4000)
    monkeypatch.setattr(series_module, "READ_BYTES", 300)
    good = RECORDED.read_text().splitlines()[1]
    path = tmp_path / "job.jsonl"
    path.write_bytes(b"x" * 20000)
    series = EventsSeries(path).refresh()
    assert len(series.pending) <= 4300 and series.summary()["skipped_lines"] == 1
    with open(path, "a") as f:
        f.write("y" * 10000 + "\n" + good + "\n")
    summary = series.refresh().summary()
    assert (summary["events"], summary["skipped_lines"]) == (1, 1)
    assert summary["problems"][0].startswith("line 1: longer than")


def test_batch_point_takes_lag_seconds_when_a_source_reports_it():
    event = json.loads(RECORDED.read_text().splitlines()[1])
    event["sources"][0].update(records_behind=120, lag_seconds=4.5)
    event["sources"][1].update(records_behind=3, lag_seconds=0.5)
    point = batch_point(event)
    assert (point["records_behind"], point["lag_seconds"]) == (123, 4.5)
    assert batch_point(json.loads(RECORDED.read_text().splitlines()[1]))["lag_seconds"] is None


def test_problem_of_names_the_problem():
    assert problem_of(b"\xff\xfe")[1].startswith("not JSON")
    assert problem_of(b'{"type": "idle", "time": 1}') == ({"type": "idle", "time": 1}, None)


@pytest.mark.parametrize(
    "run_state, lock, checkpoint, shown",
    [
        ("RUNNING", True, True, "RUNNING"),
        ("RESTORING", True, True, "RESTORING"),
        ("RUNNING", False, True, "STOPPED"),  # killed: its last event said RUNNING, nobody holds the lock
        ("TERMINATED", False, True, "TERMINATED"),
        ("FAILED", False, True, "FAILED"),
        (None, False, True, "STOPPED"),
        (None, False, False, "NEW"),
        (None, True, True, "RUNNING"),
    ],
)
def test_job_state(run_state, lock, checkpoint, shown):
    assert job_state(run_state, lock, checkpoint) == shown


# ---------------------------------------------------------------- the API's routes
@pytest.fixture
def dashboard(tmp_path):
    shutil.copy(RECORDED, tmp_path / "leaderboard.jsonl")
    checkpoint = tmp_path / "ck"
    shutil.copytree(CHECKPOINT, checkpoint)
    jobs = [
        UiJob("leaderboard", tmp_path / "leaderboard.jsonl", job="leaderboard", checkpoint=str(checkpoint)),
        UiJob("advanced-state/tombstones", tmp_path / "none.jsonl", job="advanced-state/tombstones"),
        UiJob("orphan", tmp_path / "orphan.jsonl"),
    ]
    return Dashboard(jobs, {"file": None, "context": None})


def test_api_jobs(dashboard):
    status, body = dashboard.answer("/api/jobs")
    assert status == 200
    lb, tomb, orphan = body["jobs"]
    assert (
        lb["name"],
        lb["state"],
        lb["last_batch"],
        lb["last_committed_batch"],
        lb["records_behind"],
        lb["processed_rows_per_second"],
        lb["state_rows_total"],
        lb["checkpoint_exists"],
    ) == ("leaderboard", "TERMINATED", 1, 0, 0, 838.4, 140, True)
    assert (tomb["state"], tomb["events"]["exists"], orphan["checkpoint"]) == ("NEW", False, None)


def test_api_one_job_a_job_with_a_slash_and_series_from(dashboard):
    status, body = dashboard.answer("/api/jobs/leaderboard")
    assert status == 200 and [r["batches"] for r in body["runs"]] == [1, 1]
    assert dashboard.answer("/api/jobs/advanced-state%2Ftombstones")[0] == 200
    status, body = dashboard.answer("/api/jobs/leaderboard/series?from=1")
    assert (status, body["from"], body["next"], [p["batch_id"] for p in body["points"]]) == (200, 1, 2, [1])
    assert dashboard.answer("/api/jobs/leaderboard/series?from=99")[1]["points"] == []


@pytest.mark.parametrize(
    "target, status, error",
    [
        ("/api/jobs/leaderbord", 404, "no job 'leaderbord' (did you mean 'leaderboard'?); GET /api/jobs lists them"),
        ("/api/jobs/..%2F..%2Fetc%2Fpasswd", 404, "no job '../../etc/passwd'"),
        ("/api/jobs/leaderboard/series?from=-1", 400, "from='-1': expected a point index"),
        ("/api/jobs/leaderboard/series?from=abc", 400, "from='abc': expected a point index"),
        ("/api/jobs/leaderboard/nope", 404, "no route /api/jobs/leaderboard/nope"),
        ("/api/nope", 404, "no route /api/nope"),
        ("/api/jobs/orphan/checkpoint", 404, "job orphan has no checkpoint statectl knows of"),
    ],
)
def test_api_refusals(dashboard, target, status, error):
    got_status, body = dashboard.answer(target)
    assert got_status == status
    assert body["error"].startswith(error)


def test_api_checkpoint_is_inspect_state(dashboard):
    status, body = dashboard.answer("/api/jobs/leaderboard/checkpoint")
    assert status == 200
    assert (body["schema"], body["query_id"], body["operators"][0]["kind"]) == (
        "statectl.inspect-state/1",
        "712187f9-4c83-4405-accf-ebf15c5a870a",
        "transformWithStateInPandas",
    )
    assert dashboard.answer("/api/jobs/advanced-state%2Ftombstones/checkpoint")[0] == 404


def test_api_lists_its_routes(dashboard):
    assert set(dashboard.answer("/api")[1]["routes"]) == {
        "/api/jobs",
        "/api/jobs/NAME",
        "/api/jobs/NAME/series?from=N",
        "/api/jobs/NAME/checkpoint",
    }


def test_clean_masks_secret_keys_registered_secrets_and_inline_passwords():
    from statectl import redact

    redact.register("pa55-word-registered")
    try:
        value = clean(
            {
                "sasl.password": "x",
                "token": None,
                "note": "auth failed for pa55-word-registered",
                "line": "ssl.key.password=abc123 rest",
                "list": ["pa55-word-registered"],
            }
        )
    finally:
        redact.forget_all()
    assert value == {
        "sasl.password": "***",
        "token": None,
        "note": "auth failed for ***",
        "line": "ssl.key.password=*** rest",
        "list": ["***"],
    }


# ---------------------------------------------------------------- the HTTP server
class _Served:
    def __init__(self, dashboard, host="127.0.0.1", token=None):
        from statectl.ui.server import make_server

        self.server = make_server(dashboard, host, 0, token)
        self.base = f"http://127.0.0.1:{self.server.port}"
        self.thread = threading.Thread(
            target=self.server.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def get(self, path, headers=None, method="GET"):
        request = urllib.request.Request(self.base + path, headers=headers or {}, method=method)
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(request, timeout=10) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def close(self):
        self.server.httpd.shutdown()
        self.server.close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.fixture
def served(dashboard):
    made = []

    def serve(**kwargs):
        made.append(_Served(dashboard, **kwargs))
        return made[-1]

    yield serve
    for s in made:
        s.close()


def test_the_page_and_its_assets_are_served_from_the_package(served):
    s = served()
    status, headers, body = s.get("/")
    assert status == 200 and b'<script src="/static/app.js"' in body
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    for name in ("app.js", "charts.js", "style.css"):
        status, headers, body = s.get("/static/" + name)
        assert status == 200 and len(body) > 500, name
    assert s.get("/favicon.ico")[0] == 204


@pytest.mark.parametrize(
    "path",
    [
        "/static/../server.py",
        "/static/%2e%2e/server.py",
        "/static/..%2fserver.py",
        "/static/%2e%2e%2f%2e%2e%2fpaths.py",
        "/static//etc/passwd",
        "/static/..\\server.py",
        "/static/dashboard.py",
        "/static/",
        "/static/index.html/..",
        "/../../etc/passwd",
        "/statectl/ui/server.py",
        "/static/.hidden",
    ],
)
def test_static_files_refuse_path_traversal(served, path):
    status, _, body = served().get(path)
    assert status == 404
    assert b"import" not in body and b"root:" not in body


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_the_dashboard_is_read_only(served, method):
    status, headers, _ = served().get("/api/jobs", method=method)
    assert (status, headers["Allow"]) == (405, "GET, HEAD")


def test_a_loopback_server_refuses_a_rebound_host_name(served):
    s = served()
    status, _, body = s.get("/api/jobs", {"Host": "evil.example:7070"})
    assert status == 403 and b"loopback name" in body
    assert s.get("/api/jobs", {"Host": f"localhost:{s.server.port}"})[0] == 200


def test_a_token_server_answers_only_with_the_token(served):
    s = served(token="t0ken-for-tests")
    assert s.get("/api/jobs")[0] == 401
    assert s.get("/")[0] == 401
    assert s.get("/static/app.js")[0] == 401
    assert s.get("/api/jobs", {"Authorization": "Bearer wrong"})[0] == 403
    assert s.get("/api/jobs?token=wrong")[0] == 403
    status, _, body = s.get("/api/jobs", {"Authorization": "Bearer t0ken-for-tests"})
    assert status == 200 and json.loads(body)["jobs"][0]["name"] == "leaderboard"
    status, headers, _ = s.get("/?token=t0ken-for-tests")
    assert (status, headers["Location"]) == (303, "/")
    assert headers["Set-Cookie"] == "statectl_token=t0ken-for-tests; HttpOnly; SameSite=Strict; Path=/"
    assert s.get("/", {"Cookie": "statectl_token=t0ken-for-tests"})[0] == 200
    # With a token, any Host name goes (it is what protects the server).
    assert s.get("/api/jobs", {"Authorization": "Bearer t0ken-for-tests", "Host": "dash.example"})[0] == 200


def test_the_log_never_shows_a_token_however_it_is_encoded(dashboard):
    from statectl.ui.server import make_server

    lines = []
    server = make_server(dashboard, "127.0.0.1", 0, "tok+en/with=signs", log=lines.append)
    thread = threading.Thread(target=server.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        for target in ("/api/jobs?token=tok%2Ben%2Fwith%3Dsigns", "/api/jobs?x=1&token=tok%2ben%2fwith%3dsigns"):
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{target}", timeout=10) as r:
                assert r.status == 200
    finally:
        server.httpd.shutdown()
        server.close()
    assert len(lines) == 2 and all("token=***" in line.lower() for line in lines)
    assert not any("tok%2" in line.lower() or "signs" in line for line in lines)
    assert access.loggable("GET /?token=a\x1b[2J HTTP/1.1") == "GET /?token=*** HTTP/1.1"
    assert access.loggable("GET /\x1b[2J HTTP/1.1") == "GET /\\x1b[2J HTTP/1.1"


def test_a_silent_connection_lets_go_of_its_thread(dashboard, monkeypatch):
    import socket

    from statectl.ui import server as server_module

    monkeypatch.setattr(server_module, "REQUEST_TIMEOUT_SECONDS", 0.5)
    s = _Served(dashboard)
    try:
        silent = socket.create_connection(("127.0.0.1", s.server.port))
        silent.settimeout(10)
        assert s.get("/api/jobs")[0] == 200  # others are answered meanwhile
        assert silent.recv(100) == b""  # closed by the server, not left waiting for ever
        silent.close()
    finally:
        s.close()


def test_a_job_gone_between_two_looks_does_not_fail_the_list(tmp_path):
    jobs = [UiJob("a", tmp_path / "a.jsonl"), UiJob("b", tmp_path / "b.jsonl")]
    board = Dashboard(jobs)
    views = []
    original = board.job_view

    def view_and_forget(job, detail=False):
        board._set_jobs([])  # a rediscovery on another thread, mid-answer
        views.append(job.name)
        return original(job, detail)

    board.job_view = view_and_forget
    status, body = board.answer("/api/jobs")
    assert status == 200 and [j["name"] for j in body["jobs"]] == ["a", "b"] == views


def test_binding_every_address_makes_a_token_and_puts_it_in_the_url(dashboard):
    from statectl.ui.server import make_server

    server = make_server(dashboard, "0.0.0.0", 0)
    try:
        assert server.token_generated and server.url.startswith("http://0.0.0.0:")
        assert server.url.endswith(f"/?token={server.token}")
    finally:
        server.close()


# ---------------------------------------------------------------- secrets never shown
SECRET = "Hunter2-very-secret-pw"
JOB_SECRET = "Job-config-secret-9"


def secret_project(tmp_path: Path, monkeypatch) -> list[UiJob]:
    """A project whose job config (sasl.password from the environment) and client.properties hold a
    password, and whose run's last event quotes one in its error (as a client library's message
    might): the jobs as the dashboard finds them. The caller resets statectl.project and
    statectl.redact afterwards."""
    from statectl import project, redact
    from statectl.jobs.registry import load_job_config, shipped_configs
    from statectl.ui.jobs import discover

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STATECTL_PROJECT", raising=False)
    monkeypatch.delenv("STATECTL_CONTEXT", raising=False)
    monkeypatch.delenv("STATECTL_CLIENT_CONFIG", raising=False)
    monkeypatch.setenv("STATECTL_HOME", str(tmp_path / ".statectl"))
    monkeypatch.setenv("JOB_PASSWORD", JOB_SECRET)
    (tmp_path / "client.properties").write_text(
        f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=alice\nsasl.password={SECRET}\n"
    )
    config = (
        (REPO / "statectl" / "jobs" / "configs" / "leaderboard.yaml")
        .read_text()
        .replace("checkpoint_dir: .statectl/checkpoints/leaderboard", f"checkpoint_dir: {tmp_path / 'ck'}")
    )
    config = config.replace(
        "kafka:\n",
        "kafka:\n  properties:\n    security.protocol: SASL_PLAINTEXT\n"
        "    sasl.mechanism: PLAIN\n    sasl.username: bob\n    sasl.password: ${JOB_PASSWORD}\n",
        1,
    )
    (tmp_path / "lb.yaml").write_text(config)
    (tmp_path / "statectl.yaml").write_text(
        "current-context: dev\ncontexts:\n  dev:\n    bootstrap_servers: localhost:9092\n"
        "    client_config: client.properties\njobs:\n  lb: lb.yaml\n"
    )
    shutil.copytree(CHECKPOINT, tmp_path / "ck")
    events = tmp_path / ".statectl" / "events"
    events.mkdir(parents=True)
    lines = RECORDED.read_text().splitlines()
    last = json.loads(lines[-1])
    last.update(state="FAILED", error=f"SaslAuthenticationException: login as alice with password {SECRET} failed")
    # a project job's run keeps its events under the project job's name (statectl run lb)
    (events / "lb.jsonl").write_text("\n".join(lines[:-1] + [json.dumps(last)]) + "\n")
    project.reset()
    redact.forget_all()
    return discover(load_job_config, shipped_configs)


def test_no_secret_from_a_job_config_or_client_properties_reaches_the_api(tmp_path, monkeypatch):
    from statectl import project, redact

    try:
        found = secret_project(tmp_path, monkeypatch)
        assert [(j.name, j.problem) for j in found] == [("lb", None)]
        assert SECRET in redact.registered() and JOB_SECRET in redact.registered()
        s = _Served(Dashboard(found, {"file": "statectl.yaml"}))
        try:
            answers = b""
            for path in ("/api/jobs", "/api/jobs/lb", "/api/jobs/lb/series?from=0", "/api/jobs/lb/checkpoint"):
                status, _, body = s.get(path)
                assert status == 200, path
                answers += body
        finally:
            s.close()
        assert SECRET.encode() not in answers and JOB_SECRET.encode() not in answers
        assert b"login as alice with password *** failed" in answers
    finally:
        project.reset()
        redact.forget_all()


def test_a_project_jobs_checkpoint_is_where_run_keeps_it(tmp_path, monkeypatch):
    """The context's checkpoint_root/NAME over the job config's checkpoint_dir, and its bootstrap
    servers under $KAFKA_BOOTSTRAP_SERVERS: the order `statectl run NAME` follows."""
    from statectl import project
    from statectl.cli.common import resolve_job
    from statectl.jobs.registry import load_job_config, shipped_configs
    from statectl.ui.jobs import discover

    monkeypatch.chdir(tmp_path)
    for name in ("STATECTL_PROJECT", "STATECTL_CONTEXT", "STATECTL_CLIENT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "from-env:9092")
    shutil.copy(REPO / "statectl" / "jobs" / "configs" / "leaderboard.yaml", tmp_path / "lb.yaml")
    (tmp_path / "statectl.yaml").write_text(
        "current-context: dev\ncontexts:\n  dev:\n"
        "    bootstrap_servers: from-context:9092\n    checkpoint_root: cps\n"
        "jobs:\n  lb-eu: lb.yaml\n"
    )
    project.reset()
    try:
        [job] = discover(load_job_config, shipped_configs)
        assert job.checkpoint == str(tmp_path.resolve() / "cps" / "lb-eu")
        assert job.checkpoint == resolve_job("lb-eu", None, None).config.checkpoint_dir
        assert job.bootstrap_servers == "from-env:9092"
    finally:
        project.reset()


# ---------------------------------------------------------------- the metrics server and serve
def _get(url, headers=None):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_the_metrics_server_off_loopback_needs_its_token(monkeypatch):
    from prometheus_client import CollectorRegistry, Counter

    from statectl.run.metrics import _start_metrics_server

    registry = CollectorRegistry()
    Counter("statectl_test_things", "things", registry=registry).inc()
    monkeypatch.delenv("STATECTL_METRICS_TOKEN", raising=False)
    with pytest.raises(UsageError, match="needs a token: give --metrics-token T"):
        _start_metrics_server("0.0.0.0", 0, registry)
    monkeypatch.setenv("STATECTL_METRICS_TOKEN", "prom-token-1")
    server, _ = _start_metrics_server("0.0.0.0", 0, registry)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        assert _get(url)[0] == 401
        assert _get(url, {"Authorization": "Bearer nope"})[0] == 403
        status, body = _get(url, {"Authorization": "Bearer prom-token-1"})
        assert status == 200 and b"statectl_test_things_total 1.0" in body
    finally:
        server.shutdown()
        server.server_close()


def test_the_metrics_server_on_loopback_is_open(monkeypatch):
    from prometheus_client import CollectorRegistry

    from statectl.run.metrics import _start_metrics_server

    monkeypatch.delenv("STATECTL_METRICS_TOKEN", raising=False)
    server, _ = _start_metrics_server("127.0.0.1", 0, CollectorRegistry())
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        assert _get(url)[0] == 200
        assert _get(url, {"Host": f"localhost:{server.server_address[1]}"})[0] == 200
        # A page whose name a hostile DNS server turned into 127.0.0.1 (DNS rebinding) is refused,
        # as by the dashboard and serve: the same rule (statectl.endpoints.access.refusal).
        status, body = _get(url, {"Host": "evil.example"})
        assert status == 403 and b"the metrics endpoint answers only requests to a loopback name" in body
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "token, headers, target, expected",
    [
        (None, {}, "/", None),
        (None, {"Host": "localhost:80"}, "/", None),
        (None, {"Host": "[::1]:80"}, "/", None),
        (None, {"Host": "evil.example"}, "/", 403),
        ("t0k", {"Host": "evil.example"}, "/?token=t0k", None),
        ("t0k", {}, "/", 401),
        ("t0k", {"Authorization": "Bearer nope"}, "/", 403),
        ("t0k", {"Authorization": "Bearer t0k"}, "/", None),
    ],
    ids=["open", "localhost", "ipv6-loopback", "rebound-host", "token-any-host", "no-token", "wrong", "right"],
)
def test_one_refusal_rule_for_every_endpoint(token, headers, target, expected):
    refused = access.refusal(token, headers, target, server="this server", realm="r", send_token="send it")
    assert (refused.status if refused else None) == expected
    if expected == 401:
        assert refused.headers == {"WWW-Authenticate": 'Bearer realm="r"'} and refused.message.endswith("send it")


def test_serve_answers_only_with_its_token():
    from http.server import ThreadingHTTPServer

    from statectl.query.server import make_handler

    class View:
        stale_since = None

        def snapshot(self):
            return {"1": [{"playerId": 3, "score": 4000.0}]}

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(View(), token="serve-token-1"))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{httpd.server_address[1]}"
        assert _get(base + "/leaderboard/count")[0] == 401
        assert _get(base + "/leaderboard/count", {"Authorization": "Bearer wrong"})[0] == 403
        assert _get(base + "/leaderboard/count?token=serve-token-1") == (200, b"1")
        assert _get(base + "/leaderboard/1", {"Authorization": "Bearer serve-token-1"})[0] == 200
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_serve_without_a_token_refuses_a_rebound_host_name():
    from http.server import ThreadingHTTPServer

    from statectl.query.server import make_handler

    class View:
        stale_since = None

        def snapshot(self):
            return {}

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(View()))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{httpd.server_address[1]}"
        assert _get(base + "/leaderboard/count") == (200, b"0")
        assert _get(base + "/leaderboard/count", {"Host": "evil.example"})[0] == 403
    finally:
        httpd.shutdown()
        httpd.server_close()


def _bound_endpoint(kind: str, host: str, tmp_path, port: int = 0):
    """One of the three endpoints bound on ``host`` (not yet serving): (server, path to GET)."""
    from http.server import ThreadingHTTPServer

    if kind == "ui":
        from statectl.ui.server import make_server

        return make_server(Dashboard([]), host, port).httpd, "/api/jobs"
    if kind == "serve":
        from statectl.query.server import bind

        class View:
            stale_since = None

            def snapshot(self):
                return {}

        server = bind(View(), host, port, None, None)
        assert isinstance(server, ThreadingHTTPServer)
        return server, "/leaderboard/count"
    from statectl.run.metrics import RunMetrics

    return RunMetrics("leaderboard").serve(port, host)._server, "/metrics"


def _ipv6_loopback() -> bool:
    import socket

    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize("kind", ["ui", "serve", "metrics"])
@pytest.mark.parametrize("host, url_host", [("::1", "[::1]"), ("[::1]", "[::1]"), ("127.0.0.1", "127.0.0.1")])
def test_every_endpoint_binds_ipv4_and_ipv6_alike(kind, host, url_host, tmp_path, monkeypatch):
    """Bad input before: `statectl serve --host ::1` failed ("Address family for hostname not
    supported": it bound IPv4 only) while the dashboard bound IPv6."""
    if ":" in host and not _ipv6_loopback():
        pytest.fail("this machine has no IPv6 loopback (::1); the IPv6 binding cannot be tested here")
    monkeypatch.delenv("STATECTL_METRICS_TOKEN", raising=False)
    server, path = _bound_endpoint(kind, host, tmp_path)
    if kind != "metrics":  # the metrics server serves from the start
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        assert access.url_host(server.server_address[0]) == url_host
        assert _get(f"http://{url_host}:{server.server_address[1]}{path}")[0] == 200
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("kind", ["ui", "serve", "metrics"])
def test_every_endpoint_says_the_same_when_it_cannot_listen(kind, tmp_path, monkeypatch):
    """Bad inputs: a name that does not resolve, a port in use. One line each, naming the flag to
    change (the metrics endpoint: its own flags)."""
    import socket

    from statectl.errors import OperationalError

    monkeypatch.setenv("STATECTL_METRICS_TOKEN", "metrics-token-1")  # off loopback the metrics need one
    host_flag, port_flag = ("--metrics-host", "--metrics-port") if kind == "metrics" else ("--host", "--port")
    with pytest.raises(UsageError, match=f"^{host_flag} no-such-host.invalid: not an address of this machine$"):
        _bound_endpoint(kind, "no-such-host.invalid", tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OperationalError) as refused:
            _bound_endpoint(kind, "127.0.0.1", tmp_path, port)
    assert str(refused.value) == f"port {port} on 127.0.0.1 is in use; choose another {port_flag}"


@pytest.mark.parametrize(
    "host, family",
    [
        ("::1", "AF_INET6"),
        ("[::1]", "AF_INET6"),
        ("::", "AF_INET6"),
        ("127.0.0.1", "AF_INET"),
        ("0.0.0.0", "AF_INET"),
        ("", "AF_INET"),
        ("localhost", "AF_INET"),
        ("fe80::1%lo", "AF_INET6"),
        ("no-such-host.invalid", "AF_INET"),
    ],
)
def test_the_address_family_follows_the_host(host, family):
    import socket

    assert access.address_family(host) == getattr(socket, family)


# ---------------------------------------------------------------- the command line
def test_run_refuses_a_non_loopback_metrics_host_without_a_token(cli, monkeypatch, tmp_path):
    monkeypatch.delenv("STATECTL_METRICS_TOKEN", raising=False)
    monkeypatch.setenv("STATECTL_HOME", str(tmp_path))
    result = cli(
        "run",
        "leaderboard",
        "--metrics-port",
        "0",
        "--metrics-host",
        "0.0.0.0",
        "--checkpoint-dir",
        str(tmp_path / "ck"),
        "-b",
        "127.0.0.1:1",
    )
    assert result.exit_code == 2
    assert "binding 0.0.0.0 (not loopback) needs a token: give --metrics-token T" in result.stderr
    assert not (tmp_path / "events").exists()  # refused before anything started


@pytest.mark.parametrize(
    "args, message",
    [
        (["--token", ""], "--token: the token is empty"),
        (["--host", "0.0.0.0", "--token", "a b"], "--token: a token may not hold spaces"),
    ],
)
def test_ui_refuses_bad_tokens(cli, monkeypatch, tmp_path, args, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STATECTL_HOME", str(tmp_path / ".statectl"))
    result = cli("ui", "--port", "0", *args)
    assert result.exit_code == 2
    assert message in result.stderr


# ---------------------------------------------------------------- the default events file
def test_a_run_without_events_file_appends_to_the_working_area(tmp_path, monkeypatch):
    from statectl.paths import default_events_file
    from statectl.run.events_file import default_events_writer

    monkeypatch.setenv("STATECTL_HOME", str(tmp_path))
    assert default_events_file("advanced-state/tombstones") == tmp_path / "events" / "advanced-state-tombstones.jsonl"
    assert default_events_file("../escape").parent == tmp_path / "events"
    writer, why = default_events_writer("leaderboard")
    assert why is None
    writer({"type": "idle", "time": 1.0, "state": "IDLE", "query_id": None, "run_id": None})
    writer.close()
    assert (tmp_path / "events" / "leaderboard.jsonl").read_text() == (
        '{"type":"idle","time":1.0,"state":"IDLE","query_id":null,"run_id":null}\n'
    )


def test_a_large_default_events_file_is_moved_aside(tmp_path, monkeypatch):
    from statectl.run.events_file import default_events_writer

    monkeypatch.setenv("STATECTL_HOME", str(tmp_path))
    path = tmp_path / "events" / "leaderboard.jsonl"
    path.parent.mkdir()
    path.write_text("x" * 200)
    writer, _ = default_events_writer("leaderboard", rotate_bytes=100)
    writer.close()
    assert (path.read_text(), (tmp_path / "events" / "leaderboard.jsonl.1").read_text()) == ("", "x" * 200)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_working_area_costs_the_run_nothing_but_a_warning(tmp_path, monkeypatch):
    from statectl.run.events_file import default_events_writer

    (tmp_path / "ro").mkdir(mode=0o500)
    monkeypatch.setenv("STATECTL_HOME", str(tmp_path / "ro"))
    writer, why = default_events_writer("leaderboard")
    assert writer is None and "events are not kept in" in why


def test_an_events_path_that_is_a_folder_costs_the_run_nothing_but_a_warning(tmp_path, monkeypatch):
    from statectl.run.events_file import default_events_writer

    monkeypatch.setenv("STATECTL_HOME", str(tmp_path))
    (tmp_path / "events" / "leaderboard.jsonl").mkdir(parents=True)
    writer, why = default_events_writer("leaderboard")
    assert writer is None
    assert why.startswith("events are not kept in ") and "is a directory" in why


def test_the_default_events_file_rotates_while_a_long_run_goes_on(tmp_path, monkeypatch):
    from statectl.run.events_file import default_events_writer

    monkeypatch.setenv("STATECTL_HOME", str(tmp_path))
    writer, why = default_events_writer("leaderboard", rotate_bytes=300)
    assert why is None
    event = {"type": "idle", "time": 1.0, "state": "IDLE", "query_id": None, "run_id": None}
    for _ in range(20):
        writer(event)
    writer.close()
    path = tmp_path / "events" / "leaderboard.jsonl"
    line = json.dumps(event, separators=(",", ":")) + "\n"
    # Never much past the limit, on disk at most twice it, and every line whole.
    assert path.stat().st_size <= 300 + len(line)
    assert (tmp_path / "events" / "leaderboard.jsonl.1").stat().st_size <= 300 + len(line)
    for file in (path, path.with_name("leaderboard.jsonl.1")):
        assert set(file.read_text().splitlines(True)) == {line}


def test_a_failing_default_events_file_warns_once_and_the_run_goes_on(tmp_path, monkeypatch):
    from statectl.run.events_file import default_events_writer

    monkeypatch.setenv("STATECTL_HOME", str(tmp_path))
    warnings = []
    writer, _ = default_events_writer("leaderboard", warn=warnings.append)

    class Full:
        def write(self, text):
            raise OSError(28, "No space left on device")

        def fileno(self):
            return 0

        def close(self):
            pass

    writer.stream.close()
    writer.stream = Full()
    monkeypatch.setattr("os.fstat", lambda fd: os.stat_result((0,) * 10))
    event = {"type": "idle", "time": 1.0, "state": "IDLE", "query_id": None, "run_id": None}
    writer(event)  # no exception: the run's other sinks (its display, --events -) must go on
    writer(event)
    writer.close()
    assert len(warnings) == 1 and "No space left on device" in warnings[0] and "the run goes on" in warnings[0]


def _status_and_ui_jobs(tmp_path, monkeypatch) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(name, checkpoint) of the jobs `statectl status` and `statectl ui` list here, each as its
    command finds them (the ui's events-file-only jobs aside: it alone reads events files)."""
    from statectl import project
    from statectl.checkpoint.lock import checkpoint_for
    from statectl.cli.common import project_job_configs
    from statectl.jobs.registry import load_job_config, shipped_configs
    from statectl.observe.status import project_jobs
    from statectl.ui.jobs import discover

    project.reset()
    resolved = project_job_configs()
    names = {str(job.config_path): job.name for job in resolved}
    status = [
        (names.get(str(path), config.job_name), str(checkpoint_for(config, None)))
        for path, config in project_jobs([(j.config_path, j.config) for j in resolved])
    ]
    ui = [(job.name, str(job.checkpoint)) for job in discover(load_job_config, shipped_configs) if job.job is not None]
    return status, ui


@pytest.mark.parametrize("project_file", [None, "jobs", "jobs-and-context"])
@pytest.mark.parametrize("events", [False, True], ids=["no-events-file", "events-files"])
def test_status_and_ui_list_the_same_jobs(tmp_path, monkeypatch, project_file, events):
    """One rule (statectl.project.jobs) for both: the project file's jobs, then the shipped jobs
    whose checkpoint exists where `statectl run JOB` keeps it; with or without a project file or
    a context, with or without events files."""
    from statectl import project

    monkeypatch.chdir(tmp_path)
    for name in ("STATECTL_PROJECT", "STATECTL_CONTEXT", "STATECTL_CLIENT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STATECTL_HOME", str(tmp_path / ".statectl"))
    root = tmp_path / "cps" if project_file == "jobs-and-context" else tmp_path / ".statectl" / "checkpoints"
    # Checkpoints of two shipped jobs where `statectl run JOB` keeps them, one of a project job.
    for job in ("leaderboard", "advanced-state-tombstones", "lb-eu"):
        (root / job / "offsets").mkdir(parents=True)
    shutil.copy(REPO / "statectl" / "jobs" / "configs" / "leaderboard.yaml", tmp_path / "lb.yaml")
    if project_file:
        context = (
            "current-context: dev\ncontexts:\n  dev:\n    checkpoint_root: cps\n"
            if project_file == "jobs-and-context"
            else ""
        )
        (tmp_path / "statectl.yaml").write_text(context + "jobs:\n  lb-eu: lb.yaml\n")
        if project_file == "jobs":  # no context: the config's own checkpoint_dir
            (tmp_path / "lb.yaml").write_text(
                (tmp_path / "lb.yaml")
                .read_text()
                .replace("checkpoint_dir: .statectl/checkpoints/leaderboard", f"checkpoint_dir: {root / 'lb-eu'}")
            )
    if events:
        folder = tmp_path / ".statectl" / "events"
        folder.mkdir(parents=True)
        for name in ("leaderboard", "lb-eu", "someone-elses"):
            (folder / f"{name}.jsonl").write_text("")
    try:
        status, ui = _status_and_ui_jobs(tmp_path, monkeypatch)
    finally:
        project.reset()
    assert status == ui
    names = [name for name, _ in status]
    assert "leaderboard" in names and any(n.startswith("advanced-state") for n in names)
    assert ("lb-eu" in names) == (project_file is not None)
