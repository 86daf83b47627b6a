"""PySpark and its JVM: the session (session), the listener bridge (listener), starting and
stopping queries (query), stage progress (progress), the driver log (log_tail), Spark's state data
source (state_source), offline state repartitioning (state_repartition) and the
transformWithState loader (tws)."""
