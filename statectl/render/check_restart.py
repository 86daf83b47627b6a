"""Renderer for `statectl check-restart`: the verdict, then one line per finding (stdout)."""

from __future__ import annotations

from rich.text import Text

from statectl.checkpoint.restart_check import ACCEPTED, DIFFERENT, REFUSED, RestartVerdict
from statectl.render import emit_json, out

_STYLE = {REFUSED: "bold red", DIFFERENT: "yellow", ACCEPTED: "green"}
_HEADLINE = {
    REFUSED: "Spark will refuse to restart this checkpoint with the new code",
    DIFFERENT: "Spark will restart it, and treat something otherwise than the new code says",
    ACCEPTED: "Spark will restart it with the new code",
}


def verdict(result: RestartVerdict, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_dict())
        return
    console = out()
    console.print(
        Text.assemble(
            (_HEADLINE[result.verdict], _STYLE[result.verdict]),
            f"  (batch {result.batch} run on a scratch copy of {result.checkpoint} in {result.trial_seconds:.1f} s)",
        )
    )
    for finding in result.findings:
        console.print(
            Text.assemble(("  " + finding.kind.ljust(10), _STYLE[finding.kind]), finding.what), soft_wrap=True
        )
        if finding.detail:
            console.print(Text("             " + finding.detail, style="dim"), soft_wrap=True)
    if not result.findings:
        console.print("  nothing the checkpoint holds differs from what the new query needs")


def verdicts(results: list[tuple[str, RestartVerdict]], as_json: bool) -> None:
    """Several candidate configs: one verdict each, under its config's name."""
    if as_json:
        emit_json([{"config": config, **result.to_dict()} for config, result in results])
        return
    for config, result in results:
        out().print(Text(config, style="bold"))
        verdict(result, False)
