"""docs/grafana/statectl.json: an importable Grafana dashboard whose every query names only metrics a
run exports.

The exported names come from a real RunMetrics' registry (what ``collect()`` yields, with the
suffixes the exposition format gives each type); the names a query uses come from reading its
PromQL: selectors and bare metric names count, functions, keywords, label matchers, grouping
labels, ranges, strings, numbers and Grafana's variables do not.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import REPO

DASHBOARD = REPO / "docs" / "grafana" / "statectl.json"

#: The series names each metric type is exposed as (Prometheus' exposition format, as
#: prometheus_client writes it; ``_created`` only where it writes one).
SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gaugehistogram": ("_bucket", "_gsum", "_gcount"),
    "summary": ("", "_sum", "_count", "_created"),
    "stateset": ("",),
    "enum": ("",),
    "info": ("_info",),
    "unknown": ("",),
}

#: PromQL's functions and aggregations a dashboard may call (a name not here is a typo, not a metric).
FUNCTIONS = {
    "abs",
    "absent",
    "absent_over_time",
    "avg",
    "avg_over_time",
    "bottomk",
    "ceil",
    "changes",
    "clamp",
    "clamp_max",
    "clamp_min",
    "count",
    "count_over_time",
    "count_values",
    "delta",
    "deriv",
    "exp",
    "floor",
    "group",
    "histogram_quantile",
    "idelta",
    "increase",
    "irate",
    "label_join",
    "label_replace",
    "last_over_time",
    "ln",
    "log2",
    "log10",
    "max",
    "max_over_time",
    "min",
    "min_over_time",
    "predict_linear",
    "present_over_time",
    "quantile",
    "quantile_over_time",
    "rate",
    "resets",
    "round",
    "scalar",
    "sgn",
    "sort",
    "sort_desc",
    "sqrt",
    "stddev",
    "stddev_over_time",
    "stdvar",
    "sum",
    "sum_over_time",
    "time",
    "timestamp",
    "topk",
    "vector",
}
KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
    "atan2",
}


def exported_metric_names() -> set[str]:
    """Every series name a run's metrics endpoint can show, from a real registry."""
    from statectl.run.metrics import RunMetrics

    names: set[str] = set()
    for family in RunMetrics("probe").registry.collect():
        derived = {family.name + suffix for suffix in SUFFIXES[family.type]}
        seen = {sample.name for sample in family.samples}
        assert seen <= derived, f"{family.name} ({family.type}) exports {seen - derived}, not derived from its type"
        names |= derived | seen
    return names


_VARIABLE = re.compile(r"\$\{[^}]*\}|\$__\w+|\$\w+|\[\[[^\]]*\]\]")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def promql_names(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, function names) an expression uses."""
    text = _VARIABLE.sub(" 1 ", expr)
    text = _STRING.sub(' "" ', text)
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers, after strings: a "}" in a value is gone
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges and subqueries
    text = re.sub(r"\boffset\s+-?\S+", " ", text)
    text = _GROUPING.sub(" ", text)
    text = re.sub(r"(?<![\w:])\d[\w.]*", " ", text)  # numbers, durations
    metrics, functions = set(), set()
    for match in _NAME.finditer(text):
        word = match.group()
        if text[match.end() :].lstrip().startswith("("):
            functions.add(word)
        elif word.lower() not in KEYWORDS:
            metrics.add(word)
    return metrics, functions


def variable_expr(variable: dict) -> str | None:
    """The PromQL inside a query variable (``label_values(SELECTOR, label)``, ``query_result(EXPR)``)."""
    query = variable.get("query")
    query = query.get("query", "") if isinstance(query, dict) else (query or "")
    found = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", query, re.S)
    if found:
        return found.group(1)
    if re.fullmatch(r"\s*label_values\(\s*\w+\s*\)\s*", query):
        return ""  # a label's values over every series: no metric named
    found = re.fullmatch(r"\s*query_result\((.*)\)\s*", query, re.S)
    return found.group(1) if found else query


def panels(dashboard: dict) -> list[dict]:
    """Every panel, those inside collapsed rows too."""
    found = []
    for panel in dashboard.get("panels", []):
        found.append(panel)
        found += panel.get("panels", [])
    return found


def queries(dashboard: dict) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and query variable."""
    found = [
        (f"panel {p.get('title')!r} target {t.get('refId')}", t["expr"])
        for p in panels(dashboard)
        for t in p.get("targets", [])
        if "expr" in t
    ]
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            found.append((f"variable {variable['name']!r}", variable_expr(variable)))
    return found


def unknown_names(dashboard: dict, exported: set[str]) -> list[str]:
    """What is wrong with a dashboard's queries: metrics statectl does not export, unknown functions."""
    problems = []
    for where, expr in queries(dashboard):
        metrics, functions = promql_names(expr)
        problems += [f"{where}: metric {name} is not exported" for name in sorted(metrics - exported)]
        problems += [f"{where}: {name}() is no PromQL function" for name in sorted(functions - FUNCTIONS)]
    return problems


@pytest.fixture(scope="module")
def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


@pytest.fixture(scope="module")
def exported() -> set[str]:
    return exported_metric_names()


@pytest.mark.parametrize(
    "expr, metrics, functions",
    [
        ('statectl_state_rows{job=~"$job"}', {"statectl_state_rows"}, set()),
        (
            'histogram_quantile(0.95, sum by (job, le) (rate(statectl_batch_duration_seconds_bucket{job=~"$job"}'
            "[$__rate_interval])))",
            {"statectl_batch_duration_seconds_bucket"},
            {"histogram_quantile", "sum", "rate"},
        ),
        (
            'sum(rate(a_total[5m])) by (reason) / on(job) group_left(x) b{le="+Inf", s="}"} offset 1h > bool 1e3',
            {"a_total", "b"},
            {"sum", "rate"},
        ),
        (
            'max by (job, topic, state) (statectl_input_lag_trend{job=~"${job:regex}"}) == 1',
            {"statectl_input_lag_trend"},
            {"max"},
        ),
        (
            "deriv(statectl_input_lag_seconds[5m:30s]) * 60 and up unless nan",
            {"statectl_input_lag_seconds", "up"},
            {"deriv"},
        ),
        ('{__name__="x"}', set(), set()),
    ],
    ids=[
        "selector",
        "histogram-quantile",
        "operators-modifiers-strings",
        "grafana-variable",
        "subquery-keywords",
        "name-matcher-only",
    ],
)
def test_promql_names_are_read_as_promql_reads_them(expr, metrics, functions):
    assert promql_names(expr) == (metrics, functions)


def test_the_exported_names_come_from_the_registry(exported):
    # Each type's names, as a scrape shows them.
    assert {
        "statectl_batches_total",
        "statectl_batch_duration_seconds_bucket",
        "statectl_batch_duration_seconds_sum",
        "statectl_batch_duration_seconds_count",
        "statectl_state_rows",
        "statectl_query_state",
    } <= exported
    assert "statectl_batches" not in exported and "statectl_batch_duration_seconds" not in exported


def test_every_query_names_only_metrics_statectl_exports(dashboard, exported):
    assert queries(dashboard), "no query found: the reader of the dashboard is broken"
    assert unknown_names(dashboard, exported) == []


def test_a_query_naming_a_metric_statectl_does_not_export_fails(dashboard, exported):
    broken = json.loads(json.dumps(dashboard))
    target = next(p for p in panels(broken) if p.get("targets"))["targets"][0]
    target["expr"] = (
        'rate(statectl_batch_duration_seconds{job=~"$job"}[5m]) + statectl_batches '
        "+ statectl_input_lag_secs + up + rates(statectl_batches_total[1m])"
    )
    broken["templating"]["list"][-1]["query"]["query"] = "label_values(statectl_jobs_total, job)"
    problems = unknown_names(broken, exported)
    for name in (
        "statectl_batch_duration_seconds",
        "statectl_batches",
        "statectl_input_lag_secs",
        "up",
        "statectl_jobs_total",
    ):
        assert any(f"metric {name} is not exported" in p for p in problems), (name, problems)
    assert any("rates() is no PromQL function" in p for p in problems)


def test_every_metric_statectl_exports_has_a_panel(dashboard, exported):
    """A new metric gets a panel: the dashboard shows everything a run exports."""
    from statectl.run.metrics import RunMetrics

    used = set().union(*(promql_names(expr)[0] for _, expr in queries(dashboard)))
    families = {f.name: f.type for f in RunMetrics("probe").registry.collect()}
    missing = [
        name
        for name, kind in families.items()
        if not any(name + suffix in used for suffix in SUFFIXES[kind] if suffix != "_created")
    ]
    assert missing == [], f"no panel shows {missing}: add one to docs/grafana/statectl.json"


def test_the_dashboard_is_importable(dashboard):
    """What Grafana's import needs: a schema version, a Prometheus data source chosen by a variable
    (no data source of one installation), a job variable from the metrics, unique panel ids."""
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    assert dashboard["uid"] and dashboard["title"] and dashboard["id"] is None
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    job = variables["job"]
    assert job["type"] == "query" and variable_expr(job).startswith("statectl_")
    assert job["query"]["query"].startswith("label_values(")
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids))
    for panel in panels(dashboard):
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"} and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        if panel["type"] == "row":
            continue
        assert panel["title"] and panel["description"], panel["id"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"]
            assert 'job=~"$job"' in target["expr"], (panel["title"], target["expr"])
