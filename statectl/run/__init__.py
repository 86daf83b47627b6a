"""Running a job: the runner, the monitor thread, lifecycle events, restore tracking, events files, metrics."""
