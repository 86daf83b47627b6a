"""Progress bars for long commands, on stderr, quiet when not wanted."""

from __future__ import annotations

import contextlib
from typing import Iterator


@contextlib.contextmanager
def record_progress(batches, enabled: bool = True) -> Iterator:
    """A rich progress bar per topic; yields the callback produce_batches wants (or None)."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from statectl.render import err

    # markup=False: the description is a topic name, shown as it is.
    columns = [
        TextColumn("{task.description:<20}", markup=False), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:>12} rec/s", markup=False), TimeElapsedColumn(),
    ]
    with Progress(*columns, console=err(), transient=False) as bar:
        totals = {b.topic: b.count for b in batches}
        tasks: dict[str, int] = {}

        def update(topic: str, sent: int) -> None:
            # Tasks appear when a topic starts sending, so nothing shows before the broker answered.
            if topic not in tasks:
                tasks[topic] = bar.add_task(topic, total=totals.get(topic) or None, rate="")
            task_id = tasks[topic]
            speed = bar.tasks[task_id].speed
            bar.update(task_id, completed=sent, rate=f"{speed:,.0f}" if speed else "")

        yield update


@contextlib.contextmanager
def count_progress(description: str, enabled: bool = True) -> Iterator:
    """One rich progress bar counting to a total known at the start; yields ``update(done, total)``
    (or None when disabled)."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from statectl.render import err

    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err(), transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            # Every record would redraw far more often than a terminal shows: every 500th.
            if done % 500 == 0 or done == total:
                bar.update(task, completed=done, total=total or None)

        yield update
