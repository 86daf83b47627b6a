"""Prometheus metrics of a run, fed by its events and served over HTTP (``--metrics-port``).

One registry per run (never the process-wide default), so runs in one process do not collide.
Metric names follow Prometheus conventions: ``_total`` counters, base units (seconds, bytes).
"""

from __future__ import annotations

from statectl.endpoints import access
from statectl.errors import UsageError
from statectl.observe.lag_trend import TRENDS
from statectl.run.lifecycle import State
from statectl.run.state_growth import StateGrowth

_STATES = [state.value for state in State]


class RunMetrics:
    """An event sink that keeps the run's Prometheus metrics; ``serve`` exposes them."""

    def __init__(self, job: str):
        from prometheus_client import CollectorRegistry, Counter, Enum, Gauge, Histogram

        self.job = job
        self.registry = r = CollectorRegistry(auto_describe=True)
        label = ["job"]
        self.state = Enum("statectl_query_state", "Lifecycle state of the query", label, states=_STATES, registry=r)
        self.starts = Counter(
            "statectl_query_starts",
            "Queries started (a start on an existing checkpoint is a restart)",
            label,
            registry=r,
        )
        self.restarts = Counter(
            "statectl_query_restarts", "Starts that restored state from the checkpoint", label, registry=r
        )
        self.failures = Counter("statectl_query_failures", "Queries that terminated with an error", label, registry=r)
        self.batches = Counter("statectl_batches", "Micro-batches completed", label, registry=r)
        self.input_rows = Counter("statectl_input_rows", "Input rows processed", label, registry=r)
        self.input_rate = Gauge("statectl_input_rows_per_second", "Input rate of the last batch", label, registry=r)
        self.processed_rate = Gauge(
            "statectl_processed_rows_per_second", "Processing rate of the last batch", label, registry=r
        )
        self.batch_duration = Histogram(
            "statectl_batch_duration_seconds",
            "Micro-batch duration (triggerExecution)",
            label,
            registry=r,
            buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, float("inf")),
        )
        self.state_rows = Gauge("statectl_state_rows", "Rows in state, per operator", ["job", "operator"], registry=r)
        self.state_memory = Gauge(
            "statectl_state_memory_bytes", "State store memory, per operator", ["job", "operator"], registry=r
        )
        self.state_growth_rate = Gauge(
            "statectl_state_growth_rows_per_hour",
            "Growth of the operator's state rows per hour of wall time over the last "
            "batches (0 while it stays bounded; statectl advise)",
            ["job", "operator"],
            registry=r,
        )
        self.state_unbounded = Gauge(
            "statectl_state_unbounded",
            "1 when the operator's state rows grow without bound over the last batches "
            "(linear or accelerating), else 0",
            ["job", "operator"],
            registry=r,
        )
        self._growth = StateGrowth()
        self.records_behind = Gauge(
            "statectl_input_records_behind",
            "Kafka records between the last batch's end and the latest offsets it saw",
            ["job", "source"],
            registry=r,
        )
        self.lag_seconds = Gauge(
            "statectl_input_lag_seconds",
            "Age of the next unread Kafka record after the last batch (0: nothing left to read)",
            ["job", "topic"],
            registry=r,
        )
        # Enum-like, with a label of its own name (prometheus_client's Enum names it after the
        # metric): 1 for the topic's current trend, 0 for the others
        self.lag_trend = Gauge(
            "statectl_input_lag_trend",
            "Trend of the topic's lag over the last batches: 1 for the current state "
            "(caught_up, falling, steady, growing, stalled, unknown)",
            ["job", "topic", "state"],
            registry=r,
        )
        self.restores = Counter(
            "statectl_restores", "Operator state restores finished", ["job", "operator"], registry=r
        )
        self.restore_duration = Gauge(
            "statectl_restore_duration_seconds",
            "Duration of the operator's last restore",
            ["job", "operator"],
            registry=r,
        )
        self.restore_files = Gauge(
            "statectl_restore_replayed_changelog_files",
            "Changelog files replayed by the operator's last restore",
            ["job", "operator"],
            registry=r,
        )
        self.dead_letters = Counter(
            "statectl_dead_letters",
            "Records routed to the dead-letter topic, per reason",
            ["job", "reason"],
            registry=r,
        )
        self.state.labels(job).state("CREATED")
        for counter in (self.starts, self.restarts, self.failures, self.batches, self.input_rows):
            counter.labels(job)  # exported as 0 from the start, not only once incremented
        self._server = None
        self._thread = None

    def serve(self, port: int, host: str = "127.0.0.1") -> RunMetrics:
        if not 0 <= port < 65536:
            raise UsageError(f"--metrics-port {port}: expected a port number (0: any free port)")
        self._server, self._thread = _start_metrics_server(host, port, self.registry)
        return self

    @property
    def url(self) -> str | None:
        if self._server is None:
            return None
        host, port = self._server.server_address[:2]
        return f"http://{access.url_host(host)}:{port}/metrics"

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __call__(self, event: dict) -> None:
        if event.get("state") in _STATES:
            self.state.labels(self.job).state(event["state"])
        kind = event["type"]
        if kind == "query_started":
            self.starts.labels(self.job).inc()
            if event.get("restore_planned"):
                self.restarts.labels(self.job).inc()
        elif kind == "batch_progress":
            self._batch(event)
        elif kind == "restore_finished":
            op = str(event["operator_id"])
            self.restores.labels(self.job, op).inc()
            self.restore_duration.labels(self.job, op).set((event["duration_ms"] or 0) / 1000)
            if event["replay_files"] is not None:
                self.restore_files.labels(self.job, op).set(event["replay_files"])
        elif kind == "terminated" and event.get("error"):
            self.failures.labels(self.job).inc()

    def _batch(self, event: dict) -> None:
        job = self.job
        self.batches.labels(job).inc()
        self.input_rows.labels(job).inc(event["input_rows"])
        self.input_rate.labels(job).set(event["input_rows_per_second"])
        self.processed_rate.labels(job).set(event["processed_rows_per_second"])
        self.batch_duration.labels(job).observe(event["batch_duration_ms"] / 1000)
        for op in event["state_operators"]:
            self.state_rows.labels(job, str(op["operator_id"])).set(op["rows_total"])
            self.state_memory.labels(job, str(op["operator_id"])).set(op["memory_bytes"])
        self._growth(event)
        for oid, grew in self._growth.growth().items():
            self.state_growth_rate.labels(job, str(oid)).set(grew.per_hour if grew.growing and grew.per_hour else 0)
            self.state_unbounded.labels(job, str(oid)).set(1 if grew.growing else 0)
        for source in event["sources"]:
            self._source_lag(source)
        for metrics in event["observed"].values():
            for name, value in metrics.items():
                if name.startswith("dropped_") and value:
                    self.dead_letters.labels(job, name[len("dropped_") :]).inc(value)

    def _source_lag(self, source: dict) -> None:
        job = self.job
        if source["records_behind"] is not None:
            self.records_behind.labels(job, source["description"] or "?").set(source["records_behind"])
        for topic, lag in (source.get("lag_by_topic") or {}).items():
            if lag["lag_seconds"] is not None:
                self.lag_seconds.labels(job, topic).set(lag["lag_seconds"])
            for state in TRENDS:
                self.lag_trend.labels(job, topic, state).set(1 if state == lag["lag_trend"] else 0)


def _start_metrics_server(host: str, port: int, registry, token: str | None = None):
    """prometheus_client's ``start_http_server``, except that its loop polls for shutdown ten times
    as often as the standard library's default, so the end of a run does not wait on it, and that
    off loopback it answers only requests with its token (``token``, else $STATECTL_METRICS_TOKEN;
    Prometheus sends it as ``Authorization: Bearer T``): none there is a UsageError."""
    import os
    import threading
    from http import HTTPStatus
    from wsgiref.simple_server import WSGIRequestHandler

    from prometheus_client import make_wsgi_app
    from prometheus_client.exposition import ThreadingWSGIServer

    token, _ = access.token_for(
        host, token or os.environ.get("STATECTL_METRICS_TOKEN") or None, "--metrics-token", generate=False
    )
    metrics_app = make_wsgi_app(registry)

    def app(environ, start_response):
        headers = {
            "Authorization": environ.get("HTTP_AUTHORIZATION", ""),
            "Cookie": "",
            "Host": environ.get("HTTP_HOST", ""),
        }
        refused = access.refusal(
            token,
            headers,
            "?" + environ.get("QUERY_STRING", ""),
            server="the metrics endpoint",
            realm="statectl metrics",
            send_token="send Authorization: Bearer T",
        )
        if refused is None:
            return metrics_app(environ, start_response)
        body = (refused.message + "\n").encode()
        start_response(
            f"{refused.status} {HTTPStatus(refused.status).phrase}",
            [("Content-Type", "text/plain"), ("Content-Length", str(len(body))), *refused.headers.items()],
        )
        return [body]

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, format, *args):  # no access log on stderr
            pass

    server = access.listen(
        ThreadingWSGIServer, host, port, QuietHandler, port_flag="--metrics-port", host_flag="--metrics-host"
    )
    server.set_app(app)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name="statectl-metrics"
    )
    thread.start()
    return server, thread
