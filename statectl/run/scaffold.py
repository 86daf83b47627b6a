"""`statectl new job NAME`: the files a user's own job starts from (statectl/resources/scaffold/):
a module with a transformWithStateInPandas processor and its query, the YAML that runs it, a unit
test of the processor with PySpark's TwsTester and an integration test against a real broker."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

from statectl.errors import UsageError

_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")


@dataclass(frozen=True)
class Scaffold:
    name: str
    module: str
    directory: Path
    files: list[Path]

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "module": self.module,
            "directory": str(self.directory),
            "files": [str(f) for f in self.files],
        }


def _files(module: str) -> dict[str, str]:
    """Template -> the path it is written to, inside the job's folder."""
    return {
        "job.py.tmpl": f"{module}.py",
        "job.yaml.tmpl": f"{module}.yaml",
        "test_processor.py.tmpl": f"tests/test_{module}_processor.py",
        "test_integration.py.tmpl": f"tests/test_{module}_integration.py",
    }


#: The job's tests import its module from the folder above them.
PYTEST_INI = "[pytest]\npythonpath = .\ntestpaths = tests\n"


def new_job(name: str, directory: Path | None = None, force: bool = False) -> Scaffold:
    """Write a new job called ``name`` into ``directory`` (default: ./NAME); refuses to overwrite
    a file that is there unless ``force``."""
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"job name {name!r}: lower-case letters, digits, '-' and '_', starting with a letter "
            f"(e.g. click-alerts); it names the module, the topics and the checkpoint"
        )
    module = name.replace("-", "_")
    target = (directory or Path(name)).expanduser().resolve()
    outputs = {template: target / rel for template, rel in _files(module).items()}
    outputs["pytest.ini"] = target / "pytest.ini"
    present = [p for p in outputs.values() if p.exists()]
    if present and not force:
        raise UsageError(
            f"{present[0]} exists; choose another --dir, or --force to overwrite "
            f"{'it' if len(present) == 1 else f'these {len(present)} files'}"
        )
    root = resources.files("statectl.resources").joinpath("scaffold")
    for template, path in outputs.items():
        text = (
            PYTEST_INI
            if template == "pytest.ini"
            else Template(root.joinpath(template).read_text()).substitute(name=name, module=module)
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return Scaffold(name, module, target, list(outputs.values()))
