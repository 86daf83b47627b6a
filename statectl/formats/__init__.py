"""What statectl writes that more than one of its packages reads: the events file's event types
(written by a run, read by the dashboard and ``statectl events``) and a dead letter's fields
(written by the jobs, read by ``statectl dlq``). One copy of each, below the packages that share it."""
