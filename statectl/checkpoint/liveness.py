"""Is a query running on this checkpoint that statectl's lock cannot see?

statectl's lock (lock.py) covers the runs statectl starts. A user's own job, started by
spark-submit or a notebook, takes no lock: the only signs of it are in the checkpoint itself. A
running query logs each batch's offsets before it runs the batch and writes its commit after, so:

- a batch logged or committed within the last few trigger intervals (the interval is read off the
  spacing of the last batches' files, as the trigger is nowhere in the checkpoint); and
- a batch logged and not yet committed, logged within that window (a query in the middle of it)

say a query may be running. Batches statectl itself wrote before it last released the lock (a run
that ended, a repartitioning) are not signs. A query that runs but has had nothing to do for
longer than the window writes nothing; the observer a user's job can attach (statectl.run.attach)
beats a heartbeat for it, on this machine, which is a sign too. The heartbeat is one of the lock's
cache records (lock.py writes it); this module only reads.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path

#: However often the batches come, a batch this recent is a sign.
MIN_WINDOW_S = 60.0
#: However rare the batches are, one older than this is not.
MAX_WINDOW_S = 3600.0
#: "The last few trigger intervals".
INTERVALS = 3
#: Files within this of statectl's own release of the lock were written by statectl's run.
RELEASE_SLACK_S = 2.0


@dataclass(frozen=True)
class LiveSign:
    """What was seen that says a query may be running, and when."""

    what: str
    at: float  # epoch seconds of the file that shows it
    window_s: float

    def line(self, now: float | None = None) -> str:
        ago = max(0, int((now or time.time()) - self.at))
        return f"{self.what} {ago} s ago"

    def to_dict(self, now: float | None = None) -> dict:
        return {
            "seen": self.what,
            "at": self.at,
            "seconds_ago": round((now or time.time()) - self.at, 1),
            "window_seconds": round(self.window_s, 1),
            "window_s": round(self.window_s, 1),  # the old name, kept for one release (removed in 0.7)
        }


def _batch_files(folder: Path) -> dict[int, float]:
    out = {}
    try:
        entries = list(folder.iterdir())
    except OSError:
        return out
    for entry in entries:
        if entry.name.isdigit():
            try:
                out[int(entry.name)] = entry.stat().st_mtime
            except OSError:
                continue
    return out


def activity_window(logged: dict[int, float]) -> float:
    """A few of the query's usual intervals between batches (from the last ten logged), within
    [MIN_WINDOW_S, MAX_WINDOW_S]."""
    times = [logged[b] for b in sorted(logged)[-10:]]
    gaps = [b - a for a, b in zip(times, times[1:]) if b > a]
    usual = statistics.median(gaps) if gaps else 0.0
    return min(MAX_WINDOW_S, max(MIN_WINDOW_S, INTERVALS * usual))


def live_sign(
    logged: dict[int, float], committed: dict[int, float], now: float, released_at: float | None = None
) -> LiveSign | None:
    """The sign of a live query in the offset and commit logs' file times (batch -> mtime), or None.
    ``released_at``: when statectl last released the checkpoint's lock."""
    if not logged:
        return None
    window = activity_window(logged)
    ours = (released_at or 0.0) + RELEASE_SLACK_S

    def recent(at: float) -> bool:
        return now - at <= window and at > ours

    last = max(logged)
    # A batch in flight can take much longer than the gap between batches (a catch-up, a restore):
    # a few of the longest recent batches' durations (offsets written to commit written) too.
    durations = [committed[b] - logged[b] for b in sorted(committed)[-10:] if b in logged and committed[b] >= logged[b]]
    in_flight = min(MAX_WINDOW_S, max(window, INTERVALS * max(durations, default=0.0)))
    if last not in committed and now - logged[last] <= in_flight and logged[last] > ours:
        return LiveSign(
            f"batch {last} was logged and is not committed yet (a query in the middle of it): logged",
            logged[last],
            in_flight,
        )
    done = max(committed) if committed else None
    if done is not None and recent(committed[done]):
        return LiveSign(f"batch {done} was committed", committed[done], window)
    if recent(logged[last]):
        return LiveSign(f"batch {last} was logged", logged[last], window)
    return None


def checkpoint_live_sign(
    checkpoint: Path, now: float | None = None, stale_since: float | None = None
) -> LiveSign | None:
    """The observer's heartbeat, else ``live_sign`` of the checkpoint on disk (two directory
    listings; nothing read). ``stale_since``: the caller holds the lock now, and took it over from
    a killed statectl run that last touched it then (``CheckpointLock.stale_since``)."""
    from statectl.checkpoint.lock import last_release, lock_path, read_run_lock

    now = now if now is not None else time.time()
    beat = heartbeat_sign(checkpoint, now)
    if beat is not None:
        return beat
    released = last_release(checkpoint) or 0.0
    if stale_since is None and read_run_lock(checkpoint).stale:
        try:
            stale_since = lock_path(checkpoint).stat().st_mtime
        except OSError:
            stale_since = None
    if stale_since is not None:
        # statectl's own run was killed and left its lock, last touched after its last batch.
        released = max(released, stale_since)
    return live_sign(_batch_files(checkpoint / "offsets"), _batch_files(checkpoint / "commits"), now, released)


# ---------------------------------------------------------------- the observer's heartbeat
#: A heartbeat older than this many of its intervals is a query that stopped without saying so.
HEARTBEATS_MISSED = 3


def read_heartbeat(checkpoint: Path) -> dict | None:
    import json

    from statectl.checkpoint.lock import cache_record

    try:
        doc = json.loads(cache_record("heartbeats", checkpoint).read_text())
        return doc if isinstance(doc, dict) and isinstance(doc.get("at"), (int, float)) else None
    except (OSError, ValueError):
        return None


def heartbeat_sign(checkpoint: Path, now: float) -> LiveSign | None:
    """A recent heartbeat of a live process (on this host) observing a query on ``checkpoint``."""
    import socket

    from statectl.checkpoint.lock import pid_alive

    beat = read_heartbeat(checkpoint)
    if beat is None:
        return None
    # a heartbeat an older statectl wrote says interval_s
    window = HEARTBEATS_MISSED * float(beat.get("interval_seconds") or beat.get("interval_s") or 10.0)
    if now - beat["at"] > window:
        return None
    pid = beat.get("pid")
    if beat.get("host") == socket.gethostname() and isinstance(pid, int) and not pid_alive(pid):
        return None  # the job's process is gone: it stopped without a word
    return LiveSign(
        f"the observer attached to query {beat.get('query_id')} (pid {pid}) reported it running", beat["at"], window
    )


def refuse_if_live(checkpoint: Path, force: bool, doing: str, lock=None) -> LiveSign | None:
    """Raise (exit 1) when a query statectl did not start may be running on ``checkpoint``, unless
    ``force``; returns the sign it overrode (or None). ``lock``: the CheckpointLock the caller
    holds, if it does."""
    from statectl.errors import OperationalError

    sign = checkpoint_live_sign(checkpoint, stale_since=getattr(lock, "stale_since", None))
    if sign is None or force:
        return sign
    raise OperationalError(
        f"refusing to {doing}: a query statectl did not start may be running on {checkpoint}: {sign.line()} "
        f"(within {int(sign.window_s)} s, a few of its batch intervals). Stop that query first; --force "
        f"changes the checkpoint anyway"
    )
