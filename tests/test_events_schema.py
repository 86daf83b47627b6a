"""The event models are the one definition of the run events: the shipped JSON Schema and the
reference in docs/events.md are generated from them and must not drift; the run path stays
free of pydantic."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import typing

import pytest
from pydantic import BaseModel

from statectl.formats.events import EVENT_TYPES
from statectl.run import event_models, lifecycle
from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("gen_events_doc", REPO / "scripts" / "gen_events_doc.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

STALE = "{name} is out of date with statectl/run/event_models.py: run `{command}` and commit the result"


def test_the_committed_schema_is_generated_from_the_models():
    committed = gen.SCHEMA_FILE.read_text(encoding="utf-8")
    assert committed == gen.schema_text(), STALE.format(
        name="statectl/resources/events.schema.json", command=gen.COMMAND
    )


def test_the_event_reference_in_the_docs_is_generated_from_the_models():
    doc = gen.DOC_FILE.read_text(encoding="utf-8")
    assert doc.count(gen.BEGIN) == 1 and doc.count(gen.END) == 1, "docs/events.md lost its markers"
    assert doc == gen.doc_text(doc), STALE.format(name="the event reference in docs/events.md", command=gen.COMMAND)


def test_the_check_mode_finds_a_stale_file(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "events.schema.json"
    stale.write_text("{}\n")
    doc = tmp_path / "events.md"
    doc.write_text(f"prose before\n\n{gen.BEGIN}\nold tables\n{gen.END}\n\nprose after\n")
    monkeypatch.setattr(gen, "SCHEMA_FILE", stale)
    monkeypatch.setattr(gen, "DOC_FILE", doc)
    monkeypatch.setattr(gen, "REPO", tmp_path)
    assert gen.main(["--check"]) == 1
    assert stale.read_text() == "{}\n"
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    text = doc.read_text()
    assert text.startswith("prose before\n\n") and text.endswith(f"{gen.END}\n\nprose after\n")
    assert "old tables" not in text and "## `restore_finished`" in text
    assert json.loads(stale.read_text())["$id"] == event_models.SCHEMA_ID


def test_the_schema_names_itself_and_every_event_type():
    schema = json.loads(gen.SCHEMA_FILE.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == event_models.SCHEMA_ID and schema["title"] == event_models.SCHEMA_TITLE
    mapping = schema["discriminator"]["mapping"]
    assert schema["discriminator"]["propertyName"] == "type" and set(mapping) == set(EVENT_TYPES)
    assert [alt["$ref"] for alt in schema["oneOf"]] == [mapping[kind] for kind in EVENT_TYPES]


def test_the_models_agree_with_the_lifecycle():
    # One list of event types (statectl.formats.events), read by the run, the events file's
    # checks and the dashboard; the models, one each, in the same order.
    assert tuple(event_models.event_type(m) for m in event_models.EVENT_MODELS) == EVENT_TYPES
    assert typing.get_args(event_models.StateName) == tuple(s.value for s in lifecycle.State)


def test_the_stopping_event_and_state_are_in_the_schema():
    """The `stopping` event, its reasons and the STOPPING state are part of the published schema."""
    assert typing.get_args(event_models.Stopping.model_fields["reason"].annotation) == lifecycle.STOP_REASONS
    schema = json.loads(gen.SCHEMA_FILE.read_text(encoding="utf-8"))
    assert "stopping" in schema["discriminator"]["mapping"]
    assert "STOPPING" in json.dumps(schema["$defs"]["Stopping"]["properties"]["state"])


def _models() -> list[type[BaseModel]]:
    return [
        m
        for m in vars(event_models).values()
        if isinstance(m, type) and issubclass(m, BaseModel) and m.__module__ == event_models.__name__
    ]


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.__name__)
def test_every_model_is_strict_and_closed(model):
    assert model.model_config.get("extra") == "forbid"
    assert model.model_config.get("strict") is True
    assert all(field.description for field in model.model_fields.values()), "a field without a description"


def test_every_object_in_the_schema_is_closed():
    schema = json.loads(gen.SCHEMA_FILE.read_text(encoding="utf-8"))
    assert {name: d.get("additionalProperties") for name, d in schema["$defs"].items()} == {
        name: False for name in schema["$defs"]
    }


@pytest.mark.parametrize(
    "code, module",
    [
        ("from statectl.cli.main import app", "pydantic"),
        # A run validates its config (pydantic), but emitting events builds plain dicts: the event
        # models load only when something validates an event.
        (
            "import statectl.run.runner, statectl.run.monitor, statectl.run.lifecycle, statectl.run.restore_tracking",
            "statectl.run.event_models",
        ),
        ("import statectl.run.events_file", "pydantic"),
    ],
    ids=["cli", "run-path", "events-file"],
)
def test_the_models_stay_off_the_light_paths(code, module):
    probe = f"import sys; {code}; sys.exit(1 if {module!r} in sys.modules else 0)"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, f"{module} was imported: {done.stderr[-500:]}"
