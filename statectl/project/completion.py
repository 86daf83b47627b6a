"""What the shell completes from the project: contexts, checkpoint directories, and the topics of
the context's cluster, asked with a short time-out so a dead broker never holds up the shell.

Every function here answers something (an empty list at worst): a completion that raises
prints a traceback into the user's prompt.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from statectl.project import CONTEXT_ENV, ActiveProject, load

#: A completion waits this long for the cluster at most, connecting included.
TOPIC_TIMEOUT = 1.0
#: statectl's own checkpoint folder (the default of every job without a context).
LOCAL_CHECKPOINTS = Path(".statectl") / "checkpoints"


def project_for(project_file: Path | str | None, context: str | None) -> ActiveProject:
    """The project as the command line being completed names it; an empty one when the file is
    missing or broken (completion says nothing rather than an error)."""
    path = Path(project_file) if project_file else None
    try:
        return load(path, context)
    except Exception:
        try:
            # The context's name being wrong (typed, in the environment, or recorded by `context
            # use` before the file lost it) still leaves the file's contexts and jobs to offer.
            return load(path, None, env={k: v for k, v in os.environ.items() if k != CONTEXT_ENV}, recorded=False)
        except Exception:
            return ActiveProject()


def context_names(project: ActiveProject, incomplete: str = "") -> list[tuple[str, str]]:
    """(name, what it points at) of each context whose name starts with ``incomplete``."""
    out = []
    for name, context in project.contexts.items():
        if name.startswith(incomplete):
            what = context.bootstrap_servers or context.spark_remote or context.spark_master or ""
            out.append((name, ("current; " if name == project.context_name else "") + what))
    return out


def _subfolders(root: Path, hidden: bool = False) -> list[Path]:
    try:
        return sorted(p for p in root.iterdir() if p.is_dir() and (hidden or not p.name.startswith(".")))
    except OSError:
        return []


def _shown(path: Path, cwd: Path) -> str:
    """A path as the user would type it: relative below the working directory, else absolute."""
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def checkpoint_dirs(project: ActiveProject, incomplete: str = "", cwd: Path | None = None) -> list[tuple[str, str]]:
    """The checkpoints a day-2 command could mean: the folders under the current context's
    checkpoint root (a local one; an object store is not listed at a prompt) and under
    ./.statectl/checkpoints; then folders matching what is typed so far, as a path completer would."""
    cwd = (cwd or Path.cwd()).absolute()
    found: dict[str, str] = {}
    roots: list[tuple[Path, str]] = []
    context = project.context
    if context is not None and context.checkpoint_root and "://" not in context.checkpoint_root:
        roots.append((Path(context.checkpoint_root), f"context {context.name}"))
    roots.append((cwd / LOCAL_CHECKPOINTS, "this folder's .statectl"))
    for root, where in roots:
        for folder in _subfolders(root):
            found.setdefault(_shown(folder, cwd), f"checkpoint ({where})")
    head = incomplete.rpartition("/")[0] + "/" if "/" in incomplete else ""
    base = Path(head).expanduser() if head else Path(".")
    base = base if base.is_absolute() else cwd / base
    hidden = incomplete.rpartition("/")[2].startswith(".")
    for folder in _subfolders(base, hidden):
        found.setdefault(head + folder.name + "/", "")
    return [(name, help_) for name, help_ in found.items() if name.startswith(incomplete)]


def topic_names(cluster, incomplete: str = "", timeout: float = TOPIC_TIMEOUT) -> list[str]:
    """The cluster's topics starting with ``incomplete``, or [] when it does not answer within
    ``timeout`` seconds. The asking happens on a daemon thread that the caller never waits for
    past the time-out: librdkafka may take seconds more to give up a name it cannot resolve."""
    deadline = time.monotonic() + timeout
    box: dict[str, list[str]] = {}
    done = threading.Event()

    def ask() -> None:
        try:
            from statectl.adapters.kafka.admin import existing_topics
            from statectl.adapters.kafka.connect import admin_client

            admin = admin_client(cluster, **{"socket.connection.setup.timeout.ms": int(timeout * 1000)})
            left = max(0.1, deadline - time.monotonic())
            box["names"] = sorted(n for n in existing_topics(admin, left) if not n.startswith("__"))
        except BaseException:
            pass  # nothing to offer; the exception (and the client its frames hold) stays on this thread
        finally:
            done.set()

    threading.Thread(target=ask, name="complete-topics", daemon=True).start()
    done.wait(max(0.0, deadline - time.monotonic()))
    return [n for n in box.get("names", []) if n.startswith(incomplete)]


def completion_cluster(project: ActiveProject, bootstrap_flag: str | None = None, client_config: Path | None = None):
    """The cluster the command being completed would talk to (flag > env > context > default), or
    None when its settings cannot be read."""
    from statectl.cluster.load import load_cluster
    from statectl.project.precedence import kafka_context

    try:
        from_context = kafka_context(project.context) if project.context is not None else {}
        return load_cluster(bootstrap_flag, client_config, env=os.environ, **from_context)
    except Exception:
        return None
