"""The set-up script and `jars fetch` talk plainly to a log, and Python versions; what the set-up
installs for the demo (plain), for the tests (--tests) and for the benchmarks (--bench), and when
its stamp makes it install again.

Bad inputs tried: stderr that is a pipe, not a terminal (a CI log); a warm jar cache; an unknown
argument; a stamp from before the extras were recorded; a pyproject.toml newer than the stamp.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_setup_writes_no_ansi_escapes_to_a_pipe():
    """Run after the suite's own set-up, so the venv and the jar cache are warm: quick."""
    done = subprocess.run(["bash", "scripts/setup.sh"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stderr + done.stdout
    assert "[setup] ready:" in done.stderr
    assert "resolving" not in done.stderr


def test_jars_fetch_with_a_warm_cache_resolves_nothing(cli):
    result = cli("jars", "fetch")
    assert result.exit_code == 0, result.stderr
    assert "resolving" not in result.stderr
    assert re.search(r"kafka-broker \S+: \d+ jars in ", result.stdout)


def test_the_python_versions_pyspark_supports_are_accepted():
    """pyproject's requires-python and setup.sh's interpreter check both say 3.10 to 3.13."""
    text = (REPO / "pyproject.toml").read_text()
    assert 'requires-python = ">=3.10,<3.14"' in text
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert "(3, 10) <= sys.version_info[:2] < (3, 14)" in setup


# scripts/setup.sh in a sandbox: a copy of the script in a tree of its own, run with a PATH that holds
# only fakes (apt-get, id, java, mvn, the venv's python and statectl), each writing its arguments to a
# log. No real apt, pip or Spark: each run takes a few milliseconds.

BASH = shutil.which("bash") or "/bin/bash"


def _fake(path: Path, body: str = "") -> None:
    name = path.name
    path.write_text(f'#!{BASH}\necho "{name} $*" >>"$FAKE_LOG"\n{body}\n')
    path.chmod(0o755)


class Sandbox:
    def __init__(self, root: Path, *, java: bool = True, shells: bool = False, chromium: bool = False):
        self.repo = root / "repo"
        self.bin = root / "bin"
        self.log = root / "calls.log"
        (self.repo / "scripts").mkdir(parents=True)
        (self.repo / ".venv" / "bin").mkdir(parents=True)
        self.bin.mkdir()
        # The one absolute path the script checks, pointed into the sandbox.
        script = (REPO / "scripts" / "setup.sh").read_text()
        assert script.count("/usr/bin/chromium") == 1
        self.chromium = root / "chromium"
        (self.repo / "scripts" / "setup.sh").write_text(script.replace("/usr/bin/chromium", str(self.chromium)))
        if chromium:
            _fake(self.chromium)
        for name in ("pyproject.toml", "scripts/constraints.txt"):
            (self.repo / name).write_text((REPO / name).read_text())
            os.utime(self.repo / name, (1_000_000_000, 1_000_000_000))
        _fake(self.repo / ".venv" / "bin" / "python")
        _fake(self.repo / ".venv" / "bin" / "statectl", 'if [[ $1 == --version ]]; then echo "statectl 0.0.0"; fi')
        _fake(self.bin / "apt-get")
        _fake(self.bin / "id", 'echo "${FAKE_UID:-0}"')
        os.symlink(shutil.which("dirname"), self.bin / "dirname")
        for name in (("java", "mvn") if java else ()) + (("zsh", "fish") if shells else ()):
            _fake(self.bin / name)

    def run(self, *args: str, uid: int = 0, **env: str) -> subprocess.CompletedProcess:
        self.log.write_text("")
        environ = {
            "PATH": str(self.bin),
            "FAKE_LOG": str(self.log),
            "FAKE_UID": str(uid),
            "PYTHON": str(self.repo / ".venv" / "bin" / "python"),
            **env,
        }
        return subprocess.run(
            [BASH, "scripts/setup.sh", *args], cwd=self.repo, env=environ, capture_output=True, text=True, timeout=60
        )

    def calls(self, prefix: str) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if line.startswith(prefix)]

    def apt_packages(self) -> list[str]:
        return [pkg for line in self.calls("apt-get install") for pkg in line.split()[2:] if not pkg.startswith("-")]

    def pip_installs(self) -> list[str]:
        return [line.split()[-1] for line in self.calls("python -m pip install -q -c")]

    @property
    def stamp(self) -> str:
        return (self.repo / ".venv" / ".statectl-installed").read_text().strip()


def _ok(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, done.stderr


def test_plain_setup_installs_only_what_the_demo_runs(tmp_path):
    box = Sandbox(tmp_path, java=False)
    _ok(done := box.run())
    assert sorted(box.apt_packages()) == ["maven", "openjdk-17-jre-headless"]
    assert box.pip_installs() == [".[spark]"]
    assert box.stamp == "spark"
    assert box.calls("statectl jars fetch")
    assert not box.calls("statectl jars archive"), "the demo starts Spark once: no class-data archive"
    assert "[setup] ready:" in done.stderr


def test_tests_flag_installs_the_tests_tools(tmp_path):
    box = Sandbox(tmp_path)
    _ok(box.run("--tests"))
    assert sorted(box.apt_packages()) == ["chromium", "fish", "zsh"]
    assert box.pip_installs() == [".[spark,s3,test]"]
    assert box.stamp == "spark,s3,test"
    assert box.calls("statectl jars archive")


def test_tests_flag_asks_apt_only_for_what_is_missing(tmp_path):
    box = Sandbox(tmp_path, shells=True, chromium=True)
    _ok(box.run("--tests"))
    assert not box.calls("apt-get")


def test_tests_flag_without_root_skips_the_tests_packages(tmp_path):
    """Without root the browser and completion tests skip and say why; the set-up goes on."""
    box = Sandbox(tmp_path)
    _ok(box.run("--tests", uid=1000))
    assert not box.calls("apt-get")
    assert box.pip_installs() == [".[spark,s3,test]"]


def test_the_archive_can_be_turned_off(tmp_path):
    box = Sandbox(tmp_path, shells=True, chromium=True)
    _ok(box.run("--tests", STATECTL_JVM_ARCHIVE="off"))
    assert not box.calls("statectl jars archive")


def test_bench_flag_installs_what_the_benchmarks_import(tmp_path):
    """benchmarks/ start moto's S3 server and import the tests' helpers: the test extras, not the browser."""
    box = Sandbox(tmp_path)
    _ok(box.run("--bench"))
    assert box.apt_packages() == ["kcat"]
    assert box.pip_installs() == [".[spark,s3,test]"]
    assert box.calls("statectl jars archive")
    assert box.calls("mvn -q -B -o -f benchmarks/kafka_streams/pom.xml package")


def test_the_stamp_reinstalls_only_when_the_extras_grow(tmp_path):
    box = Sandbox(tmp_path, shells=True, chromium=True)
    _ok(box.run())
    assert box.pip_installs() == [".[spark]"]
    _ok(box.run("--tests"))
    assert box.pip_installs() == [".[spark,s3,test]"], "the demo's set-up had no test extras"
    assert box.stamp == "spark,s3,test"
    _ok(box.run())
    assert box.pip_installs() == [], "the test extras cover the demo's"
    assert box.stamp == "spark,s3,test"
    _ok(box.run("--tests"))
    assert box.pip_installs() == []
    assert not box.calls("python -m pip")


def test_a_changed_pyproject_reinstalls_what_was_installed(tmp_path):
    box = Sandbox(tmp_path, shells=True, chromium=True)
    _ok(box.run("--tests"))
    os.utime(box.repo / "pyproject.toml")  # now: newer than the stamp
    os.utime(box.repo / ".venv" / ".statectl-installed", (1_000_000_001, 1_000_000_001))
    _ok(box.run())
    assert box.pip_installs() == [".[spark,s3,test]"], "the test extras kept up to date, not dropped"
    _ok(box.run())
    assert box.pip_installs() == []


def test_an_empty_stamp_from_before_means_every_extra(tmp_path):
    """The set-up before --tests always installed spark, s3 and test, and left an empty stamp."""
    box = Sandbox(tmp_path, shells=True, chromium=True)
    (box.repo / ".venv" / ".statectl-installed").write_text("")
    _ok(box.run("--tests"))
    assert box.pip_installs() == []
    _ok(box.run())
    assert box.pip_installs() == []


def test_an_unknown_argument_is_refused(tmp_path):
    box = Sandbox(tmp_path)
    done = box.run("--test")
    assert done.returncode == 2
    assert "unknown argument --test" in done.stderr
    assert box.log.read_text() == ""


def test_the_demo_sets_up_plainly_and_the_tests_with_their_tools():
    def setup_lines(path: str) -> list[str]:
        return [
            line.strip()
            for line in (REPO / path).read_text().splitlines()
            if line.strip().startswith("bash scripts/setup.sh")
        ]

    assert setup_lines("scripts/demo.sh") == ["bash scripts/setup.sh"]
    assert setup_lines("scripts/test.sh") == ["bash scripts/setup.sh --tests"]
    # .ci/run sets up once before its two jobs' test.sh: with the same extras, they install nothing together.
    assert setup_lines(".ci/run") == ["bash scripts/setup.sh --tests"]
