"""Progress for long commands, on stderr, quiet when not wanted: bars for counted work, the
steps of a wait (a broker or engine starting), and when the command started."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


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
        TextColumn("{task.description:<20}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:>12} rec/s", markup=False),
        TimeElapsedColumn(),
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

    with Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err(),
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            # Every record would redraw far more often than a terminal shows: every 500th.
            if done % 500 == 0 or done == total:
                bar.update(task, completed=done, total=total or None)

        yield update


class StepDisplay:
    """What a command waits for, told step by step (``display(text)``), on stderr: on a terminal a
    spinner naming the current step and how long it has lasted, gone when the command ends; on a
    pipe or in a log one line per new step, nothing redrawn."""

    def __init__(self, console=None, live: bool | None = None):
        import time

        from statectl.render import err

        self.console = console or err()
        self.live = self.console.is_terminal if live is None else live
        self.text: str | None = None
        self.since = time.monotonic()
        self._clock = time.monotonic
        self._live = None
        self._spinner = None

    def __call__(self, text: str) -> None:
        if text == self.text:
            return  # a wait tells its step on every poll: the step's clock keeps running
        self.text, self.since = text, self._clock()
        if not self.live:
            self.console.print(text, soft_wrap=True)
        elif self._live is None:
            from rich.live import Live
            from rich.spinner import Spinner

            self._spinner = Spinner("dots")
            self._live = Live(
                console=self.console,
                get_renderable=self._render,
                refresh_per_second=8,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()

    def line(self) -> str:
        """The current step with its time so far: ``waiting for ... (3 s)``."""
        return f"{self.text} ({int(self._clock() - self.since)} s)" if self.text else ""

    def _render(self):
        from rich.text import Text

        self._spinner.update(text=Text(self.line()))
        return self._spinner

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


@contextlib.contextmanager
def waiting_steps(console=None, live: bool | None = None) -> Iterator[StepDisplay]:
    """A StepDisplay for the length of the block: the callback an adapter's ``on_step`` takes."""
    display = StepDisplay(console, live)
    try:
        yield display
    finally:
        display.close()


def command_started() -> float:
    """When the command the user waits for started, on ``time.monotonic()``'s clock: the start of
    this process when it is the statectl program (so a figure includes the interpreter's start and
    the imports), else now (a command called in-process, as tests do)."""
    import os
    import sys
    import time

    now = time.monotonic()
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    program = getattr(spec, "name", None) == "statectl.__main__" or os.path.basename(sys.argv[0] or "") == "statectl"
    if not program:
        return now
    try:
        with open("/proc/self/stat") as f:
            stat = f.read()
        # Field 22, the start in clock ticks after boot; the fields after "(comm)" start at field 3.
        ticks = int(stat[stat.rfind(")") + 2 :].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - age if 0 <= age < 24 * 3600 else now
