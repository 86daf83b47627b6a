"""The benchmark harness's command lines: what benchmarks/peer.py runs must be what the twin and
statectl parse. The twin's flags are read from its Java source, so a flag renamed there fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks import peer

TWIN_CONFIG = (
    Path(__file__).resolve().parents[1] / "benchmarks/kafka_streams/src/main/java/dev/statectl/twin/TwinConfig.java"
)


def twin_flags() -> dict[str, bool]:
    """The twin's flags, each with whether it takes a value (its case calls value(arg, rest))."""
    flags = {}
    for line in TWIN_CONFIG.read_text().splitlines():
        match = re.match(r'\s*case ("--[\w-]+"(?:, "-+\w+")*) -> (.*)', line)
        if match:
            for flag in re.findall(r'"(-+[\w-]+)"', match.group(1)):
                flags[flag] = "value(arg, rest)" in match.group(2) or match.group(2).strip() == "{"
    return flags


def parse_like_the_twin(cmd: list[str]) -> dict[str, list[str]]:
    """The twin's arguments (after ``-jar JAR``) parsed as TwinConfig.parse does."""
    flags = twin_flags()
    rest = cmd[cmd.index("-jar") + 2 :]
    seen: dict[str, list[str]] = {}
    while rest:
        arg = rest.pop(0)
        assert arg in flags, f"the twin does not know {arg!r}"
        value = rest.pop(0) if flags[arg] else ""
        assert not value.startswith("--"), f"{arg} took the flag {value!r} as its value"
        seen.setdefault(arg, []).append(value)
    return seen


def test_twin_flags_are_read_from_its_source():
    flags = twin_flags()
    assert flags["--set"] and flags["--properties"] and not flags["--exit-when-done"]


def test_twin_set_is_passed_as_flag_and_value():
    cmd = peer.twin_command(
        Path("twin.jar"),
        ["-Xmx1g"],
        Path("t.properties"),
        "book",
        "app",
        Path("state"),
        ["num.stream.threads=2", "commit.interval.ms=100"],
    )
    parsed = parse_like_the_twin(cmd)
    assert parsed["--set"] == ["num.stream.threads=2", "commit.interval.ms=100"]
    assert parsed["--settings"] == ["book"]
    assert cmd[:3] == ["java", "-Xmx1g", "-jar"]


@pytest.mark.parametrize(
    "system, settings, threads",
    [
        ("twin-book", "book", None),
        ("twin-defaults", "defaults", None),
        ("twin-book-2t", "book", "num.stream.threads=2"),
        ("twin-defaults-2t", "defaults", "num.stream.threads=2"),
    ],
)
def test_twin_variants(system, settings, threads):
    base, extra = peer.TWIN_VARIANTS[system]
    cmd = peer.twin_command(Path("j"), [], Path("p"), base, "a", Path("s"), extra)
    parsed = parse_like_the_twin(cmd)
    assert parsed["--settings"] == [settings]
    assert parsed.get("--set", []) == ([threads] if threads else [])
    assert system in peer.SYSTEMS and not peer.is_statectl(system)


@pytest.mark.parametrize("bad", ["num.stream.threads", "=2", ""])
def test_twin_set_without_key_value_is_refused(bad):
    """Bad input tried: no '=', no key, empty."""
    with pytest.raises(SystemExit, match="expected KEY=VALUE"):
        peer.twin_command(Path("j"), [], Path("p"), "book", "a", Path("s"), [bad])


def test_statectl_command_parses_with_statectl_cli():
    """statectl's own parser takes what the harness builds: --set as flag and value, --remote."""
    from typer.main import get_command

    from statectl.cli.main import app

    cmd = peer.statectl_command(
        Path("l.yaml"), Path("cp"), "localhost:1", ["trigger.processing_time=1 second"], "sc://localhost:15002"
    )
    assert cmd[cmd.index("--set") + 1] == "trigger.processing_time=1 second"
    assert cmd[cmd.index("--remote") + 1] == "sc://localhost:15002"
    run = get_command(app).commands["run"]
    ctx = run.make_context("run", cmd[2:])
    assert ctx.params["remote"] == "sc://localhost:15002"
    assert peer.is_statectl("statectl-engine")


def test_latency_window_is_closed_until_the_system_writes():
    """The latency benchmark records no event before its window opens (the warm-up counts from the
    system's first output), then exactly the window's."""
    from benchmarks.latency import Window

    window = Window()
    assert not (window.start <= 1_000 < window.end)
    window.open(100.0, 60.0)
    assert (window.start, window.end) == (100.0, 160.0)
    assert window.start <= 100.0 < window.end
    assert not (window.start <= 160.0 < window.end)


def test_latency_medians_take_each_runs_p99(capsys):
    """Repeated runs give the median of their p99s (nearest rank, as statectl's batch times) and
    the range, per system and rate; a system's runs are never mixed with another's."""
    from benchmarks.latency import Result, medians, pct

    def run(system: str, worst: float) -> Result:
        # 99 records of 10 ms and one of `worst`: the nearest-rank p99 is 10, the max `worst`;
        # 98 of 10 and two of `worst` make the p99 `worst`.
        output = [10.0] * 98 + [worst, worst]
        return Result(system, 1000, 0, 1000.0, output, output, 0, 100, (3.0, 3.0, 3.0))

    assert pct([10.0] * 99 + [500.0], 0.99) == 10.0
    results = [run("a", 100.0), run("a", 300.0), run("a", 200.0), run("b", 700.0)]
    medians(results)
    lines = {line.split()[1]: line for line in capsys.readouterr().out.splitlines() if line.strip()[:1].isdigit()}
    assert "200 (100-300)" in lines["a"], lines["a"]
    assert "700 (700-700)" in lines["b"], lines["b"]
    assert lines["a"].split()[2] == "3"


@pytest.mark.parametrize(
    "specs, systems, error",
    [
        (["p1:spark.conf.spark.sql.shuffle.partitions=1"], ["statectl", "statectl+p1"], None),
        (["p1:a=1", "p1:b=2"], ["statectl-engine+p1"], None),
        (["p1"], ["statectl"], "expected NAME:KEY=VALUE"),
        (["p1:novalue"], ["statectl"], "expected NAME:KEY=VALUE"),
        ([":a=1"], ["statectl"], "expected NAME:KEY=VALUE"),
        (["p1:a=1"], ["statectl+p2"], "a variant is a statectl system with a --variant p2:KEY=VALUE"),
        (["p1:a=1"], ["twin-book+p1"], "a variant is a statectl system"),
        (["p1:a=1"], ["nosuch+p1"], "unknown system"),
    ],
)
def test_benchmark_variants_name_a_statectl_setting(specs, systems, error, capsys):
    """--variant NAME:KEY=VALUE runs SYSTEM+NAME with the setting beside SYSTEM without it (peer.py and
    latency.py); a malformed one, or a variant of a system that is not statectl's, is a usage error."""
    import argparse

    ap = argparse.ArgumentParser(prog="bench")
    if error is None:
        got = peer.variants(ap, specs, systems, peer.SYSTEMS)
        assert got == {"p1": [spec.partition(":")[2] for spec in specs]}
        return
    with pytest.raises(SystemExit) as exited:
        peer.variants(ap, specs, systems, peer.SYSTEMS)
    assert exited.value.code == 2 and error in capsys.readouterr().err


def test_peer_report_shows_a_variant_beside_its_system(capsys):
    """A SYSTEM+NAME run gets its own row, its rounds, and its wall time against SYSTEM's."""

    def run(system: str, rnd: int, wall: float) -> peer.Result:
        return peer.Result(system, rnd, wall, wall - 0.5, 20.0, 2.0, 2**30, 100, True)

    results = [run("statectl-engine", 0, 20.0), run("statectl-engine+p1", 0, 15.0)]
    results += [run("statectl-engine", 1, 22.0), run("statectl-engine+p1", 1, 16.0)]
    by_system: dict[str, list] = {}
    for r in results:
        by_system.setdefault(r.system, []).append(r)
    rows = {s: sorted(rs, key=lambda r: r.wall)[len(rs) // 2] for s, rs in by_system.items()}
    peer._print_speed(rows, by_system, 1_000_000, (1.0, 1.0, 1.0), (1.0, 1.0, 1.0))
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines() if line.startswith("statectl")] == [
        "statectl-engine",
        "statectl-engine+p1",
        "statectl-engine+p1",
    ]
    assert "statectl-engine 20.0, 22.0; statectl-engine+p1 15.0, 16.0" in out
    assert "statectl-engine+p1 / statectl-engine: wall 0.73 (median runs)" in out
