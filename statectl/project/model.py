"""The project file read strictly: statectl.yaml's keys as a model, secrets refused before anything
else reads a value, paths made absolute from the file's folder.

Imported only when a project file exists and something asks for it (YAML and pydantic are not
paid for by ``statectl --help``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from statectl import redact
from statectl.config.loader import RawConfig, read_yaml, validate_raw
from statectl.config.model import Section, Text
from statectl.errors import ConfigError
from statectl.project.context import Context

#: A value that names where a secret is instead of holding it: ``${NAME}`` or ``@path``.
_REFERENCE = re.compile(r"^(\$\{[A-Za-z_][A-Za-z0-9_]*\}|@[^@].*)$", re.DOTALL)
#: Names of contexts and project jobs: they are typed on command lines and name folders.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
STORAGE_PREFIX = "fs.s3a."


def is_reference(value: Any) -> bool:
    """Whether ``value`` is ``${ENV}`` or ``@file`` (a secret's reference, not the secret)."""
    return isinstance(value, str) and bool(_REFERENCE.match(value.strip()))


def _name(value: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValueError("takes letters, digits, '.', '_' and '-', starting with a letter or digit")
    return value


def _remote(value: str) -> str:
    if not value.startswith("sc://"):
        raise ValueError(f"expected a Spark Connect URL sc://HOST:PORT, found {value!r}")
    return value


def _storage(value: dict[str, str]) -> dict[str, str]:
    wrong = [k for k in value if not k.startswith(STORAGE_PREFIX)]
    if wrong:
        raise ValueError(f"expected fs.s3a.* keys (Hadoop's S3A settings), found {', '.join(map(repr, wrong))}")
    return value


class ContextSection(Section):
    """One named context of the project file."""

    bootstrap_servers: Text | None = Field(None, description="HOST:PORT[,HOST:PORT...]")
    client_config: Text | None = Field(None, description="the path of a Kafka client.properties file")
    spark_master: Text | None = Field(None, description="a Spark master such as local[*] or spark://HOST:7077")
    spark_remote: Annotated[Text, AfterValidator(_remote)] | None = None
    checkpoint_root: Text | None = Field(None, description="a folder or s3a:// URL")
    storage_config: Text | None = Field(None, description="the path of an fs.s3a.* properties file")
    storage: Annotated[dict[str, Text], AfterValidator(_storage)] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_spark(self) -> ContextSection:
        if self.spark_master and self.spark_remote:
            raise ValueError("spark_master and spark_remote both say where Spark runs; give one")
        return self


class ProjectSection(Section):
    """The whole project file."""

    #: written current-context: in the file (kubectl's and kafkactl's spelling)
    current_context: Annotated[Text, AfterValidator(_name)] | None = None
    contexts: dict[Annotated[str, AfterValidator(_name)], ContextSection] = Field(default_factory=dict)
    jobs: dict[Annotated[str, AfterValidator(_name)], Text] = Field(default_factory=dict)


def secret_problems(raw: RawConfig) -> list[str]:
    """``file:line: key: ...`` for every secret written into the file as a literal. The value is
    registered with statectl.redact at once and never quoted: the message names the key only."""
    problems: list[str] = []

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk_entry(str(key), value, f"{prefix}{key}")
        elif isinstance(node, list):
            # A list's items are checked as its key's values: a list where a mapping belongs is
            # quoted whole by the type error that follows.
            path = prefix.rstrip(".")
            for item in node:
                walk_entry(path.rpartition(".")[2], item, path)

    def walk_entry(key: str, value: Any, path: str) -> None:
        if isinstance(value, (dict, list)):
            walk(value, path + ".")
            return
        if value is None or value == "":
            return
        text = str(value)
        named_secret = redact.is_secret_key(key) and not key.endswith((".provider", ".providers"))
        # ``fs.s3a.secret.key=...`` as one string (a properties line where a mapping belongs).
        pairs = [
            m
            for m in re.finditer(r"([A-Za-z0-9_.\-]+)\s*=\s*([^\s,;]+)", text)
            if redact.is_secret_key(m.group(1))
            and not m.group(1).endswith((".provider", ".providers"))
            and not is_reference(m.group(2))
        ]
        inline = redact.mask_inline(text) != text or bool(pairs)
        if (named_secret and not is_reference(text)) or inline:
            redact.register(text)
            if inline:
                for match in re.finditer(r"=\s*(\S+)", text):
                    redact.register(match.group(1).strip("\"';,"))
                redact.register(*(m.group(2).strip("\"'") for m in pairs))
            problems.append(
                f"{raw.where(path)}: {path}: a secret written into the project file; put it in the "
                f"environment and write ${{NAME}}, or in a file and write @PATH (the file is committed, "
                f"the secret must not be)"
            )

    walk(raw.data, "")
    return problems


def _path(text: str | None, root: Path) -> Path | None:
    if not text:
        return None
    path = Path(text).expanduser()
    return path if path.is_absolute() else root / path


def _location(text: str | None, root: Path) -> str | None:
    """A checkpoint root: a URL as written (s3a://...), a local path made absolute from ``root``."""
    if not text:
        return None
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        return (
            str(root / text[len("file://") :]) if text.startswith("file://") and not text[7:].startswith("/") else text
        )
    return str(_path(text, root))


def _file_reference(value: str, root: Path) -> str:
    """``@relative/path`` made ``@/absolute/path`` from ``root``; any other value as it is."""
    if value.startswith("@") and not value.startswith("@@"):
        return "@" + str(_path(value[1:].strip(), root))
    return value


class ProjectFile:
    """A project file as loaded: its contexts and jobs, every path absolute."""

    def __init__(self, path: Path, section: ProjectSection, raw: RawConfig):
        self.path = path
        self.root = path.parent
        self.raw = raw
        self.current_context: str | None = section.current_context
        self.contexts: dict[str, Context] = {
            name: Context(
                name=name,
                bootstrap_servers=c.bootstrap_servers,
                client_config=_path(c.client_config, self.root),
                spark_master=c.spark_master,
                spark_remote=c.spark_remote,
                checkpoint_root=_location(c.checkpoint_root, self.root),
                storage_config=_path(c.storage_config, self.root),
                storage={k: _file_reference(v, self.root) for k, v in c.storage.items()},
                line=raw.line(f"contexts.{name}"),
            )
            for name, c in section.contexts.items()
        }
        self.jobs: dict[str, Path] = {name: _path(p, self.root) for name, p in section.jobs.items()}


def _line_of(problem: str, source: str) -> int:
    head = problem[len(source) + 1 :].split(":", 1)[0] if problem.startswith(source + ":") else ""
    return int(head) if head.isdigit() else 1 << 30


_TOP_KEYS = ("current-context", "contexts", "jobs")


def _validate(raw: RawConfig) -> ProjectSection:
    """``raw`` as a ProjectSection; ``current-context`` keeps its dash in every message."""
    from statectl.text import did_you_mean

    problems = [
        f"{raw.where(str(k))}: {k}: unknown key"
        f"{did_you_mean(str(k), _TOP_KEYS, ' (known keys: ' + ', '.join(_TOP_KEYS) + ')')}"
        for k in raw.data
        if k not in _TOP_KEYS
    ]
    data = {("current_context" if k == "current-context" else k): v for k, v in raw.data.items() if k in _TOP_KEYS}
    lines = dict(raw.lines)
    if "current-context" in lines:
        lines["current_context"] = lines["current-context"]
    renamed = RawConfig(data, raw.source, lines, raw.duplicates)
    try:
        section = validate_raw(renamed, ProjectSection)
    except ConfigError as exc:
        problems += [p.replace("current_context", "current-context") for p in exc.problems]
    if problems:
        raise ConfigError(sorted(problems, key=lambda p: _line_of(p, raw.source)))
    return section


def load_project_file(path: Path) -> ProjectFile:
    """Read and validate ``path``; a ConfigError lists every problem (file:line: key: what)."""
    raw = read_yaml(path)
    secrets = secret_problems(raw)
    if secrets:
        raise ConfigError(secrets)
    section = _validate(raw)
    problems = []
    if section.current_context is not None and section.current_context not in section.contexts:
        from statectl.text import did_you_mean

        known = ", ".join(sorted(section.contexts)) or "none"
        problems.append(
            f"{raw.where('current-context')}: current-context: names no context of the file "
            f"(contexts: {known}){did_you_mean(section.current_context, section.contexts)}"
        )
    if problems:
        raise ConfigError(problems)
    return ProjectFile(path.resolve(), section, raw)
