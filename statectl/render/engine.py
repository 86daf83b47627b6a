"""Renderer for `statectl engine up | down | status`."""

from __future__ import annotations

from statectl.paths import display_path
from statectl.render import emit_json, err, out
from statectl.text import human_bytes


def engine_report(status, as_json: bool, action: str, waited: float | None = None, note: str | None = None) -> None:
    """``status``: the engine's EngineStatus (its ``to_dict()`` is the JSON). ``waited``: how long
    ``up`` took from the command's start, the figure it prints (else ``ready_seconds``). ``note``:
    why it was not warmed (a gate's line), on stderr either way."""
    if note:
        err().print(f"note: no warm-up: {note}", soft_wrap=True)
    if as_json:
        emit_json({"action": action, **status.to_dict()})
        return
    if action == "up":
        if status.already_running:
            err().print(f"The engine is already running (pid {status.pid}).")
        else:
            took = waited if waited is not None else status.ready_seconds
            warming = (status.warm_up or {}).get("state") == "running"
            err().print(
                f"Spark {status.spark_version} engine is up in {took:.1f} s (pid {status.pid}); "
                f"{'warming up in the background; ' if warming else ''}log: {display_path(status.log_file)}",
                soft_wrap=True,
            )
        out().print(status.remote)
    elif action == "down":
        if status.running:
            err().print(f"Engine (pid {status.pid}) stopped.")
        else:
            err().print(f"No engine is running for {display_path(status.data_dir)}.")
    elif status.running:
        out().print(
            f"running  {status.remote}  pid {status.pid}  RSS {human_bytes(status.rss_bytes or 0)}  "
            f"up {status.uptime_seconds:.0f} s  session time-out {status.session_timeout_seconds:g} s  "
            f"{warm_up_text(status.warm_up)}log {display_path(status.log_file)}",
            soft_wrap=True,
        )
    else:
        out().print(f"stopped  data {display_path(status.data_dir)}", soft_wrap=True)


def warm_up_text(warm_up: dict | None) -> str:
    """The status line's word on the warm-up (with its trailing gap), or nothing."""
    state = (warm_up or {}).get("state")
    seconds = (warm_up or {}).get("seconds")
    took = f" in {seconds:g} s" if isinstance(seconds, (int, float)) else ""
    return {
        "running": "warming up  ",
        "done": f"warm{took}  ",
        "failed": f"warm-up failed{took} (see the log)  ",
    }.get(state, "")
