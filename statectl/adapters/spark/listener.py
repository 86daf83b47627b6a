"""The bridge from Spark's StreamingQueryListener to statectl: raw events handed to a callback."""

from __future__ import annotations

import time
from collections.abc import Callable


def make_listener(submit: Callable[[tuple], None]):
    """A StreamingQueryListener (pyspark imported here) that hands each event to ``submit``.

    It does the least it can on Spark's thread: ``onQueryStarted`` runs synchronously inside
    ``DataStreamWriter.start()``, and the other callbacks hold Spark's listener bus while they
    run. Parsing, restore tracking and rendering happen on the RunMonitor's thread.
    """
    from pyspark.sql.streaming import StreamingQueryListener

    class RunListener(StreamingQueryListener):
        def onQueryStarted(self, event) -> None:
            submit(("started", time.time(), str(event.id), str(event.runId), event.name))

        def onQueryProgress(self, event) -> None:
            submit(("progress", time.time(), event.progress.json))

        def on_progress_json(self, progress_json: str) -> None:
            submit(("progress", time.time(), progress_json))

        @property
        def _jlistener(self):
            # PySpark turns every progress into Python objects field by field, a py4j round trip
            # each, before onQueryProgress runs: most of this listener's cost on the driver
            # (docs/performance.md). Only its JSON is wanted here, which is one call. Falls back to PySpark's own
            # path where its internals differ.
            if not hasattr(self, "_jlistenerobj"):
                jlistener = _json_progress_jlistener(self)
                if jlistener is None:
                    return StreamingQueryListener._jlistener.fget(self)
                self._jlistenerobj = jlistener
            return self._jlistenerobj

        def onQueryIdle(self, event) -> None:
            submit(("idle", time.time(), str(event.id), str(event.runId)))

        def onQueryTerminated(self, event) -> None:
            submit(
                (
                    "terminated",
                    time.time(),
                    str(event.id),
                    str(event.runId),
                    event.exception,
                    event.errorClassOnException,
                )
            )

    return RunListener()


def _json_progress_jlistener(listener):
    """The JVM-side wrapper of ``listener``, handing progress over as JSON; None if PySpark's
    listener bridge is not the one this was written against."""
    from pyspark import SparkContext

    try:
        from pyspark.sql.streaming.listener import JStreamingQueryListener
    except ImportError:
        return None
    if SparkContext._jvm is None or not hasattr(JStreamingQueryListener, "onQueryProgress"):
        return None

    class JsonProgressBridge(JStreamingQueryListener):
        def onQueryProgress(self, jevent) -> None:
            self.pylistener.on_progress_json(jevent.progress().json())

    return SparkContext._jvm.PythonStreamingQueryListenerWrapper(JsonProgressBridge(listener))
