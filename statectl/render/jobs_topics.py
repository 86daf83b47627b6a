"""Renderer for `statectl topic-config --print-file`: the topics file the jobs declare, as YAML
(written as it is, to be redirected into a file) or as JSON."""

from __future__ import annotations

import sys

from statectl.render import emit_json
from statectl.topics.jobs_file import JobsTopicsFile


def jobs_topics_file(generated: JobsTopicsFile, as_json: bool) -> None:
    if as_json:
        emit_json(generated.to_dict())
        return
    # Byte for byte what the committed file must hold: no console layout in between.
    sys.stdout.write(generated.text())
    sys.stdout.flush()
