"""Topic names completed from a real broker: by -b on the command line being completed, and by the
project's current context; the broker's internal topics left out; quickly.

Bad inputs tried: a prefix no topic has (nothing), a context whose broker is down beside the live
one (nothing from it, in time).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def topics(bootstrap):
    from confluent_kafka.admin import AdminClient, NewTopic

    names = [f"compl-{suffix}-{os.getpid()}" for suffix in ("scores", "scores-dlq", "players")]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result(30)
    deadline = time.monotonic() + 30
    while not set(names) <= set(admin.list_topics(timeout=5).topics) and time.monotonic() < deadline:
        time.sleep(0.2)
    return names


def _complete(cwd: Path, line: str) -> tuple[list[str], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STATECTL_", "KAFKA_BOOTSTRAP"))}
    words = line.split(" ")
    env.update(
        PATH=f"{BIN}:{env.get('PATH', '')}",
        PYTHONPATH=str(REPO),
        _STATECTL_COMPLETE="complete_bash",
        COMP_WORDS=line,
        COMP_CWORD=str(len(words) - 1),
    )
    started = time.monotonic()
    done = subprocess.run([str(BIN / "statectl")], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    return [w for w in done.stdout.splitlines() if w], time.monotonic() - started


def test_topics_by_bootstrap_flag(tmp_path, bootstrap, topics):
    prefix = "compl-scores"
    found, _ = _complete(tmp_path, f"statectl consume -b {bootstrap} {prefix}")
    assert found == sorted(n for n in topics if n.startswith(prefix))
    found, _ = _complete(tmp_path, f"statectl topic-config -b {bootstrap} compl-pl")
    assert found == [n for n in topics if "players" in n]
    none, _ = _complete(tmp_path, f"statectl consume -b {bootstrap} no-such-prefix-")
    assert none == []
    everything, _ = _complete(tmp_path, f"statectl consume -b {bootstrap} ")
    assert set(topics) <= set(everything) and not any(n.startswith("__") for n in everything)


def test_topics_by_the_current_context(tmp_path, bootstrap, topics):
    (tmp_path / "statectl.yaml").write_text(
        f"current-context: live\ncontexts:\n  live:\n    bootstrap_servers: "
        f"{bootstrap}\n  down:\n    bootstrap_servers: 127.0.0.1:1\n"
    )
    found, took = _complete(tmp_path, "statectl dlq show compl-scores-d")
    assert found == [n for n in topics if n.endswith(f"scores-dlq-{os.getpid()}")]
    assert took < 10
    down, took = _complete(tmp_path, "statectl dlq show --context down compl-")
    assert down == []
