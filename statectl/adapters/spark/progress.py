"""What the driver can see of a running query besides its listener: stage tasks and its log file."""

from __future__ import annotations

from pathlib import Path


def local_log_file(spark) -> Path | None:
    """The file this JVM's Spark log goes to, when the executors run in it too (``local`` master).

    Read from the JVM (``-Dstatectl.spark.log``): a session reused in-process keeps the log file
    it started with, whatever ``$STATECTL_SPARK_LOG`` says now.
    """
    sc = spark.sparkContext
    if not str(sc.master).startswith("local"):
        return None  # executor logs live on the workers
    value = sc._jvm.java.lang.System.getProperty("statectl.spark.log")
    return Path(value) if value else None


class StagePoller:
    """Tasks of the stages of a run's micro-batch jobs (Spark groups a run's jobs by its run id)."""

    def __init__(self, spark, max_jobs: int = 4):
        self.tracker = spark.sparkContext.statusTracker()
        self.max_jobs = max_jobs

    def __call__(self, run_id: str) -> list[dict]:
        out = []
        for job_id in sorted(self.tracker.getJobIdsForGroup(run_id))[-self.max_jobs :]:
            job = self.tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else []:
                stage = self.tracker.getStageInfo(stage_id)
                if stage is not None and stage.numTasks:
                    out.append(
                        {
                            "stage_id": stage_id,
                            "tasks": stage.numTasks,
                            "completed": stage.numCompletedTasks,
                            "active": stage.numActiveTasks,
                            "failed": stage.numFailedTasks,
                        }
                    )
        return out
