"""A user's own job: the code a config's ``job:`` names (docs/own-jobs.md).

``job: my_pkg.clicks:build`` (an importable module), ``job: ./clicks.py:build`` (a file beside the
YAML) or ``job: clicks`` (an installed package's entry point in the ``statectl.jobs`` group);
``:build`` is the default function. The function takes a job context and returns an unstarted
``DataStreamWriter``. The module may also declare:

- ``Params``: a pydantic model the config's ``params:`` must fit (checked before Spark starts, each
  problem with its line);
- ``TOPICS`` (or ``topics(params)``): the topics it reads and writes, as names or mappings with
  ``name``, ``partitions``, ``replication_factor``, ``configs``, ``output`` and ``managed``;
  created and checked before Spark starts, as the built-in jobs' topics are.

Everything that goes wrong in the user's code (an import, a missing function, a ``build`` that
raises, a wrong return) is a ``UserCodeError`` naming the user's file and line with the user's own
traceback frames, never statectl's or Py4J's.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

from statectl.config.sections import UserJobConfig, is_job_reference
from statectl.errors import ConfigError, UsageError
from statectl.topics.declared import DeclaredTopic

#: The entry-point group installed packages register their jobs in: ``clicks = my_pkg.clicks:build``.
ENTRY_POINT_GROUP = "statectl.jobs"
DEFAULT_FUNCTION = "build"
#: Spark APIs a job's code may call that older releases lack: attribute -> its gate (spark_support.GATES).
GATED_ATTRIBUTES = {"transformWithStateInPandas": "transformWithState", "transformWithState": "transformWithState-rows"}


class UserCodeError(UsageError):
    """The user's job code failed before Spark started (exit 2): the message names their file and
    line and shows their own frames."""


def entry_point_jobs() -> dict[str, str]:
    """Job name -> ``module:function`` of every job an installed package registers."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def user_job_names(job: str) -> str | None:
    """The code reference behind ``job`` when it names a user's job (a reference, or an entry
    point's name), else None."""
    if is_job_reference(job):
        return job
    return entry_point_jobs().get(job)


@dataclass(frozen=True)
class CodeLocation:
    """Where the job's function is: a module to import, or a .py file; and the function's name."""

    function: str
    module: str | None = None
    file: Path | None = None

    def describe(self) -> str:
        return f"{self.file or self.module}:{self.function}"


def parse_reference(reference: str, base_dir: Path) -> CodeLocation:
    """``pkg.mod[:fn]`` or ``path/to/file.py[:fn]`` (relative to ``base_dir``, the YAML's folder)."""
    text = reference.strip()
    target, sep, function = text.rpartition(":") if re.search(r":[A-Za-z_]\w*$", text) else (text, "", "")
    function = function or DEFAULT_FUNCTION
    if target.endswith(".py") or "/" in target or os.sep in target:
        path = Path(target).expanduser()
        return CodeLocation(function, file=(path if path.is_absolute() else base_dir / path).resolve())
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", target):
        raise UsageError(
            f"job: {reference!r} is not MODULE[:FUNCTION] (my_pkg.clicks:build) or "
            f"./FILE.py[:FUNCTION] (./clicks.py:build)"
        )
    return CodeLocation(function, module=target)


class _SingleJob:
    """What a catalogue entry offers the commands, for a job with no examples: its group is its id."""

    id: str

    @property
    def group(self) -> str:
        return self.id

    @property
    def example(self) -> None:
        return None


@dataclass
class UserJob(_SingleJob):
    """A user's job, as the runner and the day-2 commands use a catalogue entry."""

    id: str
    location: CodeLocation
    #: The folders put on sys.path (and the Python workers' PYTHONPATH) for the module to import.
    paths: list[Path] = field(default_factory=list)
    check_checkpoint: Callable | None = None  # a user job has no layout history of statectl's

    @classmethod
    def of(cls, config: UserJobConfig) -> UserJob:
        base = config.source.parent.resolve() if config.source else Path.cwd()
        reference = user_job_names(config.job)
        if reference is None:
            raise UsageError(f"job: {config.job!r} names no installed job (entry point group {ENTRY_POINT_GROUP})")
        location = parse_reference(reference, base)
        paths = [location.file.parent] if location.file else [base]
        return cls(config.job, location, paths)

    # ------------------------------------------------------------------ the code
    @cached_property
    def module(self) -> ModuleType:
        for path in reversed(self.paths):
            if str(path) not in sys.path:
                sys.path.insert(0, str(path))
        if self.location.file is not None:
            return self._import_file(self.location.file)
        try:
            return importlib.import_module(self.location.module)
        except ModuleNotFoundError as exc:
            _refuse_without_spark_extra(exc, self.location.module)
            if exc.name and self.location.module.split(".")[0] == exc.name.split(".")[0] and not _raised_inside(exc):
                raise UsageError(
                    f"job: cannot import {self.location.module!r}: no module {exc.name!r} on the "
                    f"Python path (install the package, or run statectl from the folder that holds "
                    f"it)"
                ) from None
            raise user_code_error(f"importing {self.location.module}", exc) from None
        except Exception as exc:
            raise user_code_error(f"importing {self.location.module}", exc) from None

    def _import_file(self, path: Path) -> ModuleType:
        if not path.is_file():
            raise UsageError(f"job: {path} does not exist" if not path.exists() else f"job: {path} is not a file")
        name = path.stem
        loaded = sys.modules.get(name)
        if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == path:
            return loaded
        if loaded is not None:
            raise UsageError(
                f"job: {path} is imported as module {name!r}, which is already another module "
                f"({getattr(loaded, '__file__', 'built in')}); rename the file"
            )
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        # Imported under its own name (not a made-up one), so that Spark's Python workers, which
        # get the file's folder on their PYTHONPATH, unpickle its functions by the same name.
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[name]
            _refuse_without_spark_extra(exc, path.name)
            raise user_code_error(f"importing {path.name}", exc) from None
        return module

    def builder(self) -> Callable[[Any], Any]:
        function = getattr(self.module, self.location.function, None)
        where = self.location.file or self.module.__file__
        if function is None:
            found = sorted(
                n
                for n, v in vars(self.module).items()
                if callable(v) and not n.startswith("_") and getattr(v, "__module__", None) == self.module.__name__
            )
            hint = f"; it defines {', '.join(found)}" if found else ""
            raise UsageError(
                f"job: {where} has no function {self.location.function!r}{hint} "
                f"(name it after ':', e.g. {self.location.describe().rsplit(':', 1)[0]}:"
                f"{found[0] if found else 'build'})"
            )
        if not callable(function):
            raise UsageError(f"job: {where}: {self.location.function} is a {type(function).__name__}, not a function")
        return function

    def spark_features(self) -> list[str]:
        """The gated Spark features the job's own source uses (``GATED_ATTRIBUTES``), read with
        ``ast`` before Spark starts; the modules it imports are not read (a missing attribute
        there is still one line: ``missing_feature``)."""
        where = self.location.file or Path(getattr(self.module, "__file__", "") or "")
        try:
            source = where.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return []
        return gated_features(source)

    def python_path(self) -> list[str]:
        """What Spark's Python workers need on PYTHONPATH to import the job's module."""
        return [str(p) for p in self.paths]

    # ------------------------------------------------------------------ what the module declares
    def params(self, config: UserJobConfig) -> Any:
        """``config.params`` as the module's ``Params`` model, else as it is; a ConfigError with the
        config's lines for every problem."""
        model = getattr(self.module, "Params", None)
        if model is None:
            return dict(config.params)
        from pydantic import BaseModel, ConfigDict, create_model

        from statectl.config.loader import RawConfig, validate_raw

        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise UsageError(
                f"job: {self.module.__file__}: Params must be a pydantic model class, found {type(model).__name__}"
            )
        if model.model_config.get("extra") is None:
            # A typo in params is a problem to report, as in the rest of the config, unless the
            # model says what to do with keys it does not know.
            model = type(
                model.__name__,
                (model,),
                {
                    "model_config": ConfigDict(**{**model.model_config, "extra": "forbid"}),
                    "__module__": model.__module__,
                },
            )
        raw = config.raw or RawConfig(config.model_dump(), "--set", {})
        # The whole config against a model whose params are the module's: problems come keyed and
        # lined as the file has them (params.threshold, its line, else the line of params:).
        whole = create_model(type(config).__name__, __base__=type(config), params=(model, ...))
        data = {**raw.data, "params": raw.data.get("params") or {}}
        checked = validate_raw(RawConfig(data, raw.source, raw.lines, raw.duplicates), whole)
        return checked.params

    def topics(self, config: UserJobConfig) -> list[DeclaredTopic]:
        declared = getattr(self.module, "TOPICS", None)
        if declared is None and callable(getattr(self.module, "topics", None)):
            try:
                declared = self.module.topics(self.params(config))
            except (UsageError, ConfigError):
                raise
            except Exception as exc:
                raise user_code_error("topics()", exc) from None
        if declared is None:
            return []
        if not isinstance(declared, (list, tuple)):
            raise UsageError(
                f"{self.module.__name__}.TOPICS: a list of topics (names or mappings), found {type(declared).__name__}"
            )
        return [_declared_topic(item, self.module.__name__) for item in declared]


_TOPIC_KEYS = {"name", "partitions", "replication_factor", "configs", "output", "managed", "about"}


def _declared_topic(item: Any, module: str) -> DeclaredTopic:
    where = f"{module}.TOPICS"
    if isinstance(item, str):
        return DeclaredTopic(item, 1, key=where)
    if not isinstance(item, dict) or "name" not in item:
        raise UsageError(
            f"{where}: each topic is a name or a mapping with 'name' (and partitions, configs, "
            f"output, ...), found {item!r}"
        )
    unknown = sorted(set(item) - _TOPIC_KEYS)
    if unknown:
        raise UsageError(
            f"{where}: topic {item['name']!r}: unknown key(s) {', '.join(unknown)} "
            f"(known: {', '.join(sorted(_TOPIC_KEYS))})"
        )
    if not isinstance(item.get("configs") or {}, dict):
        raise UsageError(f"{where}: topic {item['name']!r}: configs must be a mapping of topic configs")
    partitions = item.get("partitions", 1)
    if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
        raise UsageError(f"{where}: topic {item['name']!r}: partitions must be a whole number of at least 1")
    return DeclaredTopic(
        str(item["name"]),
        partitions,
        replication_factor=item.get("replication_factor"),
        configs={str(k): str(v) for k, v in (item.get("configs") or {}).items()},
        key=where,
        about=str(item.get("about", "")),
        managed=bool(item.get("managed", False)),
        output=bool(item.get("output", False)),
    )


# ---------------------------------------------------------------------- the user's frames
#: Where code that is not the user's lives: statectl, its jobs, the standard library, installed
#: packages (PySpark, Py4J, pydantic) and the import machinery.
def _not_users(filename: str) -> bool:
    if filename.startswith("<"):
        return True
    path = os.path.realpath(filename)
    ours = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the statectl package
    library = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return (
        path.startswith(ours + os.sep)
        or "site-packages" in path.split(os.sep)
        or any(path.startswith(p + os.sep) for p in library)
        or "/pyspark/" in path
        or "/py4j/" in path
    )


def _raised_inside(exc: BaseException) -> bool:
    """True when a frame of the user's own code is on the traceback (the module imported and failed)."""
    return any(not _not_users(f.filename) for f in traceback.extract_tb(exc.__traceback__))


def user_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _not_users(f.filename)]
    if isinstance(exc, SyntaxError) and exc.filename and not _not_users(exc.filename):
        frames.append(traceback.FrameSummary(exc.filename, exc.lineno or 0, "<module>", line=(exc.text or "").strip()))
    return frames


def format_frames(frames: list[traceback.FrameSummary]) -> str:
    return "".join(
        f'\n  File "{f.filename}", line {f.lineno}, in {f.name}' + (f"\n    {f.line}" if f.line else "") for f in frames
    )


#: What the "spark" extra installs that a job's code imports (the light install has none of them).
SPARK_EXTRA_MODULES = ("pyspark", "py4j", "pandas", "pyarrow", "numpy", "grpc")


def _refuse_without_spark_extra(exc: BaseException, what: str) -> None:
    """A job whose code imports PySpark (or what comes with it) on the light install: one line
    naming the extra, not the user's traceback."""
    from statectl.spark_support import SPARK_EXTRA

    missing = (getattr(exc, "name", None) or "").split(".")[0]
    if isinstance(exc, ModuleNotFoundError) and missing in SPARK_EXTRA_MODULES:
        raise UsageError(f"job: {what} imports {missing}, which is not installed: {SPARK_EXTRA}") from None


def gated_features(source: str) -> list[str]:
    """The gates of the gated attributes (``df.groupBy(...).transformWithStateInPandas``) a
    module's source uses, in ``GATED_ATTRIBUTES`` order; none for source that does not parse
    (importing it says why)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    return [gate for attr, gate in GATED_ATTRIBUTES.items() if attr in used]


def missing_feature(exc: BaseException) -> str | None:
    """The gate of a gated attribute an AttributeError says is missing (PySpark 3.5's GroupedData
    has no ``transformWithStateInPandas``), else None."""
    if isinstance(exc, AttributeError):
        name = getattr(exc, "name", None) or next(iter(re.findall(r"has no attribute '(\w+)'", str(exc))), None)
        return GATED_ATTRIBUTES.get(name)
    return None


def user_code_error(doing: str, exc: BaseException, error=UserCodeError) -> Exception:
    """One message for an exception out of the user's code: ``FILE:LINE: while DOING: Type: message``
    and the user's own frames under it (the innermost last, as Python prints them)."""
    frames = user_frames(exc)
    kind = type(exc).__name__
    text = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    where = f"{frames[-1].filename}:{frames[-1].lineno}: " if frames else ""
    message = f"{where}{doing} failed: {kind}: {text}".rstrip(": ")
    if frames:
        message += "\nTraceback (your code):" + format_frames(frames)
    return error(message)


# ---------------------------------------------------------------------- errors inside Spark
_PY_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)\s*$')
_PY_ERROR = re.compile(
    r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)|AssertionError|StopIteration)"
    r"(?::\s?(.*))?$"
)


def python_failure(text: str) -> str | None:
    """A Python error raised in Spark's Python workers (a UDF, a transformWithState processor, a
    foreachBatch function), out of the Java exception's text: ``FILE:LINE: Type: message`` and the
    user's own frames under it. None when no Python traceback of the user's code is in the text."""
    lines = text.splitlines()
    # Spark puts the worker's traceback after its own words on the first line
    # ("... from the Python worker: Traceback (most recent call last):"), then repeats it below.
    start = next(
        (i for i, line in enumerate(lines) if line.rstrip().endswith("Traceback (most recent call last):")), None
    )
    if start is None:
        return None
    frames: list[traceback.FrameSummary] = []
    error = None
    i = start + 1
    while i < len(lines):
        match = _PY_FRAME.match(lines[i])
        if match:
            code = lines[i + 1].strip() if i + 1 < len(lines) and not _PY_FRAME.match(lines[i + 1]) else None
            if not _not_users(match.group(1)):
                frames.append(traceback.FrameSummary(match.group(1), int(match.group(2)), match.group(3), line=code))
            i += 2 if code else 1
            continue
        found = _PY_ERROR.match(lines[i].strip())
        if found and lines[i].strip() and not lines[i].startswith(" "):
            error = lines[i].strip()
            break
        i += 1
    if not frames or error is None:
        return None
    last = frames[-1]
    return f"{last.filename}:{last.lineno}: {error}\nTraceback (your code):{format_frames(frames)}"


@dataclass
class CheckpointOnlyJob(_SingleJob):
    """A job known only by its checkpoint: it declares no topics (the checkpoint's offset log says
    what each source read) and has no layout history of statectl's to check."""

    id: str
    check_checkpoint: Callable | None = None

    def topics(self, config) -> list[DeclaredTopic]:
        return []
