"""The architecture, stated as import rules and checked from the source with ``ast``.

Every import counts: a lazy one inside a function, and a relative one (``from ..checkpoint import
x``), resolved against the importing module's package.

- **Layers.** ``LAYERS`` lists the packages of ``statectl/`` (``statectl/jobs/`` among them) from the top down. A
  module imports its own package and the packages of lower layers; a peer in its own layer or
  anything above it, never.
- **Adapters from the top.** The command line and the renderers reach Kafka and Spark through the
  domains: ``statectl.render`` and ``statectl.__main__`` import no adapter, and ``statectl.cli``
  only ``statectl.adapters.local`` (``CLI_ADAPTERS``, the one named exception).
- **Jobs.** Only ``JOBS_IMPORTERS`` import ``statectl.jobs``.
- **Adapters among themselves.** ``ADAPTER_PEERS`` says which adapter imports which; adapters sit
  above only ``statectl.cluster`` and the kernel, so they import nothing else of statectl.
- **Heavy imports.** Inside ``statectl/``, only ``statectl/adapters/`` and the job topologies
  (``statectl/jobs/``) import PySpark, Py4J or confluent-kafka.
- **The checkpoint only reads.** No module of ``statectl/checkpoint/`` but its lock (``READING_ONLY``,
  ``WRITERS_ALLOWED``) calls a function that writes to a filesystem or an object store.
- **The object store from storage.** Only ``statectl.storage`` (the object-store adapter)
  imports boto3, botocore or fsspec.
- **The JVM from the adapters.** Only ``statectl/adapters/`` touches PySpark's JVM handles
  (``JVM_HANDLES``: ``_jvm``, ``_jsq``, ``_jwrite``...).
- **Shared rules have one home.** A name of ``SHARED_HOMES`` (the event types, a dead letter's
  fields, the endpoints' access checks, the job listing) is defined in its home module only.
- **No cycles** between modules of ``statectl/`` (``statectl/jobs/`` among them).
- The job catalogue and the command line's help load without PySpark.
- ``docs/architecture.md`` names every package there is, only packages there are, and the layers
  in ``LAYERS``' order.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("statectl",)
HEAVY = ("pyspark", "py4j", "confluent_kafka")
#: The object-store clients and the one package that imports them: ``statectl.storage`` is the
#: object-store adapter (docs/architecture.md), the rest of statectl reaches a store through it.
OBJECT_STORE_CLIENTS = ("boto3", "botocore", "fsspec", "s3fs")
OBJECT_STORE_ADAPTER = "statectl.storage"
DOC = REPO / "docs" / "architecture.md"

#: Top to bottom. A package is a top-level package of ``statectl/`` (``statectl.jobs`` among them, or a module
#: directly in ``statectl/``); the last layer is the kernel, ``statectl`` standing for its
#: ``__init__``.
LAYERS: list[tuple[str, ...]] = [
    ("statectl.__main__",),
    ("statectl.cli",),
    ("statectl.render",),
    ("statectl.run", "statectl.maintenance", "statectl.query", "statectl.produce", "statectl.dlq", "statectl.ui"),
    ("statectl.observe",),
    ("statectl.project",),
    ("statectl.jobs",),
    ("statectl.topics",),
    ("statectl.checkpoint",),
    ("statectl.config",),
    ("statectl.storage", "statectl.endpoints", "statectl.formats"),
    ("statectl.adapters",),
    ("statectl.cluster", "statectl.spark_support"),
    (
        "statectl",
        "statectl.errors",
        "statectl.paths",
        "statectl.text",
        "statectl.redact",
        "statectl.resources",
        "statectl.job_context",
    ),
]
LAYER_OF = {package: number for number, layer in enumerate(LAYERS, 1) for package in layer}

#: Above the domains, no adapter: these reach Kafka and Spark through the layers below them.
NO_ADAPTERS = ("statectl.__main__", "statectl.cli", "statectl.render")
#: The one exception: the local tools the CLI drives directly (the broker process, jar
#: resolution, the JVM archive) have no domain between them and the command.
CLI_ADAPTERS = "statectl.adapters.local"

#: The packages that may import ``statectl.jobs``: the command line, the domains that run or look at a job,
#: and the jobs themselves.
JOBS_IMPORTERS = (
    "statectl.cli",
    "statectl.run",
    "statectl.observe",
    "statectl.maintenance",
    "statectl.query",
    "statectl.produce",
    "statectl.jobs",
)

#: Which adapter may import which. Kafka is the bottom edge; Spark resolves its jars and its JVM
#: archive through local; local waits for its broker to answer through kafka, and the archive's
#: training run starts a Spark session.
ADAPTER_PEERS = {
    "statectl.adapters.kafka": (),
    "statectl.adapters.spark": ("statectl.adapters.local",),
    "statectl.adapters.local": ("statectl.adapters.kafka", "statectl.adapters.spark"),
}


#: Packages whose promise is to read only, and the one module of each that may write (a lock is a file).
READING_ONLY = {"statectl.checkpoint": ("statectl.checkpoint.lock",)}
#: Calls that change a filesystem or an object store: pathlib's, os's, shutil's, tempfile's,
#: statectl.storage's. ``open`` counts with a mode that writes; ``replace`` only as ``Path.replace``
#: is called (one positional argument, no keyword: ``str.replace`` takes two, ``dataclasses.replace``
#: keywords).
WRITING_CALLS = frozenset(
    {
        "write_text",
        "write_bytes",
        "unlink",
        "mkdir",
        "makedirs",
        "rmdir",
        "removedirs",
        "rmtree",
        "remove",
        "rename",
        "renames",
        "copy",
        "copy2",
        "copyfile",
        "copytree",
        "copy_to",
        "move",
        "touch",
        "symlink_to",
        "hardlink_to",
        "symlink",
        "link",
        "mkdtemp",
        "mkstemp",
        "NamedTemporaryFile",
        "TemporaryDirectory",
        "truncate",
        "chmod",
        "utime",
        "delete",
        "delete_many",
        "put_marker",
        "delete_marker",
    }
)


def writing_calls(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every call in ``path`` that writes to a filesystem (``WRITING_CALLS``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name in WRITING_CALLS:
            found.append((node.lineno, name))
        elif (
            name == "replace"
            and len(node.args) == 1
            and not node.keywords
            and not (
                isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "dataclasses"
            )
        ):
            found.append((node.lineno, name))
        elif name == "open":
            mode = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
            )
            if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) & set("wax+"):
                found.append((node.lineno, f"open(..., {mode.value!r})"))
    return sorted(found)


def module_name(path: Path, root: Path = REPO) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_modules(root: Path = REPO) -> dict[str, Path]:
    return {
        module_name(p, root): p
        for package in PACKAGES
        if (root / package).is_dir()
        for p in sorted((root / package).rglob("*.py"))
    }


def imports_of(name: str, path: Path, known: set[str]) -> list[tuple[str, int]]:
    """Every module the module ``name`` (at ``path``) imports, at any depth, as (dotted name, line).
    ``from a import b`` names ``a.b`` when that is a module of this repository, else ``a``; a
    relative import is resolved against the module's package first."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                if node.level - 1 >= len(package):
                    continue  # climbs out of the top package: Python refuses it before any rule could
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.append((sub if sub in known else module, node.lineno))
    return list(dict.fromkeys(found))  # `from a import b, c` is one import of a


def _under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def package_of(name: str) -> str | None:
    """The package of ``LAYERS`` a module belongs to (``statectl.x``, ``statectl``)."""
    parts = name.split(".")
    if parts[0] not in PACKAGES:
        return None
    return ".".join(parts[:2])


def adapter_of(name: str) -> str:
    return ".".join(name.split(".")[:3])


#: A rule the packages of layer 4 share lives in one module below them, and only there: a name
#: defined at the top of any other module of ``statectl/`` is a copy (copies drifted before:
#: the dashboard's list of event types, the metrics endpoint without the Host check).
SHARED_HOMES = {
    "EVENT_TYPES": "statectl.formats.events",
    "DEAD_LETTER_FIELDS": "statectl.formats.dead_letters",
    "HEADER_FIELDS": "statectl.formats.dead_letters",
    "TRUNCATED_BYTES": "statectl.formats.dead_letters",
    "parse_letter": "statectl.formats.dead_letters",
    "dead_letter_json": "statectl.formats.dead_letters",
    "is_loopback": "statectl.endpoints.access",
    "token_for": "statectl.endpoints.access",
    "host_header_ok": "statectl.endpoints.access",
    "address_family": "statectl.endpoints.access",
    "listen_error": "statectl.endpoints.access",
    "in_context": "statectl.project.jobs",
    "jobs_here": "statectl.project.jobs",
}

#: PySpark's handles on the JVM (Py4J objects behind a session, a query, a writer, a frame): only
#: ``statectl/adapters/`` touches them, so a Spark whose internals differ breaks one package.
JVM_HANDLES = frozenset({"_jvm", "_jsc", "_jsparkSession", "_jsq", "_jwrite", "_jdf", "_jreader", "_gateway"})

RULES = (
    "layers",
    "adapters",
    "jobs",
    "adapter-peers",
    "heavy",
    "object-store",
    "checkpoint-reads",
    "shared-homes",
    "jvm",
)


def violations(modules: dict[str, Path], root: Path = REPO) -> list[tuple[str, str]]:
    """(rule, line) for every import that breaks a rule; a module that is in no layer is a
    ``layers`` line of its own."""
    known = set(modules)
    out, unplaced = [], set()
    for name, path in modules.items():
        rel = path.relative_to(root)
        mine = package_of(name)
        if mine not in LAYER_OF:
            if mine not in unplaced:
                out.append(("layers", f"{rel}: {mine} is in no layer (place it in LAYERS)"))
            unplaced.add(mine)
            continue
        for imported, line in imports_of(name, path, known):
            out += _import_violations(name, mine, imported, f"{rel}:{line}: {name} imports {imported}")
        if mine in READING_ONLY and not _under(name, READING_ONLY[mine]):
            for line, call in writing_calls(path):
                out.append(
                    (
                        "checkpoint-reads",
                        f"{rel}:{line}: {name} calls {call} ({mine} only reads; only "
                        f"{', '.join(READING_ONLY[mine])} writes, its lock's files)",
                    )
                )
        out += [("shared-homes", f"{rel}:{line}") for line in _shared_copies(name, path)]
        if not _under(name, ["statectl.adapters"]):
            out += [("jvm", f"{rel}:{line}") for line in _jvm_handles(name, path)]
    return out


def _import_violations(name: str, mine: str, imported: str, where: str) -> list[tuple[str, str]]:
    """What one import (``where`` says it) of module ``name``, of package ``mine``, breaks."""
    out = []
    if (
        _under(imported, HEAVY)
        and name.startswith("statectl.")
        and not _under(name, ["statectl.adapters", "statectl.jobs"])
    ):
        out.append(("heavy", f"{where} (only statectl.adapters and statectl.jobs may import {imported.split('.')[0]})"))
    if _under(imported, OBJECT_STORE_CLIENTS) and not _under(name, [OBJECT_STORE_ADAPTER]):
        out.append(("object-store", f"{where} (only {OBJECT_STORE_ADAPTER}, the object-store adapter, imports it)"))
    theirs = package_of(imported)
    if theirs not in LAYER_OF or theirs == mine:
        if theirs == mine == "statectl.adapters":
            a, b = adapter_of(name), adapter_of(imported)
            allowed = ADAPTER_PEERS.get(a, ())
            if b != "statectl.adapters" and a != b and b not in allowed:
                others = f"only {', '.join(allowed)}" if allowed else "none"
                out.append(("adapter-peers", f"{where} ({a} may import {others} of the other adapters)"))
        return out
    if LAYER_OF[theirs] <= LAYER_OF[mine]:
        why = (
            "peers in a layer do not import each other"
            if LAYER_OF[theirs] == LAYER_OF[mine]
            else "imports go down the layers"
        )
        out.append(
            (
                "layers",
                f"{where} ({mine} (layer {LAYER_OF[mine]}) may not import {theirs} (layer {LAYER_OF[theirs]}): {why})",
            )
        )
    if theirs == "statectl.adapters" and mine in NO_ADAPTERS:
        if mine != "statectl.cli":
            out.append(
                (
                    "adapters",
                    f"{where} ({mine} never imports statectl.adapters: it reaches Kafka and Spark only through the "
                    "domains)",
                )
            )
        elif not _under(imported, [CLI_ADAPTERS]):
            out.append(
                (
                    "adapters",
                    f"{where} (statectl.cli imports no adapter but {CLI_ADAPTERS}, the local tools the CLI drives "
                    "directly: the broker process, jar resolution, the JVM archive)",
                )
            )
    if theirs == "statectl.jobs" and mine not in JOBS_IMPORTERS:
        out.append(("jobs", f"{where} (only {', '.join(JOBS_IMPORTERS)} import statectl.jobs)"))
    return out


def _jvm_handles(name: str, path: Path) -> list[str]:
    """``line: ...`` for each use of one of PySpark's JVM handles (``JVM_HANDLES``) in ``path``."""
    return [
        f"{node.lineno}: {name} reaches Spark's JVM through .{node.attr} (only statectl.adapters does)"
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Attribute) and node.attr in JVM_HANDLES
    ]


def _shared_copies(name: str, path: Path) -> list[str]:
    """``line: ...`` for each name of ``SHARED_HOMES`` the module ``name`` defines at its top
    level (a function, a class or an assignment) when it is not that name's home."""
    found = []
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined = [node.name]
        elif isinstance(node, ast.Assign):
            defined = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined = [node.target.id]
        else:
            continue
        for shared in defined:
            home = SHARED_HOMES.get(shared)
            if home and home != name:
                found.append(f"{node.lineno}: {name} defines {shared}, a shared rule whose one copy is in {home}")
    return found


def import_cycles(modules: dict[str, Path]) -> list[list[str]]:
    known = set(modules)
    graph = {
        name: sorted({imp for imp, _ in imports_of(name, path, known) if imp in known and imp != name})
        for name, path in modules.items()
    }
    # A package's __init__ is imported with any of its modules; edges to it are not cycles of code.
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    graph = {name: [t for t in targets if t not in packages] for name, targets in graph.items()}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return cycles


# ---------------------------------------------------------------- the code keeps the rules
def test_the_rules_see_the_code():
    modules = source_modules()
    assert "statectl.adapters.kafka.connect" in modules and "statectl.jobs.registry" in modules
    kafka_imports = {
        imp
        for imp, _ in imports_of(
            "statectl.adapters.kafka.connect", modules["statectl.adapters.kafka.connect"], set(modules)
        )
    }
    assert "confluent_kafka" in kafka_imports


@pytest.mark.parametrize("rule", RULES)
def test_the_code_keeps_the_rule(rule):
    assert [line for r, line in violations(source_modules()) if r == rule] == []


def test_no_import_cycles():
    assert import_cycles(source_modules()) == []


def test_every_package_is_in_a_layer():
    """A new package fails here until it is placed; a removed one until its entry goes."""
    statectl = REPO / "statectl"
    there = {"statectl"}
    there |= {f"statectl.{p.stem}" for p in statectl.glob("*.py") if p.stem != "__init__"}
    there |= {f"statectl.{p.parent.name}" for p in statectl.glob("*/__init__.py")}
    assert set(LAYER_OF) == there
    assert sum(len(layer) for layer in LAYERS) == len(LAYER_OF), "a package is in two layers"
    assert set(JOBS_IMPORTERS) <= set(LAYER_OF) and set(NO_ADAPTERS) <= set(LAYER_OF)


def test_every_adapter_is_placed():
    there = {f"statectl.adapters.{p.parent.name}" for p in (REPO / "statectl" / "adapters").glob("*/__init__.py")}
    assert set(ADAPTER_PEERS) == there
    assert all(set(peers) <= there for peers in ADAPTER_PEERS.values())


def test_adapters_sit_above_only_the_cluster_and_the_kernel():
    """So an adapter imports only other adapters, how a cluster is reached, which Spark is
    installed and the kernel."""
    below = [p for layer in LAYERS[LAYER_OF["statectl.adapters"] :] for p in layer]
    assert below == ["statectl.cluster", "statectl.spark_support", *LAYERS[-1]]


# ---------------------------------------------------------------- the rules catch a broken tree
BROKEN = [
    (
        "climb",
        {"statectl/checkpoint/x.py": "def f():\n    from statectl.run.runner import run_job\n"},
        [
            "statectl/checkpoint/x.py:2: statectl.checkpoint.x imports statectl.run.runner (statectl.checkpoint "
            "(layer 9) may not import statectl.run (layer 4): imports go down the layers)"
        ],
    ),
    (
        "peer",
        {"statectl/run/x.py": "from statectl.query.view import leaderboard_view\n"},
        [
            "statectl/run/x.py:1: statectl.run.x imports statectl.query.view (statectl.run (layer 4) may not "
            "import statectl.query (layer 4): peers in a layer do not import each other)"
        ],
    ),
    (
        "observe-climb",
        {"statectl/observe/x.py": "from statectl.run.events import read_events\n"},
        [
            "statectl/observe/x.py:1: statectl.observe.x imports statectl.run.events (statectl.observe (layer 5) may "
            "not import statectl.run (layer 4): imports go down the layers)"
        ],
    ),
    (
        "relative-climb",
        {
            "statectl/checkpoint/__init__.py": "",
            "statectl/checkpoint/x.py": "from ..run import runner\n",
            "statectl/run/runner.py": "",
        },
        [
            "statectl/checkpoint/x.py:1: statectl.checkpoint.x imports statectl.run.runner (statectl.checkpoint "
            "(layer 9) may not import statectl.run (layer 4): imports go down the layers)"
        ],
    ),
    (
        "render-adapters",
        {"statectl/render/x.py": "from statectl.adapters.kafka.admin import describe\n"},
        [
            "statectl/render/x.py:1: statectl.render.x imports statectl.adapters.kafka.admin (statectl.render never "
            "imports statectl.adapters: it reaches Kafka and Spark only through the domains)"
        ],
    ),
    (
        "cli-adapters",
        {"statectl/cli/x.py": "def f():\n    from statectl.adapters.kafka.admin import describe\n"},
        [
            "statectl/cli/x.py:2: statectl.cli.x imports statectl.adapters.kafka.admin (statectl.cli imports no "
            "adapter but statectl.adapters.local, the local tools the CLI drives directly: the broker process, jar "
            "resolution, the JVM archive)"
        ],
    ),
    (
        "checkpoint-jobs",
        {"statectl/checkpoint/x.py": "from statectl.jobs.registry import job_entry\n"},
        [
            "statectl/checkpoint/x.py:1: statectl.checkpoint.x imports statectl.jobs.registry (statectl.checkpoint "
            "(layer 9) may not import statectl.jobs (layer 7): imports go down the layers)",
            "statectl/checkpoint/x.py:1: statectl.checkpoint.x imports statectl.jobs.registry (only statectl.cli, "
            "statectl.run, statectl.observe, statectl.maintenance, statectl.query, statectl.produce, statectl.jobs "
            "import statectl.jobs)",
        ],
    ),
    (
        "render-jobs",
        {"statectl/render/x.py": "from statectl.jobs.registry import job_entry\n"},
        [
            "statectl/render/x.py:1: statectl.render.x imports statectl.jobs.registry (only statectl.cli, "
            "statectl.run, statectl.observe, statectl.maintenance, statectl.query, statectl.produce, statectl.jobs "
            "import statectl.jobs)"
        ],
    ),
    (
        "adapter-domain",
        {"statectl/adapters/kafka/x.py": "from statectl.topics.diff import TopicConfigDiff\n"},
        [
            "statectl/adapters/kafka/x.py:1: statectl.adapters.kafka.x imports statectl.topics.diff (statectl.adapters "
            "(layer 12) may not import statectl.topics (layer 8): imports go down the layers)"
        ],
    ),
    (
        "adapter-peer",
        {"statectl/adapters/spark/x.py": "from statectl.adapters.kafka.admin import describe\n"},
        [
            "statectl/adapters/spark/x.py:1: statectl.adapters.spark.x imports statectl.adapters.kafka.admin "
            "(statectl.adapters.spark may import only statectl.adapters.local of the other adapters)"
        ],
    ),
    (
        "heavy",
        {"statectl/run/x.py": "def f():\n    import pyspark.sql\n"},
        [
            "statectl/run/x.py:2: statectl.run.x imports pyspark.sql (only statectl.adapters and statectl.jobs may "
            "import pyspark)"
        ],
    ),
    (
        "checkpoint-writes",
        {
            "statectl/checkpoint/x.py": "import shutil\ndef f(p, q):\n    p.replace(q)\n"
            "    open(p, 'a')\n    shutil.copy2(p, q)\n",
            "statectl/checkpoint/lock.py": "def f(p):\n    p.write_text('pid')\n",
        },
        [
            "statectl/checkpoint/x.py:3: statectl.checkpoint.x calls replace (statectl.checkpoint only reads; only "
            "statectl.checkpoint.lock writes, its lock's files)",
            "statectl/checkpoint/x.py:4: statectl.checkpoint.x calls open(..., 'a') (statectl.checkpoint only reads; "
            "only statectl.checkpoint.lock writes, its lock's files)",
            "statectl/checkpoint/x.py:5: statectl.checkpoint.x calls copy2 (statectl.checkpoint only reads; only "
            "statectl.checkpoint.lock writes, its lock's files)",
        ],
    ),
    (
        "shared-copy",
        {"statectl/ui/x.py": "EVENT_TYPES = frozenset({'batch_progress'})\ndef token_for(host):\n    return None\n"},
        [
            "statectl/ui/x.py:1: statectl.ui.x defines EVENT_TYPES, a shared rule whose one copy is in "
            "statectl.formats.events",
            "statectl/ui/x.py:2: statectl.ui.x defines token_for, a shared rule whose one copy is in "
            "statectl.endpoints.access",
        ],
    ),
    (
        "object-store",
        {"statectl/observe/x.py": "def f():\n    import boto3\n", "statectl/storage/x.py": "import botocore\n"},
        [
            "statectl/observe/x.py:2: statectl.observe.x imports boto3 (only statectl.storage, the object-store "
            "adapter, imports it)"
        ],
    ),
    (
        "jvm",
        {
            "statectl/run/x.py": "def f(query):\n    return query._jsq.streamingQuery()\n",
            "statectl/adapters/spark/x.py": "def f(query):\n    return query._jsq.streamingQuery()\n",
        },
        ["statectl/run/x.py:2: statectl.run.x reaches Spark's JVM through ._jsq (only statectl.adapters does)"],
    ),
    (
        "no-layer",
        {"statectl/audit/__init__.py": "", "statectl/audit/log.py": "from statectl import errors\n"},
        ["statectl/audit/__init__.py: statectl.audit is in no layer (place it in LAYERS)"],
    ),
]


def _tree(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return source_modules(root)


@pytest.mark.parametrize("files, expected", [case[1:] for case in BROKEN], ids=[case[0] for case in BROKEN])
def test_a_broken_rule_is_reported(tmp_path, files, expected):
    """Each rule fails on a tree that breaks it once (so a passing run means something)."""
    assert [line for _, line in violations(_tree(tmp_path, files), tmp_path)] == expected


def test_a_cycle_is_reported(tmp_path):
    modules = _tree(
        tmp_path,
        {"statectl/run/a.py": "def f():\n    from statectl.run import b\n", "statectl/run/b.py": "from . import a\n"},
    )
    assert import_cycles(modules) == [["statectl.run.a", "statectl.run.b"]]


@pytest.mark.parametrize(
    "files",
    [
        {"statectl/cli/x.py": "from statectl.adapters.local.broker import broker_up\n"},
        {"statectl/adapters/local/x.py": "from statectl.adapters.kafka.connect import broker_answers\n"},
        {"statectl/adapters/spark/x.py": "from statectl.adapters.local import jars\nfrom statectl import errors\n"},
        {
            "statectl/render/x.py": "from statectl.observe.lag import LagReport\n"
            "from statectl.checkpoint import layout\n"
        },
        {
            "statectl/run/x.py": "from statectl.jobs.registry import job_entry\n"
            "from statectl.adapters.spark import session\n"
        },
        {"statectl/ui/x.py": "from statectl.observe.status import project_jobs\n"},
        {
            "statectl/checkpoint/x.py": "from . import layout\nfrom .decode import formats\n"
            "from ..config import sections\n"
        },
        {
            "statectl/checkpoint/x.py": "import dataclasses\ndef f(p, d):\n    open(p, 'rb')\n    p.read_text()\n"
            "    dataclasses.replace(d, a=1)\n    str(p).replace('a', 'b')\n"
        },
    ],
    ids=[
        "cli-local-adapters",
        "local-to-kafka",
        "spark-to-local",
        "render-down",
        "run-to-jobs",
        "ui-to-observe",
        "relative-down",
        "checkpoint-reading",
    ],
)
def test_an_allowed_import_passes(tmp_path, files):
    assert violations(_tree(tmp_path, files), tmp_path) == []


# ---------------------------------------------------------------- docs/architecture.md
def _doc_tree() -> list[str]:
    """The paths the tree block of docs/architecture.md names (``name/`` a folder, ``name.py`` a
    module, two spaces of indent per level)."""
    block = re.search(r"^```\n(.*?)^```", DOC.read_text(), re.M | re.S).group(1)
    named, stack = [], []
    for line in block.splitlines():
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip())) // 2
        entry = line.split()[0]
        stack = stack[:depth] + [entry.rstrip("/")]
        named.append("/".join(stack) + ("/" if entry.endswith("/") else ""))
    return named


def test_the_doc_names_every_package_there_is():
    named = _doc_tree()
    packages = {
        str(p.parent.relative_to(REPO)) + "/" for package in PACKAGES for p in (REPO / package).rglob("__init__.py")
    }
    domains = {str(p.relative_to(REPO)) for p in (REPO / "statectl").glob("*.py") if p.name != "__init__.py"}
    assert sorted((packages | domains) - set(named)) == []


def test_the_doc_names_only_what_exists():
    named = _doc_tree()
    assert [n for n in named if not (REPO / n).exists()] == []
    assert [n for n in named if n.endswith("/") and not (REPO / n).is_dir()] == []


def test_the_doc_lists_the_layers_in_order():
    section = DOC.read_text().split("## Layers", 1)[1].split("\n## ", 1)[0]
    listed = [
        tuple(re.findall(r"`((?:statectl|jobs)[\w.]*)`", line))
        for line in section.splitlines()
        if re.match(r"\d+\. ", line)
    ]
    assert listed == LAYERS


# ---------------------------------------------------------------- the light paths
@pytest.mark.parametrize(
    "code",
    [
        "import statectl.jobs.registry as r; r.load_job_config",
        "from statectl.cli.main import app",
    ],
    ids=["job-registry", "cli"],
)
def test_no_pyspark_or_kafka_client_on_the_light_paths(code):
    probe = (
        f"import sys; {code}; heavy = [m for m in {HEAVY!r} if m in sys.modules]; "
        "print(','.join(heavy)); sys.exit(1 if heavy else 0)"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"loaded: {done.stdout.strip()} {done.stderr[-500:]}"


def test_validating_a_config_loads_no_pyspark():
    probe = (
        "import sys; from statectl.jobs.registry import load_job_config; "
        "load_job_config(__import__('pathlib').Path('configs/leaderboard.yaml')); "
        f"sys.exit(1 if any(m in sys.modules for m in {HEAVY!r}) else 0)"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
