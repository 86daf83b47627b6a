"""Keeping the CLI's start-up cheap: every command pays it, `--help`, a completion and a `status`
probe from cron included.

`--help` pays for nothing it does not show. typer's help renderer (typer.rich_utils) imports
rich.markdown (markdown-it) and rich.traceback (pygments) when it is imported, for markdown help
(rich_markup_mode="markdown"; statectl's help is rich markup, typer's default) and for pretty
tracebacks (off here: pretty_exceptions_enable=False). typer builds the type coercion of a
parameter (a pydantic TypeAdapter, importing pydantic the first time) for each parameter a group
processes, given or not: `statectl run --help` built three for the root's --help,
--install-completion and --show-completion, all None. tests/test_cli_startup.py checks both.
And typer reads each command's signature twice to build the command tree, on every run; with
`from __future__ import annotations` each read compiles every annotation string anew
(resolve_annotations).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types

import typer
from typer.core import TyperGroup

from statectl.cli.common import StatectlGroup


class _Deferred(type):
    """A stand-in for a class of a module not imported yet: the module is imported when the class
    is called, an attribute of it read or an isinstance check made."""

    def _real(cls):
        real = getattr(importlib.import_module(cls.__module__), cls.__qualname__)
        if real is cls:
            raise ImportError(f"{cls.__module__} is still a stand-in")
        return real

    def __call__(cls, *args, **kwargs):
        return cls._real()(*args, **kwargs)

    def __getattr__(cls, name):
        return getattr(cls._real(), name)

    def __instancecheck__(cls, obj):
        return isinstance(obj, cls._real())


_NOT_FOR_HELP = {"rich.markdown": ("Markdown",), "rich.traceback": ("Traceback",)}


def _import_help_renderer() -> None:
    """Import typer.rich_utils with stand-ins for the modules of _NOT_FOR_HELP. They are in
    sys.modules only during that import, so every other import gets the real modules; a
    typer.rich_utils that wants more of them than the stand-ins have is imported as it is."""
    if "typer.rich_utils" in sys.modules:
        return
    stand_ins = {}
    for name, classes in _NOT_FOR_HELP.items():
        if name not in sys.modules:
            stand_ins[name] = module = types.ModuleType(name)
            for cls in classes:
                setattr(module, cls, _Deferred(cls, (), {"__module__": name, "__qualname__": cls}))
    sys.modules.update(stand_ins)
    try:
        importlib.import_module("typer.rich_utils")
    except ImportError:
        pass
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
    importlib.import_module("typer.rich_utils")


try:
    from typer._coercion import RuntimeParam, build_runtime_param
except ImportError:  # a typer without per-parameter coercion objects: nothing to defer
    RuntimeParam = None

if RuntimeParam is not None:

    class _CoerceOnDemand(RuntimeParam):
        """A parameter's coercion until a value needs one: typer's own RuntimeParam.coerce
        answers a missing value; any other value builds the real coercion, which the parameter
        then keeps."""

        def _coerce_value(self, value, param, ctx):
            param._runtime_param = built = build_runtime_param(param.type_descriptor)
            return built._coerce_value(value, param=param, ctx=ctx)


def _coerce_on_demand(params: list) -> list:
    """Give each typer parameter of `params` whose coercion is not built yet a _CoerceOnDemand."""
    if RuntimeParam is None:
        return params
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", False) is not None:
            continue
        try:
            param._runtime_param = _CoerceOnDemand(
                parameter_info=descriptor.parameter_info, annotation=descriptor.annotation
            )
        except TypeError:  # a RuntimeParam with other fields or abstract methods: leave it to typer
            break
    return params


class LightGroup(TyperGroup):
    """A command group (kafka, jars, ...) whose parameters build their coercion on demand."""

    def get_params(self, ctx):
        return _coerce_on_demand(super().get_params(ctx))


class LightRoot(StatectlGroup):
    """The root group: StatectlGroup, with parameters that build their coercion on demand and
    typer's help renderer imported without markdown and tracebacks."""

    def main(self, *args, **kwargs):
        _import_help_renderer()
        return super().main(*args, **kwargs)

    def get_params(self, ctx):
        return _coerce_on_demand(super().get_params(ctx))


def resolve_annotations(typer_app: typer.Typer) -> None:
    """Evaluate the annotations of the command functions once, as Python does without `from
    __future__ import annotations`; one that does not evaluate is left for typer to report."""
    for info in [*typer_app.registered_commands, typer_app.registered_callback]:
        function = getattr(info, "callback", None)
        if not any(isinstance(a, str) for a in getattr(function, "__annotations__", {}).values()):
            continue
        try:
            function.__annotations__ = inspect.get_annotations(function, eval_str=True)
        except Exception:
            pass
    for group in typer_app.registered_groups:
        resolve_annotations(group.typer_instance)
