"""Renderers for `statectl kafka` and `statectl produce-test-data`."""

from __future__ import annotations

import shlex
from pathlib import Path

from rich.table import Table

from statectl.paths import display_path
from statectl.produce.send import ProduceReport
from statectl.render import emit_json, err, out


def broker_report(status, as_json: bool, action: str, waited: float | None = None) -> None:
    """``status``: what ``statectl kafka up|down|status`` learned of the local broker or cluster (its
    ``to_dict()`` is the JSON; renderers look at results, they never import the adapter behind them).
    ``waited``: how long ``up`` took from the command's start (the jars, the format and the wait
    included), the figure it prints; without it, the broker's own start (``ready_seconds``)."""
    if as_json:
        emit_json({"action": action, **status.to_dict()})
        return
    took = waited if waited is not None else status.ready_seconds
    if status.is_cluster:
        _cluster_report(status, action, took)
        return
    if action == "up":
        kind = " (secured: SASL_SSL, SCRAM-SHA-512)" if status.secure else ""
        if status.already_running:
            err().print(f"Kafka {status.kafka_version}{kind} is already running (pid {status.pid}).")
        else:
            err().print(
                f"Kafka {status.kafka_version}{kind} is up in {took:.1f} s (pid {status.pid}); "
                f"log: {display_path(status.log_file)}"
            )
        out().print(status.bootstrap_servers)
        if status.secure and status.client_config:
            # Paths only: the passwords stay in the files (mode 0600).
            err().print(f"client config (user statectl): {display_path(status.client_config)}", soft_wrap=True)
            err().print(f"admin config (user admin, super user): {display_path(status.admin_config)}", soft_wrap=True)
            err().print(f"CA certificate: {display_path(status.ca_file)}", soft_wrap=True)
            err().print("Connect with --client-config, or for every command of this shell:", soft_wrap=True)
            err().print(
                f"export STATECTL_CLIENT_CONFIG={shlex.quote(status.client_config)}",
                soft_wrap=True,
                markup=False,
                highlight=False,
            )
    elif action == "down":
        if status.running:
            err().print(f"Kafka broker (pid {status.pid}) stopped.")
        elif status.port is not None:
            err().print(f"No Kafka broker is running on port {status.port}.")
        else:
            err().print(f"No Kafka broker is running for {display_path(status.data_dir)}.")
    else:
        kind = "  secured (SASL_SSL)" if status.secure else ""
        if status.running:
            config = f"  client config {display_path(status.client_config)}" if status.client_config else ""
            out().print(
                f"running  {status.bootstrap_servers}{kind}  pid {status.pid}  data {display_path(status.data_dir)}  "
                f"log {display_path(status.log_file)}{config}",
                soft_wrap=True,
            )
        else:
            out().print(f"stopped{kind}  data {display_path(status.data_dir)}", soft_wrap=True)


def _nodes(ids: list[int]) -> str:
    return ("node " if len(ids) == 1 else "nodes ") + ", ".join(map(str, ids))


def _pids(nodes: list) -> str:
    pids = [str(n.pid) for n in nodes if n.pid is not None]
    return ("pid " if len(pids) == 1 else "pids ") + ", ".join(pids)


def _cluster_report(status, action: str, took: float | None = None) -> None:
    """A cluster: what changed on stderr; the bootstrap servers (up) or one line per node (status) on stdout."""
    every = len(status.nodes) == len(status.changed_nodes)
    changed = [n for n in status.nodes if n.node_id in status.changed_nodes]
    running = [n.node_id for n in status.nodes if n.running]
    what = f"cluster of {status.brokers} brokers" if every else f"{_nodes(status.changed_nodes)} of the cluster"
    if action == "up":
        if status.already_running:
            which = (
                f"cluster of {status.brokers} brokers is"
                if len(running) == len(status.nodes)
                else f"{_nodes(running)} of the cluster {'is' if len(running) == 1 else 'are'}"
            )
            err().print(
                f"Kafka {status.kafka_version} {which} already running "
                f"({_pids([n for n in status.nodes if n.running])})."
            )
        else:
            logs = (
                display_path(Path(status.data_dir) / "node-*" / "broker.log")
                if every
                else ", ".join(display_path(n.log_file) for n in changed)
            )
            verb = "are" if len(changed) > 1 and not every else "is"
            err().print(
                f"Kafka {status.kafka_version} {what} {verb} up in {took or 0:.1f} s ({_pids(changed)}); "
                f"log{'s' if len(changed) > 1 else ''}: {logs}",
                soft_wrap=True,
            )
        out().print(status.bootstrap_servers, soft_wrap=True)
    elif action == "down":
        if not changed:
            err().print(
                f"No Kafka broker of the cluster is running for {display_path(status.data_dir)}.", soft_wrap=True
            )
            return
        still = [n.node_id for n in status.nodes if n.running and n.node_id not in status.changed_nodes]
        rest = f"; {_nodes(still)} still {'runs' if len(still) == 1 else 'run'}" if still else ""
        err().print(f"Kafka {what} stopped ({_pids(changed)}){rest}.")
    else:
        head = f"running  {status.bootstrap_servers}" if status.running else "stopped"
        out().print(
            f"{head}  {len(running)} of {status.brokers} brokers running  data {display_path(status.data_dir)}",
            soft_wrap=True,
        )
        for n in status.nodes:
            line = f"  node {n.node_id}  {'running' if n.running else 'stopped'}  {n.address}"
            if n.running:
                line += f"  pid {n.pid}  log {display_path(n.log_file)}"
            out().print(line, soft_wrap=True)


def produce_report(report: ProduceReport, as_json: bool) -> None:
    if as_json:
        emit_json(report.to_dict())
        return
    table = Table(title=f"Produced to {report.bootstrap_servers}" + (" (interrupted)" if report.interrupted else ""))
    table.add_column("topic")
    table.add_column("delivered", justify="right")
    table.add_column("failed", justify="right")
    table.add_column("tombstones", justify="right")
    table.add_column("skipped blank lines", justify="right")
    table.add_column("created", justify="center")
    for t in report.topics:
        table.add_row(
            t.topic,
            f"{t.delivered:,}",
            f"{t.failed:,}",
            f"{t.tombstones:,}",
            f"{t.skipped_empty:,}",
            "yes" if t.topic in report.created_topics else "",
        )
    out().print(table)
    for t in report.topics:
        for reason, n in t.errors.items():
            err().print(f"  {t.topic}: {n:,} × {reason}")
    err().print(
        f"{report.delivered:,} records in {report.elapsed_seconds:.2f} s ({report.records_per_second:,.0f} records/s)"
    )
