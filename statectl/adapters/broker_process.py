"""A local single-node Apache Kafka broker (KRaft, combined broker + controller) on loopback.

The broker runs from the official jars (see :mod:`statectl.adapters.jars`) as a background JVM that
outlives the command that started it. Its data dir holds ``server.properties``, the log dirs,
``broker.log`` and ``broker.json`` (pid and ports), which is how ``status`` and ``down`` find it.

By default its client listener is PLAINTEXT; a secured broker (``secure=True``: SASL_SSL, SCRAM
users, ACLs, see :mod:`statectl.adapters.broker_secure`) is set up once per data dir, and a data
dir keeps the kind it was formatted as.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from statectl.errors import OperationalError, UsageError
from statectl.paths import default_broker_dir
from statectl.adapters import broker_secure
from statectl.adapters.jars import KAFKA_BROKER, ensure_bundle
from statectl.text import wait_until

DEFAULT_PORT = 9092
HOST = "127.0.0.1"


@dataclass
class BrokerStatus:
    running: bool
    data_dir: str
    bootstrap_servers: str | None = None
    pid: int | None = None
    port: int | None = None
    controller_port: int | None = None
    log_file: str | None = None
    kafka_version: str = KAFKA_BROKER.version
    already_running: bool = False
    ready_seconds: float | None = None
    #: a secured broker (SASL_SSL, SCRAM-SHA-512, ACLs): clients need the client config below
    secure: bool = False
    #: client.properties of the user ``statectl`` (secured brokers only)
    client_config: str | None = None
    #: admin.properties of the super user ``admin`` (secured brokers only)
    admin_config: str | None = None
    #: the CA certificate (PEM) clients trust (secured brokers only)
    ca_file: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _state_file(data_dir: Path) -> Path:
    return data_dir / "broker.json"


def _read_state(data_dir: Path) -> dict | None:
    try:
        return json.loads(_state_file(data_dir).read_text())
    except (OSError, ValueError):
        return None


def _pid_is_broker(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"kafka.Kafka" in cmdline


def port_in_use(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.3)
        return s.connect_ex((host, port)) == 0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def broker_status(data_dir: Path) -> BrokerStatus:
    """Whether the broker of ``data_dir`` is running, and where."""
    state = _read_state(data_dir)
    if not state or not _pid_is_broker(int(state.get("pid", -1))):
        return BrokerStatus(running=False, data_dir=str(data_dir), secure=_formatted_secure(data_dir) is True)
    secure = bool(state.get("secure"))
    return BrokerStatus(
        running=True,
        data_dir=str(data_dir),
        bootstrap_servers=f"{HOST}:{state['port']}",
        pid=int(state["pid"]),
        port=int(state["port"]),
        controller_port=int(state["controller_port"]),
        log_file=str(data_dir / "broker.log"),
        secure=secure,
        client_config=state.get("client_config") if secure else None,
        admin_config=state.get("admin_config") if secure else None,
        ca_file=state.get("ca_file") if secure else None,
    )


def _formatted_secure(data_dir: Path) -> bool | None:
    """None when the storage of ``data_dir`` is not formatted; else whether it was formatted for a
    secured broker (its SCRAM users and ACLs live in the metadata: the kind never changes)."""
    if not (data_dir / "logs" / "meta.properties").exists():
        return None
    return broker_secure.is_secure_dir(data_dir)


def _refuse_other_kind(data_dir: Path, secure: bool) -> None:
    formatted = _formatted_secure(data_dir)
    if formatted is None or formatted == secure:
        return
    if secure:
        raise UsageError(
            f"the broker data dir {data_dir} holds a plaintext broker; --secure does not convert it (its users "
            f"and ACLs are set up when the storage is formatted): use another --data-dir for a secured broker, "
            f"or stop the broker and delete {data_dir} first")
    raise UsageError(
        f"the broker data dir {data_dir} holds a secured broker (started with --secure); start it with --secure, "
        f"or use another --data-dir for a plaintext broker (or stop the broker and delete {data_dir} first)")


def running_brokers() -> list[BrokerStatus]:
    """Every broker statectl started that is running, whatever its data dir: found from the
    processes' command lines (``kafka.Kafka <data dir>/server.properties``) and the state files."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"kafka.Kafka" not in args or args.index(b"kafka.Kafka") + 1 >= len(args):
            continue
        data_dir = Path(os.fsdecode(args[args.index(b"kafka.Kafka") + 1])).parent
        state = _read_state(data_dir)
        if state and str(state.get("pid")) == proc.name:
            found.append(broker_status(data_dir))
    return [b for b in found if b.running]


def broker_on_port(port: int) -> BrokerStatus | None:
    """The running statectl broker whose client listener (PLAINTEXT or SASL_SSL) is ``port``, if there is one."""
    return next((b for b in running_brokers() if b.port == port), None)


def _kafka_uuid() -> str:
    # Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, no padding.
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _server_properties(data_dir: Path, port: int, controller_port: int,
                       security: list[str] | None = None) -> str:
    """The broker's config; ``security`` (a secured broker's listener, SASL, TLS and authorizer
    lines) replaces the PLAINTEXT listeners."""
    listeners = security or [
        f"listeners=PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
        f"advertised.listeners=PLAINTEXT://{HOST}:{port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    ]
    return "\n".join(
        [
            "process.roles=broker,controller",
            "node.id=1",
            f"controller.quorum.bootstrap.servers={HOST}:{controller_port}",
            *listeners,
            f"log.dirs={data_dir / 'logs'}",
            "num.partitions=1",
            "offsets.topic.replication.factor=1",
            "offsets.topic.num.partitions=4",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            # Topics are created deliberately (with their configs) by statectl, never by accident.
            "auto.create.topics.enable=false",
            "",
        ]
    )


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if not java:
        raise OperationalError("Java is not installed; the Kafka broker needs Java 17 or newer")
    return java


def _classpath() -> str:
    jars = ensure_bundle(KAFKA_BROKER)
    return os.pathsep.join(str(j) for j in jars)


def _argfile_quote(arg: str) -> str:
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _format_storage(data_dir: Path, java: str, classpath: str, secret_args: list[str] | None = None) -> None:
    props = data_dir / "server.properties"
    args = ["-cp", classpath, "kafka.tools.StorageTool", "format", "--standalone",
            # "=" form: a random id may start with "-", which argparse would take for an option.
            f"--cluster-id={_kafka_uuid()}", "-c", str(props)]
    argfile = data_dir / ".format-args"
    if secret_args:
        # The SCRAM passwords go through a java @argfile (mode 0600, deleted after), so they are
        # never on a command line other processes can read.
        broker_secure.write_private(argfile, "\n".join(_argfile_quote(a) for a in args + secret_args) + "\n")
        command = [java, f"@{argfile}"]
    else:
        command = [java, *args]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    finally:
        argfile.unlink(missing_ok=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise OperationalError(f"formatting the broker storage in {data_dir} failed: {tail[0]}")


def _log_tail(log: Path, lines: int = 5) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    interesting = [ln for ln in text if "ERROR" in ln or "Exception" in ln] or text
    return " | ".join(ln.strip()[:300] for ln in interesting[-lines:])


def broker_up(data_dir: Path, port: int = DEFAULT_PORT, timeout: float = 60.0, secure: bool = False) -> BrokerStatus:
    """Start the broker in the background (formatting storage the first time) and wait until it answers.

    ``secure``: a SASL_SSL listener with SCRAM users ``admin`` and ``statectl``, a throwaway CA,
    an authorizer and the ACLs of ``statectl`` (see :mod:`statectl.adapters.broker_secure`); the
    status names the client configs to connect with. A data dir formatted as the other kind is
    refused (UsageError), never reformatted."""
    data_dir = data_dir.resolve()
    _refuse_other_kind(data_dir, secure)
    current = broker_status(data_dir)
    if current.running:
        current.already_running = True
        return current
    if port_in_use(port):
        owner = broker_on_port(port)
        if owner is not None:
            use = f"-b {owner.bootstrap_servers}" + (f" --client-config {owner.client_config}" if owner.secure else "")
            raise UsageError(
                f"port {port} is in use by statectl's broker of {owner.data_dir} (pid {owner.pid}); "
                f"use it ({use}), stop it (statectl kafka down --port {port}), "
                f"or choose another --port"
            )
        raise UsageError(
            f"port {port} is already in use by another process; "
            f"stop it or choose another port with --port"
        )
    java = _java()
    classpath = _classpath()
    data_dir.mkdir(parents=True, exist_ok=True)
    props = data_dir / "server.properties"
    state = _read_state(data_dir) or {}
    formatted = (data_dir / "logs" / "meta.properties").exists()
    controller_port = int(state.get("controller_port") or 0)
    if not formatted or not controller_port or port_in_use(controller_port):
        if formatted:
            # The controller's address is recorded in the formatted metadata; a new one needs a new format.
            shutil.rmtree(data_dir / "logs", ignore_errors=True)
            formatted = False
        controller_port = free_port()
        while controller_port == port:
            controller_port = free_port()
    bootstrap = f"{HOST}:{port}"
    secure_files = None
    if secure:
        secrets = broker_secure.load_or_create_secrets(data_dir)
        secure_files = broker_secure.ensure_tls(data_dir, secrets, java)
        broker_secure.write_client_configs(data_dir, bootstrap, secrets, secure_files)
        broker_secure.write_private(props, _server_properties(
            data_dir, port, controller_port,
            broker_secure.server_properties(HOST, port, controller_port, secrets, secure_files)))
    else:
        if not formatted:
            broker_secure.forget(data_dir)  # left by a secured start that never got to format
        props.write_text(_server_properties(data_dir, port, controller_port))
    # A fresh format has no ACLs; the state says whether they were made on this storage.
    acls_done = bool(formatted and state.get("acls"))
    if not formatted:
        _format_storage(data_dir, java, classpath, broker_secure.scram_format_args(secrets) if secure else None)

    log_file = data_dir / "broker.log"
    log4j = resources.files("statectl.resources").joinpath("kafka-log4j2.properties")
    with resources.as_file(log4j) as log4j_path, open(log_file, "ab") as log:
        log4j_copy = data_dir / "log4j2.properties"
        shutil.copyfile(log4j_path, log4j_copy)
        started = time.monotonic()
        proc = subprocess.Popen(
            [java, "-Xms256m", "-Xmx1g", "-XX:+UseG1GC", "-Djava.awt.headless=true",
             f"-Dlog4j2.configurationFile={log4j_copy}", f"-Dkafka.logs.dir={data_dir}",
             "-cp", classpath, "kafka.Kafka", str(props)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # survives Ctrl-C in the terminal that started it
            cwd=data_dir,
        )
    new_state = {"pid": proc.pid, "port": port, "controller_port": controller_port, "secure": secure}
    if secure_files is not None:
        new_state.update(client_config=str(secure_files.client_config), admin_config=str(secure_files.admin_config),
                         ca_file=str(secure_files.ca_file), acls=acls_done)
    _state_file(data_dir).write_text(json.dumps(new_state))
    # A secured listener answers only a client that logs in over TLS: the probe is admin.
    target = broker_secure.admin_cluster(bootstrap, secure_files) if secure_files is not None else bootstrap

    def ready() -> bool:
        if proc.poll() is not None:
            raise OperationalError(
                f"the Kafka broker exited during start-up (code {proc.returncode}): "
                f"{_log_tail(log_file)} — full log: {log_file}"
            )
        return port_in_use(port) and _answers(target)

    if wait_until(ready, started + timeout - time.monotonic(), interval=0.2):
        if secure_files is not None and not acls_done:
            try:
                broker_secure.create_statectl_acls(target, max(10.0, started + timeout - time.monotonic()))
            except OperationalError:
                _terminate(proc.pid, 10)
                raise
            new_state["acls"] = True
            _state_file(data_dir).write_text(json.dumps(new_state))
        status = broker_status(data_dir)
        status.ready_seconds = round(time.monotonic() - started, 2)
        return status
    _terminate(proc.pid, 10)
    raise OperationalError(
        f"the Kafka broker did not become ready within {timeout:.0f} s; see {log_file}"
    )


def _answers(target) -> bool:
    from statectl.adapters.kafka import broker_answers

    return broker_answers(target, timeout=2.0)


def _terminate(pid: int, timeout: float) -> bool:
    """SIGTERM, wait, then SIGKILL. Returns True if it exited after SIGTERM."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    def gone() -> bool:
        _reap(pid)
        return not _pid_is_broker(pid)

    if wait_until(gone, timeout, interval=0.1):
        return True
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _reap(pid)
    return False


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def broker_down(data_dir: Path | None, port: int | None = None, timeout: float = 30.0) -> BrokerStatus:
    """Stop the broker of ``data_dir`` (controlled shutdown, then a kill if it hangs).

    With ``port``, the broker listening there, whatever its data dir; with both, the broker of
    ``data_dir``, which must be the one on ``port``. A data dir of None is the default one."""
    if port is not None:
        return _down_on_port(port, data_dir, timeout)
    data_dir = (data_dir or default_broker_dir()).resolve()
    status = broker_status(data_dir)
    if status.running and status.pid:
        _terminate(status.pid, timeout)
    state = _read_state(data_dir)
    if state is not None:
        state.pop("pid", None)
        _state_file(data_dir).write_text(json.dumps(state))
    return status


def _down_on_port(port: int, data_dir: Path | None, timeout: float) -> BrokerStatus:
    owner = broker_on_port(port)
    if owner is None:
        if port_in_use(port):
            raise UsageError(f"port {port} is in use by a process that is not a broker statectl started; "
                             "nothing was stopped")
        return BrokerStatus(running=False, data_dir=str(data_dir.resolve()) if data_dir else "", port=port)
    if data_dir is not None and Path(owner.data_dir) != data_dir.resolve():
        raise UsageError(f"port {port} is served by the broker of {owner.data_dir}, not of {data_dir.resolve()}; "
                         "nothing was stopped (drop --data-dir to stop it)")
    return broker_down(Path(owner.data_dir), timeout=timeout)
