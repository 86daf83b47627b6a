"""The import rules that keep the layers apart, checked from the source with ``ast``.

- Inside ``statectl/``, only ``statectl/adapters/`` imports PySpark, Py4J or confluent-kafka (at
  any depth: a lazy import inside a function counts too).
- Adapters are edges: they import other adapters, the shared kernel (errors, paths, text, redact,
  packaged resources) and how a cluster is reached (``statectl.cluster``: bootstrap servers and
  client settings, which every Kafka client takes), never the other core domains, the CLI, the
  renderers or the jobs.
- Nothing below the CLI imports the CLI; the jobs never import the CLI or the renderers.
- No import cycles between modules of ``statectl/`` and ``jobs/`` (lazy imports count: a cycle
  hidden in a function is still a cycle a reader has to untangle).
- The job catalogue and the command line's help load without PySpark.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("statectl", "jobs")
HEAVY = ("pyspark", "py4j", "confluent_kafka")
KERNEL = ("statectl.errors", "statectl.paths", "statectl.text", "statectl.resources", "statectl.redact", "statectl.cluster")


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((REPO / package).rglob("*.py"))}


def imports_of(path: Path, known: set[str]) -> list[tuple[str, int]]:
    """Every module ``path`` imports (any depth), as (dotted name, line). ``from a import b`` names
    ``a.b`` when that is a module of this repository, else ``a``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.append((sub if sub in known else node.module, node.lineno))
    return found


def _under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def violations(modules: dict[str, Path]) -> list[str]:
    known = set(modules)
    out = []
    for name, path in modules.items():
        rel = path.relative_to(REPO)
        for imported, line in imports_of(path, known):
            where = f"{rel}:{line}: {name} imports {imported}"
            if name.startswith("statectl.") and _under(imported, HEAVY) and not _under(name, ["statectl.adapters"]):
                out.append(f"{where} (only statectl.adapters may import {imported.split('.')[0]})")
            if _under(name, ["statectl.adapters"]) and _under(imported, PACKAGES):
                if not (_under(imported, ["statectl.adapters"]) or _under(imported, KERNEL)):
                    out.append(f"{where} (an adapter imports only adapters and {', '.join(KERNEL)})")
            if _under(imported, ["statectl.cli"]) and not _under(name, ["statectl.cli"]) and name != "statectl.__main__":
                out.append(f"{where} (only the CLI imports the CLI)")
            if name.startswith("jobs") and _under(imported, ["statectl.render"]):
                out.append(f"{where} (jobs never import the renderers)")
    return out


def import_cycles(modules: dict[str, Path]) -> list[list[str]]:
    known = set(modules)
    graph = {name: sorted({imp for imp, _ in imports_of(path, known) if imp in known and imp != name})
             for name, path in modules.items()}
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


def test_the_rules_see_the_code():
    modules = source_modules()
    assert "statectl.adapters.kafka.connect" in modules and "jobs.registry" in modules
    kafka_imports = {imp for imp, _ in imports_of(modules["statectl.adapters.kafka.connect"], set(modules))}
    assert "confluent_kafka" in kafka_imports


def test_layers_import_in_one_direction():
    assert violations(source_modules()) == []


def test_no_import_cycles():
    assert import_cycles(source_modules()) == []


def test_a_broken_rule_is_reported(tmp_path, monkeypatch):
    """The checks fail on a tree that breaks them (so a passing run means something)."""
    fake = tmp_path / "statectl"
    (fake / "run").mkdir(parents=True)
    (fake / "adapters").mkdir()
    (fake / "run" / "a.py").write_text("def f():\n    import pyspark\n    from statectl.run import b\n")
    (fake / "run" / "b.py").write_text("from statectl.run import a\n")
    (fake / "adapters" / "edge.py").write_text("from statectl.topics.diff import TopicConfigDiff\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    modules = {module_name(p): p for p in sorted(fake.rglob("*.py"))}
    found = violations(modules)
    assert any("statectl.run.a imports pyspark" in v for v in found)
    assert any("statectl.adapters.edge imports statectl.topics.diff" in v for v in found)
    assert import_cycles(modules) == [["statectl.run.a", "statectl.run.b"]]


@pytest.mark.parametrize("code", [
    "import jobs.registry as r; r.load_job_config",
    "from statectl.cli.main import app",
], ids=["job-registry", "cli"])
def test_no_pyspark_or_kafka_client_on_the_light_paths(code):
    probe = (f"import sys; {code}; heavy = [m for m in {HEAVY!r} if m in sys.modules]; "
             "print(','.join(heavy)); sys.exit(1 if heavy else 0)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"loaded: {done.stdout.strip()} {done.stderr[-500:]}"


def test_validating_a_config_loads_no_pyspark():
    probe = ("import sys; from jobs.registry import load_job_config; "
             "load_job_config(__import__('pathlib').Path('configs/leaderboard.yaml')); "
             f"sys.exit(1 if any(m in sys.modules for m in {HEAVY!r}) else 0)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
