"""Prints the checkpoint matrix (case x Spark version x verdict x restart) at the end of a run."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter):
    matrix = getattr(terminalreporter.config, "statectl_matrix", [])
    if not matrix:
        return
    write = terminalreporter.write_line
    terminalreporter.section("checkpoint matrix: inspect-state verdict against a real restart")
    write(f"{'case':34} {'spark':7} {'judged for':16} {'inspect-state':44} {'restart':8} agree  restart error")
    for o in matrix:
        codes = sorted({e["code"] for e in o.errors}) or [f"({w})" for w in o.warnings]
        verdict = f"exit {o.exit_code} {','.join(codes)}"
        agree = ("maybe" if o.may_fail else "yes") if o.agrees else "NO"
        write(
            f"{o.case:34} {o.spark_version:7} {o.verdict_for:16} {verdict:44} {'ok' if o.restart_ok else 'fails':8} "
            f"{agree:5}  {o.restart_error[:200]}"
        )
