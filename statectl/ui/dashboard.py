"""What the dashboard's API answers: the jobs with their state, last batch and lag, each job's
chart series, and a checkpoint's inspect-state report. Pure of HTTP: ``answer(path)`` gives a
status and a JSON body, so the routes are tested without a server.

Everything leaves through :func:`clean`: registered secrets become ``***`` wherever they appear,
values of secret-named keys are masked, and inline ``password=...`` text too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from statectl.errors import StatectlError
from statectl.redact import MASK, is_secret_key, mask_inline, scrub
from statectl.ui.jobs import UiJob
from statectl.ui.series import EventsSeries

#: States a run is in while it lives (docs/events.md's lifecycle).
LIVE_STATES = ("CREATED", "RESTORING", "RUNNING", "IDLE", "STOPPING")

#: How long an inspect-state report is reused (the page asks again when a user opens it).
CHECKPOINT_TTL_SECONDS = 5.0

#: How long `statectl advise`'s verdict on a job's state is reused (it reads the state files).
ADVICE_TTL_SECONDS = 30.0

#: How often GET /api/jobs looks for new jobs at most.
REDISCOVER_SECONDS = 10.0

#: The API's routes, as GET /api lists them.
ROUTES = {
    "/api/jobs": "every job: state, last batch, lag (records, seconds), rates, restore in progress",
    "/api/jobs/NAME": "one job, with its runs and their restores, and statectl advise's verdict on its state",
    "/api/jobs/NAME/series?from=N": (
        "the job's chart points (one per batch) from index N on; 'next' is where to ask from next"
    ),
    "/api/jobs/NAME/checkpoint": (
        "the job's checkpoint as statectl inspect-state --json reports it (layout, restore plan, findings)"
    ),
}


def clean(value: Any) -> Any:
    """A JSON-like value fit to show: secrets hidden (statectl.redact) in every string, the values
    of secret-named keys masked."""
    if isinstance(value, str):
        return mask_inline(scrub(value))
    if isinstance(value, dict):
        return {
            k: (MASK if isinstance(k, str) and is_secret_key(k) and v not in (None, "", {}, []) else clean(v))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def _progress(checkpoint: str) -> dict:
    """The checkpoint's last committed batch and whether a statectl run holds its lock (no Kafka,
    no Spark: two listings and the lock file)."""
    from statectl.checkpoint.lock import read_run_lock
    from statectl.checkpoint.progress import read_progress
    from statectl.storage.files import checkpoint_path

    out: dict[str, Any] = {
        "exists": False,
        "last_committed": None,
        "committed_at": None,
        "pending": None,
        "lock_held": False,
        "pid": None,
        "error": None,
    }
    try:
        path = checkpoint_path(checkpoint)
        lock = read_run_lock(path)
        out["lock_held"], out["pid"] = lock.running, lock.pid if lock.running else None
        if not path.exists():
            return out
        progress = read_progress(path)
    except StatectlError as exc:
        out["error"] = str(exc).splitlines()[0]
        return out
    except OSError as exc:
        out["error"] = f"cannot read it ({exc.strerror or exc})"
        return out
    out.update(
        exists=True,
        last_committed=progress.last_committed,
        committed_at=progress.committed_at,
        pending=progress.pending,
    )
    return out


def job_state(run_state: str | None, lock_held: bool, has_checkpoint: bool) -> str:
    """The state the page shows: the run's own while a run holds the checkpoint's lock; a run whose
    last event says it lives but whose lock nobody holds was killed (STOPPED); no run at all:
    STOPPED with a checkpoint, else NEW."""
    if run_state in ("TERMINATED", "FAILED") and not lock_held:
        return run_state
    if lock_held:
        return run_state if run_state in LIVE_STATES else "RUNNING"
    if run_state is not None or has_checkpoint:
        return "STOPPED"
    return "NEW"


class Dashboard:
    """The jobs and their followed events files; ``answer`` serves the API from them."""

    def __init__(
        self, jobs: list[UiJob], project: dict | None = None, rediscover: Callable[[], list[UiJob]] | None = None
    ):
        self.project = project or {}
        self._rediscover = rediscover
        self._lock = threading.Lock()
        self._jobs: dict[str, UiJob] = {}
        self._series: dict[str, EventsSeries] = {}
        self._checkpoints: dict[str, tuple[float, tuple[int, dict]]] = {}
        self._advice: dict[str, tuple[float, dict | None]] = {}
        self._discovered = time.monotonic()
        self._set_jobs(jobs)

    def _set_jobs(self, jobs: list[UiJob]) -> None:
        with self._lock:
            for job in jobs:
                series = self._series.get(job.name)
                if series is None or series.path != job.events_file:
                    self._series[job.name] = EventsSeries(job.events_file)
            # Swapped whole, after its series exist: a request reading it without the lock sees
            # the old jobs or the new ones, each with its series.
            self._jobs = {j.name: j for j in jobs}

    def refresh_jobs(self, force: bool = False) -> None:
        """Look again for jobs (a run of a new job started an events file), at most every
        REDISCOVER_SECONDS unless ``force``: it reads every job config again."""
        if self._rediscover is None:
            return
        now = time.monotonic()
        if force or now - self._discovered >= REDISCOVER_SECONDS:
            self._discovered = now
            self._set_jobs(self._rediscover())

    # ------------------------------------------------------------ views
    def job_view(self, job: UiJob, detail: bool = False) -> dict:
        series = self._series[job.name].refresh()
        summary = series.summary()
        run = series.current_run()
        progress = _progress(job.checkpoint) if job.checkpoint else None
        lock_held = bool(progress and progress["lock_held"])
        last = summary["last_point"] or {}
        state = job_state(run.state if run else None, lock_held, bool(progress and progress["exists"]))
        restores = [r for r in (run.to_dict()["restores"] if run else [])]
        view = {
            **job.to_dict(),
            "state": state,
            "run_state": run.state if run else None,
            "run_id": run.run_id if run else None,
            "running": lock_held,
            "pid": progress["pid"] if progress else None,
            "last_batch": run.last_batch
            if run and run.last_batch is not None
            else (progress["last_committed"] if progress else None),
            "last_committed_batch": progress["last_committed"] if progress else None,
            "last_event_time": (summary["last_event"] or {}).get("time"),
            "records_behind": last.get("records_behind"),
            "lag_seconds": last.get("lag_seconds"),
            "input_rows_per_second": last.get("input_rows_per_second"),
            "processed_rows_per_second": last.get("processed_rows_per_second"),
            "batch_duration_ms": last.get("batch_duration_ms"),
            "state_rows_total": last.get("state_rows_total"),
            "state_memory_bytes": last.get("state_memory_bytes"),
            "restoring": state == "RESTORING",
            "restores": restores,
            "error": run.error if run else None,
            "events": {
                k: summary[k] for k in ("exists", "events", "skipped_lines", "skipped_bytes", "points", "error")
            },
            "checkpoint_exists": bool(progress and progress["exists"]),
            "checkpoint_error": progress["error"] if progress else None,
        }
        if detail:
            view["state_advice"] = self.state_advice(job) if view["checkpoint_exists"] else None
            view["runs"] = summary["runs"]
            view["events"]["problems"] = summary["problems"]
        return view

    def state_advice(self, job: UiJob) -> dict | None:
        """`statectl advise`'s verdict on the job's state, for the page's banner and state chart:
        the trend, the warnings with their fixes, the nearest limit at the current rate."""
        cached = self._advice.get(job.name)
        if cached and time.monotonic() - cached[0] < ADVICE_TTL_SECONDS:
            return cached[1]
        from statectl.checkpoint.advice import AdviseOptions, advise, projection_text
        from statectl.storage.files import checkpoint_path

        try:
            advice = advise(AdviseOptions(checkpoint_path(job.checkpoint), events_files=[job.events_file]))
        except StatectlError as exc:
            answer = {"error": str(exc).splitlines()[0]}
        else:
            timed = [p for op in advice.operators for p in op.projections if p.seconds is not None]
            nearest = min(timed, key=lambda p: p.seconds) if timed else None
            growing = [op for op in advice.operators if op.rows.growing]
            answer = {
                "trend": advice.trend,
                "warned": advice.warned,
                "findings": [
                    {"severity": f.severity, "code": f.code, "message": f.message, "fix": f.fix}
                    for f in advice.warnings
                ],
                "rows_per_hour": sum(op.rows.per_hour or 0 for op in growing) if growing else 0,
                "projection": {"text": projection_text(nearest), "seconds": nearest.seconds} if nearest else None,
            }
        self._advice[job.name] = (time.monotonic(), answer)
        return answer

    def checkpoint_report(self, job: UiJob) -> tuple[int, dict]:
        name = job.name
        if not job.checkpoint:
            return 404, {"error": f"job {name} has no checkpoint statectl knows of (no job config)"}
        cached = self._checkpoints.get(name)
        if cached and time.monotonic() - cached[0] < CHECKPOINT_TTL_SECONDS:
            return cached[1]
        from statectl.checkpoint.inspect import InspectOptions, inspect_checkpoint
        from statectl.storage.files import checkpoint_path

        try:
            result = inspect_checkpoint(InspectOptions(path=checkpoint_path(job.checkpoint)))
            answer = (200, result.to_dict())
        except StatectlError as exc:
            answer = (404, {"error": str(exc).splitlines()[0], "checkpoint": job.checkpoint})
        self._checkpoints[name] = (time.monotonic(), answer)
        return answer

    # ------------------------------------------------------------ the routes
    def answer(self, target: str) -> tuple[int, Any]:
        """(status, JSON body) for a GET of ``target`` (path and query) under /api."""
        parts = urlsplit(target)
        query = parse_qs(parts.query)
        segments = [unquote(s) for s in parts.path.split("/")[1:]]
        if segments and segments[-1] == "" and len(segments) > 1:
            segments = segments[:-1]
        if segments == ["api"]:
            return 200, {"routes": ROUTES}
        if segments[:2] != ["api", "jobs"]:
            return 404, {"error": f"no route {parts.path}; GET /api lists the routes"}
        if len(segments) == 2:
            self.refresh_jobs()
            # One look at the jobs: a rediscovery on another thread swaps the dict, never changes it.
            return 200, clean({"project": self.project, "jobs": [self.job_view(j) for j in self._jobs.values()]})
        name = segments[2]
        if name not in self._jobs:
            self.refresh_jobs()
        job = self._jobs.get(name)
        if job is None:
            from statectl.text import did_you_mean

            return 404, clean(
                {"error": f"no job {name!r}{did_you_mean(name, list(self._jobs))}; GET /api/jobs lists them"}
            )
        rest = segments[3:]
        if not rest:
            return 200, clean(self.job_view(job, detail=True))
        if rest == ["series"]:
            raw = (query.get("from") or ["0"])[0]
            if not raw.isdigit():
                return 400, {"error": f"from={raw[:20]!r}: expected a point index (0 or more)"}
            series = self._series[name].refresh()
            return 200, clean({"job": name, **series.series(int(raw))})
        if rest == ["checkpoint"]:
            status, body = self.checkpoint_report(job)
            return status, clean(body)
        return 404, {"error": f"no route {parts.path}; GET /api lists the routes"}


def project_info(project) -> dict:
    """What the page's header says of the project: its file and context (names, no settings)."""
    if project is None or getattr(project, "file", None) is None:
        return {"file": None, "context": None}
    return {"file": str(project.file), "context": project.context_name}
