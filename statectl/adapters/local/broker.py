"""A local Apache Kafka broker (KRaft, combined broker + controller) on loopback, or a cluster of three.

The broker runs from the official jars (see :mod:`statectl.adapters.local.jars`) as a background JVM that
outlives the command that started it. Its data dir holds ``server.properties``, the log dirs,
``broker.log`` and ``broker.json`` (pid and ports), which is how ``status`` and ``down`` find it.

By default its client listener is PLAINTEXT; a secured broker (``secure=True``: SASL_SSL, SCRAM
users, ACLs, see :mod:`statectl.adapters.local.broker_secure`) is set up once per data dir, and a data
dir keeps the kind it was formatted as.

A cluster (``brokers=3``) is three such processes, nodes 1 to 3, each a broker and a voter of one
controller quorum, with client ports PORT, PORT+1 and PORT+2. Each node has its own directory
``node-N`` under the data dir (its ``server.properties``, log dirs and ``broker.log``); the data
dir's ``broker.json`` records the three (pids and ports). One node can be stopped and started
again on its own (``node=N``), which is what fault tests need.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

from statectl.adapters.local import broker_secure
from statectl.adapters.local.jars import KAFKA_BROKER, cached_jars, ensure_bundle
from statectl.adapters.local.processes import command_lines, read_state, runs, terminate
from statectl.errors import OperationalError, UsageError
from statectl.paths import ONE_SHOT_JVM_OPTIONS, default_broker_dir, display_path, jdk_tool
from statectl.text import wait_until

#: Told what ``broker_up`` is doing now, in a few words ("formatting the KRaft storage"); the
#: caller shows it (this module never prints).
Step = Callable[[str], None]


def _no_step(text: str) -> None:
    pass


DEFAULT_PORT = 9092
HOST = "127.0.0.1"
#: The nodes of a cluster (``kafka up --brokers 3``): a controller quorum of three voters.
CLUSTER_SIZE = 3
#: What ``kafka up --brokers`` starts: a single broker, or a cluster.
BROKER_COUNTS = (1, CLUSTER_SIZE)


@dataclass
class NodeStatus:
    """One node of a cluster: a broker + controller process of its own."""

    node_id: int
    running: bool
    port: int
    controller_port: int
    pid: int | None = None
    data_dir: str = ""
    log_file: str = ""

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"


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
    #: 1: a single broker; 3: a cluster, whose nodes are in ``nodes``
    brokers: int = 1
    #: a cluster's nodes, by node id (empty for a single broker)
    nodes: list[NodeStatus] = field(default_factory=list)
    #: the nodes of a cluster this call started (up) or stopped (down)
    changed_nodes: list[int] = field(default_factory=list)

    @property
    def is_cluster(self) -> bool:
        return self.brokers > 1

    def node(self, node_id: int) -> NodeStatus | None:
        return next((n for n in self.nodes if n.node_id == node_id), None)

    def to_dict(self) -> dict:
        return asdict(self)


def _state_file(data_dir: Path) -> Path:
    return data_dir / "broker.json"


def _read_state(data_dir: Path) -> dict | None:
    return read_state(_state_file(data_dir))


def _pid_is_broker(pid: int, props: Path | None = None) -> bool:
    """Whether ``pid`` is a Kafka broker (with ``props``: the one started with that config file)."""
    return runs(pid, b"kafka.Kafka", props)


def port_in_use(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.3)
        return s.connect_ex((host, port)) == 0


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A free loopback port below the kernel's ephemeral range: every outgoing connection (and every
    bind to port 0) takes its port from that range, so a broker stopped and started again on its
    port (a node of a cluster coming back) found it taken by some client's connection."""
    import random

    top = _ephemeral_start()
    for _ in range(200):
        port = random.randrange(max(1024, top - 12000), top)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((HOST, port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def free_ports(count: int, attempts: int = 100) -> int:
    """The first of ``count`` consecutive ports that are free on loopback (a cluster's client ports)."""
    for _ in range(attempts):
        first = free_port()
        if first + count - 1 > 65535:
            continue
        with contextlib.ExitStack() as held:
            try:
                for port in range(first, first + count):
                    s = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                    s.bind((HOST, port))
            except OSError:
                continue
            return first
    raise OperationalError(f"found no {count} consecutive free ports on {HOST} in {attempts} attempts")


def broker_status(data_dir: Path) -> BrokerStatus:
    """Whether the broker (or cluster) of ``data_dir`` is running, and where."""
    state = _read_state(data_dir)
    if _formatted_brokers(data_dir, state) == CLUSTER_SIZE:
        return _cluster_status(data_dir, state)
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


def _formatted_brokers(data_dir: Path, state: dict | None = None) -> int | None:
    """What ``data_dir`` holds: 1 (a single broker's storage), CLUSTER_SIZE (a cluster's), or None
    (nothing formatted yet)."""
    if (data_dir / "logs" / "meta.properties").exists():
        return 1
    if (state or {}).get("nodes") or any(data_dir.glob("node-*/logs/meta.properties")):
        return CLUSTER_SIZE
    return None


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
            f"or stop the broker and delete {data_dir} first"
        )
    raise UsageError(
        f"the broker data dir {data_dir} holds a secured broker (started with --secure); start it with --secure, "
        f"or use another --data-dir for a plaintext broker (or stop the broker and delete {data_dir} first)"
    )


def running_brokers() -> list[BrokerStatus]:
    """Every broker (or cluster) statectl started that is running, whatever its data dir: found from
    the processes' command lines (``kafka.Kafka <data dir>[/node-N]/server.properties``) and the
    state files."""
    found: dict[Path, BrokerStatus] = {}
    for pid, args in command_lines(b"kafka.Kafka"):
        if args.index(b"kafka.Kafka") + 1 >= len(args):
            continue
        config_dir = Path(os.fsdecode(args[args.index(b"kafka.Kafka") + 1])).parent
        for data_dir in (config_dir, config_dir.parent):
            state = _read_state(data_dir)
            pids = [str(n.get("pid")) for n in state.get("nodes", [])] if state else []
            if state and (str(state.get("pid")) == str(pid) or str(pid) in pids) and data_dir not in found:
                found[data_dir] = broker_status(data_dir)
    return [b for b in found.values() if b.running]


def broker_on_port(port: int) -> BrokerStatus | None:
    """The running statectl broker whose client listener (PLAINTEXT or SASL_SSL) is ``port``, or
    the cluster one of whose running nodes listens there, if there is one."""
    return next(
        (b for b in running_brokers() if b.port == port or any(n.port == port and n.running for n in b.nodes)), None
    )


def _owner_text(owner: BrokerStatus, port: int) -> str:
    if not owner.is_cluster:
        return f"statectl's broker of {owner.data_dir} (pid {owner.pid})"
    node = next(n for n in owner.nodes if n.port == port)
    return f"node {node.node_id} of statectl's {owner.brokers}-broker cluster of {owner.data_dir} (pid {node.pid})"


def _port_taken(port: int, detail: str = "") -> UsageError:
    """The refusal for a client port that is in use, naming statectl's broker there if it is one."""
    owner = broker_on_port(port)
    if owner is not None:
        use = f"-b {owner.bootstrap_servers}" + (f" --client-config {owner.client_config}" if owner.secure else "")
        return UsageError(
            f"port {port}{detail} is in use by {_owner_text(owner, port)}; "
            f"use it ({use}), stop it (statectl kafka down --port {port}), "
            f"or choose another --port"
        )
    return UsageError(
        f"port {port}{detail} is already in use by another process; stop it or choose another port with --port"
    )


def _kafka_uuid() -> str:
    # Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, no padding.
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _server_properties(
    data_dir: Path,
    port: int,
    controller_port: int,
    security: list[str] | None = None,
    node_id: int = 1,
    voters: dict[int, int] | None = None,
) -> str:
    """The broker's config; ``security`` (a secured broker's listener, SASL, TLS and authorizer
    lines) replaces the PLAINTEXT listeners. ``voters`` (node id -> controller port): the static
    controller quorum of a cluster, whose internal topics are then replicated to three nodes."""
    listeners = security or [
        f"listeners=PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
        f"advertised.listeners=PLAINTEXT://{HOST}:{port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    ]
    if voters:
        # Static voters (not a dynamic quorum formatted with its controllers' addresses): the
        # controller ports live in the config only, so a restart may move them to free ones.
        quorum = "controller.quorum.voters=" + ",".join(f"{i}@{HOST}:{p}" for i, p in sorted(voters.items()))
        rf, min_isr = CLUSTER_SIZE, CLUSTER_SIZE - 1
    else:
        quorum = f"controller.quorum.bootstrap.servers={HOST}:{controller_port}"
        rf, min_isr = 1, 1
    return "\n".join(
        [
            "process.roles=broker,controller",
            f"node.id={node_id}",
            quorum,
            *listeners,
            f"log.dirs={data_dir / 'logs'}",
            "num.partitions=1",
            f"default.replication.factor={rf}",
            f"offsets.topic.replication.factor={rf}",
            "offsets.topic.num.partitions=4",
            f"transaction.state.log.replication.factor={rf}",
            f"transaction.state.log.min.isr={min_isr}",
            f"share.coordinator.state.topic.replication.factor={rf}",
            f"share.coordinator.state.topic.min.isr={min_isr}",
            "group.initial.rebalance.delay.ms=0",
            # Topics are created deliberately (with their configs) by statectl, never by accident.
            "auto.create.topics.enable=false",
            "",
        ]
    )


def _java() -> str:
    java = jdk_tool("java")
    if java is None:
        raise OperationalError(
            "no java found ($JAVA_HOME/bin/java, or on PATH without JAVA_HOME); the Kafka broker needs Java 17 or newer"
        )
    return str(java)


def _classpath(step: Step = _no_step) -> str:
    if cached_jars(KAFKA_BROKER) is None:
        step(
            f"fetching the Kafka {KAFKA_BROKER.version} broker jars from Maven Central into "
            f"{display_path(KAFKA_BROKER.directory.parent)} (first use only)"
        )
    jars = ensure_bundle(KAFKA_BROKER)
    return os.pathsep.join(str(j) for j in jars)


def _argfile_quote(arg: str) -> str:
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _format_command(
    data_dir: Path,
    java: str,
    classpath: str,
    secret_args: list[str] | None = None,
    cluster_id: str | None = None,
    standalone: bool = True,
) -> list[str]:
    """The StorageTool command that formats ``data_dir/server.properties``'s log dirs. A single
    broker is a standalone (dynamic) quorum; a cluster's nodes share ``cluster_id`` and take their
    static voters from the config."""
    props = data_dir / "server.properties"
    args = [
        "-cp",
        classpath,
        "kafka.tools.StorageTool",
        "format",
        *(["--standalone"] if standalone else []),
        # "=" form: a random id may start with "-", which argparse would take for an option.
        f"--cluster-id={cluster_id or _kafka_uuid()}",
        "-c",
        str(props),
    ]
    argfile = data_dir / ".format-args"
    if secret_args:
        # The SCRAM passwords go through a java @argfile (mode 0600, deleted after), so they are
        # never on a command line other processes can read.
        broker_secure.write_private(argfile, "\n".join(_argfile_quote(a) for a in args + secret_args) + "\n")
        return [java, *ONE_SHOT_JVM_OPTIONS, f"@{argfile}"]
    return [java, *ONE_SHOT_JVM_OPTIONS, *args]


def _format_failed(data_dir: Path, stdout: str, stderr: str) -> OperationalError:
    tail = (stderr or stdout).strip().splitlines()[-1:] or ["no output"]
    return OperationalError(f"formatting the broker storage in {data_dir} failed: {tail[0]}")


def _format_storage(data_dir: Path, java: str, classpath: str, secret_args: list[str] | None = None) -> None:
    command = _format_command(data_dir, java, classpath, secret_args)
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    finally:
        (data_dir / ".format-args").unlink(missing_ok=True)
    if proc.returncode != 0:
        raise _format_failed(data_dir, proc.stdout, proc.stderr)


def _format_nodes(node_dirs: list[Path], java: str, classpath: str, cluster_id: str) -> None:
    """Format the storage of a cluster's nodes, all at once (each is a JVM start of its own)."""
    procs = [
        (
            d,
            subprocess.Popen(
                _format_command(d, java, classpath, cluster_id=cluster_id, standalone=False),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
        for d in node_dirs
    ]
    failed = None
    for node_dir, proc in procs:
        try:
            stdout, stderr = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        if proc.returncode != 0 and failed is None:
            failed = _format_failed(node_dir, stdout, stderr)
    if failed is not None:
        raise failed


def _spawn(java: str, classpath: str, home: Path, heap: tuple[str, str] = ("256m", "1g")) -> subprocess.Popen:
    """Start the broker of ``home/server.properties`` in the background, its log in ``home/broker.log``."""
    log_file = home / "broker.log"
    log4j = resources.files("statectl.resources").joinpath("kafka-log4j2.properties")
    with resources.as_file(log4j) as log4j_path, open(log_file, "ab") as log:
        log4j_copy = home / "log4j2.properties"
        shutil.copyfile(log4j_path, log4j_copy)
        return subprocess.Popen(
            [
                java,
                f"-Xms{heap[0]}",
                f"-Xmx{heap[1]}",
                "-XX:+UseG1GC",
                "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={log4j_copy}",
                f"-Dkafka.logs.dir={home}",
                "-cp",
                classpath,
                "kafka.Kafka",
                str(home / "server.properties"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # survives Ctrl-C in the terminal that started it
            cwd=home,
        )


def _log_tail(log: Path, lines: int = 5) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    interesting = [ln for ln in text if "ERROR" in ln or "Exception" in ln] or text
    return " | ".join(ln.strip()[:300] for ln in interesting[-lines:])


def broker_up(
    data_dir: Path,
    port: int | None = DEFAULT_PORT,
    timeout: float = 60.0,
    secure: bool = False,
    brokers: int | None = None,
    node: int | None = None,
    on_step: Step | None = None,
) -> BrokerStatus:
    """Start the broker in the background (formatting storage the first time) and wait until it answers.

    ``secure``: a SASL_SSL listener with SCRAM users ``admin`` and ``statectl``, a throwaway CA,
    an authorizer and the ACLs of ``statectl`` (see :mod:`statectl.adapters.local.broker_secure`); the
    status names the client configs to connect with. A data dir formatted as the other kind is
    refused (UsageError), never reformatted.

    ``brokers``: 1 for a single broker, 3 for a cluster (client ports ``port`` to ``port + 2``);
    None: what the data dir holds, else 1. ``node``: start only that node of the data dir's
    cluster (on its recorded ports), while at least one other node runs. A port of None is the
    default one (9092). ``on_step`` is told each step while it works and waits (the jars, the
    format, the start, the wait for the broker to answer)."""
    data_dir = data_dir.resolve()
    step = on_step or _no_step
    count = _check_up(data_dir, port, secure, brokers, node)
    if count == CLUSTER_SIZE:
        return _cluster_up(data_dir, port, timeout, node, step)
    return _single_up(data_dir, port or DEFAULT_PORT, timeout, secure, step)


def _check_up(data_dir: Path, port: int | None, secure: bool, brokers: int | None, node: int | None) -> int:
    """How many brokers ``up`` is about: refuses combinations that mean nothing, and a data dir
    formatted for another kind of broker (nothing is ever reformatted)."""
    if brokers is not None and brokers not in BROKER_COUNTS:
        raise UsageError(
            f"--brokers takes 1 (a single broker) or {CLUSTER_SIZE} (a cluster of {CLUSTER_SIZE}); got {brokers}"
        )
    formatted = _formatted_brokers(data_dir, _read_state(data_dir))
    count = brokers or formatted or 1
    if node is not None:
        if formatted != CLUSTER_SIZE or count != CLUSTER_SIZE:
            raise UsageError(
                f"--node starts one node of a {CLUSTER_SIZE}-broker cluster, and {data_dir} holds "
                f"{'a single broker' if formatted == 1 else 'no cluster'}; start a cluster with "
                f"statectl kafka up --brokers {CLUSTER_SIZE}"
            )
        _check_node(node)
        if port is not None:
            raise UsageError("--node starts a node on the ports the cluster recorded for it; drop --port")
    if formatted is not None and count != formatted:
        held = "a single broker" if formatted == 1 else f"a {formatted}-broker cluster"
        raise UsageError(
            f"the broker data dir {data_dir} holds {held}; --brokers {count} does not convert it: use another "
            f"--data-dir, or stop it and delete {data_dir} first"
        )
    if secure and count == CLUSTER_SIZE:
        raise UsageError(
            f"--secure starts a single secured broker; a secured {CLUSTER_SIZE}-broker cluster is not "
            f"supported: drop --secure for a plaintext cluster, or --brokers for a secured broker"
        )
    return count


def _check_node(node: int) -> None:
    if not 1 <= node <= CLUSTER_SIZE:
        raise UsageError(f"--node takes a node id of the cluster, 1 to {CLUSTER_SIZE}; got {node}")


def _single_up(data_dir: Path, port: int, timeout: float, secure: bool, step: Step = _no_step) -> BrokerStatus:
    _refuse_other_kind(data_dir, secure)
    current = broker_status(data_dir)
    if current.running:
        current.already_running = True
        return current
    if port_in_use(port):
        raise _port_taken(port)
    java = _java()
    classpath = _classpath(step)
    data_dir.mkdir(parents=True, exist_ok=True)
    state = _read_state(data_dir) or {}
    controller_port, formatted = _single_controller_port(data_dir, port, state)
    bootstrap = f"{HOST}:{port}"
    secrets, secure_files = _write_single_config(data_dir, port, controller_port, secure, formatted, java, step)
    # A fresh format has no ACLs; the state says whether they were made on this storage.
    acls_done = bool(formatted and state.get("acls"))
    if not formatted:
        step(f"formatting the KRaft storage in {display_path(data_dir / 'logs')}")
        _format_storage(data_dir, java, classpath, broker_secure.scram_format_args(secrets) if secure else None)

    log_file = data_dir / "broker.log"
    started = time.monotonic()
    proc = _spawn(java, classpath, data_dir)
    new_state = _single_state(proc.pid, port, controller_port, secure, secure_files, acls_done)
    _state_file(data_dir).write_text(json.dumps(new_state))
    # A secured listener answers only a client that logs in over TLS: the probe is admin.
    target = broker_secure.admin_cluster(bootstrap, secure_files) if secure_files is not None else bootstrap

    step(f"starting the broker (pid {proc.pid})")
    _wait_for_start(
        [proc],
        _single_ready(proc, port, target, bootstrap, log_file, step),
        started,
        timeout,
        f"the Kafka broker did not become ready within {timeout:.0f} s; see {log_file}",
    )
    if secure_files is not None and not acls_done:
        _create_acls(data_dir, new_state, proc, target, started + timeout, step)
    status = broker_status(data_dir)
    status.ready_seconds = round(time.monotonic() - started, 2)
    return status


def _single_controller_port(data_dir: Path, port: int, state: dict) -> tuple[int, bool]:
    """The controller port of a single broker and whether its storage is (still) formatted: the
    recorded port while it is free, else a new one on storage wiped for a new format."""
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
    return controller_port, formatted


def _write_single_config(
    data_dir: Path, port: int, controller_port: int, secure: bool, formatted: bool, java: str, step: Step
) -> tuple[broker_secure.Secrets | None, broker_secure.SecureFiles | None]:
    """Write a single broker's ``server.properties`` (for a secured one also its users, TLS files and
    client configs); the secured broker's secrets and files, or (None, None)."""
    props = data_dir / "server.properties"
    if not secure:
        if not formatted:
            broker_secure.forget(data_dir)  # left by a secured start that never got to format
        props.write_text(_server_properties(data_dir, port, controller_port))
        return None, None
    step("preparing the secured listener (SCRAM users, TLS certificates)")
    secrets = broker_secure.load_or_create_secrets(data_dir)
    secure_files = broker_secure.ensure_tls(data_dir, secrets, java)
    broker_secure.write_client_configs(data_dir, f"{HOST}:{port}", secrets, secure_files)
    broker_secure.write_private(
        props,
        _server_properties(
            data_dir,
            port,
            controller_port,
            broker_secure.server_properties(HOST, port, controller_port, secrets, secure_files),
        ),
    )
    return secrets, secure_files


def _single_state(
    pid: int,
    port: int,
    controller_port: int,
    secure: bool,
    secure_files: broker_secure.SecureFiles | None,
    acls_done: bool,
) -> dict:
    """What ``broker.json`` records of a single broker: its process and ports, and for a secured one
    its client configs and whether its ACLs exist."""
    state = {"pid": pid, "port": port, "controller_port": controller_port, "secure": secure}
    if secure_files is not None:
        state.update(
            client_config=str(secure_files.client_config),
            admin_config=str(secure_files.admin_config),
            ca_file=str(secure_files.ca_file),
            acls=acls_done,
        )
    return state


def _single_ready(
    proc: subprocess.Popen, port: int, target, bootstrap: str, log_file: Path, step: Step
) -> Callable[[], bool]:
    """Whether the starting broker answers ``target``; raises once its process has exited."""

    def ready() -> bool:
        if proc.poll() is not None:
            raise _exited_during_start("the Kafka broker", proc, log_file)
        if not port_in_use(port):
            return False
        step(f"waiting for the broker (pid {proc.pid}) to answer on {bootstrap}")
        return _answers(target)

    return ready


def _create_acls(data_dir: Path, state: dict, proc: subprocess.Popen, target, deadline: float, step: Step) -> None:
    """Create the ACLs of user statectl on a secured broker whose storage has none yet, and record
    that it has them; the broker is stopped if they cannot be made."""
    step("creating the ACLs of user statectl")
    try:
        broker_secure.create_statectl_acls(target, max(10.0, deadline - time.monotonic()))
    except OperationalError:
        _terminate(proc.pid, 10)
        raise
    state["acls"] = True
    _state_file(data_dir).write_text(json.dumps(state))


def _wait_for_start(
    procs: list[subprocess.Popen], ready: Callable[[], bool], started: float, timeout: float, late: str
) -> None:
    """Wait until ``ready()``, at most ``timeout`` s from ``started``; if it never is, the processes
    that were started are stopped and OperationalError(``late``) is raised."""
    if wait_until(ready, started + timeout - time.monotonic(), interval=0.2):
        return
    for proc in procs:
        _terminate(proc.pid, 10)
    raise OperationalError(late)


def _exited_during_start(what: str, proc: subprocess.Popen, log: Path) -> OperationalError:
    return OperationalError(
        f"{what} exited during start-up (code {proc.returncode}): {_log_tail(log)} — full log: {log}"
    )


def _answers(target) -> bool:
    from statectl.adapters.kafka.connect import broker_answers

    return broker_answers(target, timeout=2.0)


def _terminate(pid: int, timeout: float) -> bool:
    """SIGTERM, wait, then SIGKILL. Returns True if it exited after SIGTERM."""
    return terminate(pid, timeout, _pid_is_broker)


def broker_down(
    data_dir: Path | None, port: int | None = None, timeout: float = 30.0, node: int | None = None
) -> BrokerStatus:
    """Stop the broker of ``data_dir`` (controlled shutdown, then a kill if it hangs).

    With ``port``, the broker listening there, whatever its data dir (for a cluster: the cluster
    one of whose nodes listens there); with both, the broker of ``data_dir``, which must be the one
    on ``port``. A data dir of None is the default one. A cluster stops all its nodes at once, or
    with ``node`` only that one. The status returned is the one before the stop."""
    if node is not None:
        _check_node(node)
    if port is not None:
        return _down_on_port(port, data_dir, timeout, node)
    data_dir = (data_dir or default_broker_dir()).resolve()
    status = broker_status(data_dir)
    if status.is_cluster:
        return _cluster_down(data_dir, status, timeout, node)
    if node is not None:
        raise UsageError(
            f"--node stops one node of a {CLUSTER_SIZE}-broker cluster, and {data_dir} holds "
            f"{'a single broker' if _formatted_brokers(data_dir) == 1 else 'no cluster'}; "
            "nothing was stopped (drop --node to stop the broker)"
        )
    if status.running and status.pid:
        _terminate(status.pid, timeout)
    state = _read_state(data_dir)
    if state is not None:
        state.pop("pid", None)
        _state_file(data_dir).write_text(json.dumps(state))
    return status


def _down_on_port(port: int, data_dir: Path | None, timeout: float, node: int | None) -> BrokerStatus:
    owner = broker_on_port(port)
    if owner is None:
        if port_in_use(port):
            raise UsageError(
                f"port {port} is in use by a process that is not a broker statectl started; nothing was stopped"
            )
        return BrokerStatus(running=False, data_dir=str(data_dir.resolve()) if data_dir else "", port=port)
    if data_dir is not None and Path(owner.data_dir) != data_dir.resolve():
        raise UsageError(
            f"port {port} is served by the broker of {owner.data_dir}, not of {data_dir.resolve()}; "
            "nothing was stopped (drop --data-dir to stop it)"
        )
    return broker_down(Path(owner.data_dir), timeout=timeout, node=node)


# ---------------------------------------------------------------- a cluster of three nodes
def _node_dir(data_dir: Path, node_id: int) -> Path:
    return data_dir / f"node-{node_id}"


def _cluster_status(data_dir: Path, state: dict | None) -> BrokerStatus:
    data_dir = data_dir.resolve()  # the nodes' command lines name their configs by absolute paths
    nodes = []
    for entry in sorted((state or {}).get("nodes", []), key=lambda n: int(n["node_id"])):
        node_id, pid = int(entry["node_id"]), entry.get("pid")
        home = _node_dir(data_dir, node_id)
        running = pid is not None and _pid_is_broker(int(pid), home / "server.properties")
        nodes.append(
            NodeStatus(
                node_id,
                running,
                int(entry["port"]),
                int(entry["controller_port"]),
                int(pid) if running else None,
                str(home),
                str(home / "broker.log"),
            )
        )
    running = any(n.running for n in nodes)
    return BrokerStatus(
        running=running,
        data_dir=str(data_dir),
        bootstrap_servers=",".join(n.address for n in nodes) if running else None,
        port=nodes[0].port if running else None,
        controller_port=nodes[0].controller_port if running else None,
        brokers=CLUSTER_SIZE,
        nodes=nodes,
    )


def cluster_ports(port: int) -> dict[int, int]:
    """Node id -> client port of a cluster whose first client port is ``port``: consecutive ports."""
    return {node_id: port + node_id - 1 for node_id in range(1, CLUSTER_SIZE + 1)}


def _controller_ports(recorded: dict[int, int], taken: set[int]) -> dict[int, int]:
    """The recorded controller ports when every one is still free, else new free ones for all."""
    if (
        len(recorded) == CLUSTER_SIZE
        and len(set(recorded.values())) == CLUSTER_SIZE
        and not set(recorded.values()) & taken
        and not any(port_in_use(p) for p in recorded.values())
    ):
        return dict(recorded)
    ports: dict[int, int] = {}
    while len(ports) < CLUSTER_SIZE:
        candidate = free_port()
        if candidate not in taken and candidate not in ports.values():
            ports[len(ports) + 1] = candidate
    return ports


def _cluster_up(
    data_dir: Path, port: int | None, timeout: float, node: int | None, step: Step = _no_step
) -> BrokerStatus:
    """Start the nodes of the cluster that are not running (or only ``node``) and wait until the
    cluster's metadata lists each of them."""
    state = _read_state(data_dir) or {}
    current = _cluster_status(data_dir, state)
    running = {n.node_id for n in current.nodes if n.running}
    wanted = [node] if node is not None else list(range(1, CLUSTER_SIZE + 1))
    to_start = [i for i in wanted if i not in running]
    if not to_start:
        current.already_running = True
        return current
    recorded = {int(n["node_id"]): n for n in state.get("nodes", [])}
    homes = {i: _node_dir(data_dir, i) for i in range(1, CLUSTER_SIZE + 1)}
    formatted = {i for i, home in homes.items() if (home / "logs" / "meta.properties").exists()}
    _check_nodes_can_start(data_dir, node, running, formatted, to_start)
    if running:
        clients, controllers = _rejoin_ports(data_dir, recorded, to_start)
    else:
        clients, controllers = _new_cluster_ports(port, recorded)
    java = _java()
    classpath = _classpath(step)
    for i in to_start:
        homes[i].mkdir(parents=True, exist_ok=True)
        homes[i].joinpath("server.properties").write_text(
            _server_properties(homes[i], clients[i], controllers[i], node_id=i, voters=controllers)
        )
    if not formatted:
        step(f"formatting the KRaft storage of {CLUSTER_SIZE} nodes in {display_path(data_dir)}")
        _format_nodes([homes[i] for i in to_start], java, classpath, _kafka_uuid())

    started = time.monotonic()
    procs = {i: _spawn(java, classpath, homes[i], heap=("128m", "512m")) for i in to_start}
    _write_cluster_state(data_dir, current, procs, clients, controllers)
    step(
        f"starting {_nodes_text(to_start)} "
        f"({'pid' if len(procs) == 1 else 'pids'} {', '.join(str(p.pid) for p in procs.values())})"
    )
    _wait_for_start(
        list(procs.values()),
        _cluster_ready(procs, homes, clients, step),
        started,
        timeout,
        f"the Kafka cluster did not become ready within {timeout:.0f} s (nodes {', '.join(map(str, to_start))}); "
        f"see {', '.join(str(homes[i] / 'broker.log') for i in to_start)}",
    )
    status = _cluster_status(data_dir, _read_state(data_dir))
    status.ready_seconds = round(time.monotonic() - started, 2)
    status.changed_nodes = to_start
    return status


def _check_nodes_can_start(
    data_dir: Path, node: int | None, running: set[int], formatted: set[int], to_start: list[int]
) -> None:
    """Refuse a lone node without a quorum to join, and a node whose storage is gone while the
    others' is there."""
    if node is not None and not running:
        raise UsageError(
            f"no node of the cluster in {data_dir} is running, and one node alone has no controller "
            f"quorum: start the whole cluster with statectl kafka up --data-dir {data_dir}"
        )
    if formatted and set(to_start) - formatted:
        missing = ", ".join(str(i) for i in sorted(set(to_start) - formatted))
        raise OperationalError(
            f"the storage of node {missing} of the cluster in {data_dir} is missing (deleted?); "
            f"stop the cluster and delete {data_dir} to start over"
        )


def _rejoin_ports(
    data_dir: Path, recorded: dict[int, dict], to_start: list[int]
) -> tuple[dict[int, int], dict[int, int]]:
    """(client, controller) ports of nodes that join nodes which run: the ports the cluster knows
    them by, which must still be free."""
    clients = {i: int(recorded[i]["port"]) for i in recorded}
    controllers = {i: int(recorded[i]["controller_port"]) for i in recorded}
    for i in to_start:
        if port_in_use(clients[i]):
            raise _port_taken(clients[i], f" (node {i}'s client port)")
        if port_in_use(controllers[i]):
            raise OperationalError(
                f"the controller port {controllers[i]} of node {i} is in use by another process; stop the "
                f"cluster (statectl kafka down --data-dir {data_dir}) and start it again to move it"
            )
    return clients, controllers


def _new_cluster_ports(port: int | None, recorded: dict[int, dict]) -> tuple[dict[int, int], dict[int, int]]:
    """(client, controller) ports of a cluster none of whose nodes runs: consecutive client ports
    from ``port``, all free, and the recorded controller ports while they are free."""
    clients = cluster_ports(port or DEFAULT_PORT)
    if max(clients.values()) > 65535:
        raise UsageError(
            f"a cluster needs {CLUSTER_SIZE} consecutive client ports from --port; {port} leaves too few below 65536"
        )
    span = f"{clients[1]}-{clients[CLUSTER_SIZE]}"
    for i, client_port in clients.items():
        if port_in_use(client_port):
            raise _port_taken(client_port, f" (node {i}'s client port; a cluster on --port {clients[1]} takes {span})")
    controllers = _controller_ports({i: int(n["controller_port"]) for i, n in recorded.items()}, set(clients.values()))
    return clients, controllers


def _write_cluster_state(
    data_dir: Path,
    current: BrokerStatus,
    procs: dict[int, subprocess.Popen],
    clients: dict[int, int],
    controllers: dict[int, int],
) -> None:
    """Record every node's pid (the new process's, the running one's, or none) and ports."""
    nodes = []
    for i in range(1, CLUSTER_SIZE + 1):
        pid = procs[i].pid if i in procs else current.node(i).pid if current.node(i) else None
        nodes.append({"node_id": i, "pid": pid, "port": clients[i], "controller_port": controllers[i]})
    _state_file(data_dir).write_text(json.dumps({"brokers": CLUSTER_SIZE, "secure": False, "nodes": nodes}))


def _cluster_ready(
    procs: dict[int, subprocess.Popen], homes: dict[int, Path], clients: dict[int, int], step: Step
) -> Callable[[], bool]:
    """Whether every starting node (``procs``) listens and is in the cluster's metadata; once one
    has exited, all of them are stopped and it raises."""
    to_start = list(procs)
    which = _nodes_text(to_start)
    bootstrap = ",".join(f"{HOST}:{clients[i]}" for i in sorted(clients))

    def ready() -> bool:
        for i, proc in procs.items():
            if proc.poll() is not None:
                for other in procs.values():
                    _terminate(other.pid, 10)
                raise _exited_during_start(f"node {i} of the Kafka cluster", proc, homes[i] / "broker.log")
        listening = [i for i in to_start if port_in_use(clients[i])]
        if len(listening) < len(to_start):
            step(
                f"waiting for {which} to listen ({len(listening)} of {len(to_start)} on "
                f"{', '.join(f'{HOST}:{clients[i]}' for i in to_start)})"
            )
            return False
        live = _live_brokers(bootstrap)
        step(
            f"waiting for {which} to join the cluster ({len(set(to_start) & live)} of {len(to_start)} in its metadata)"
        )
        return set(to_start) <= live

    return ready


def _nodes_text(ids: list[int]) -> str:
    return f"node {ids[0]}" if len(ids) == 1 else "nodes " + ", ".join(map(str, ids))


def _live_brokers(bootstrap: str) -> set[int]:
    from statectl.adapters.kafka.admin import live_brokers

    return live_brokers(bootstrap, timeout=2.0)


def _cluster_down(data_dir: Path, status: BrokerStatus, timeout: float, node: int | None) -> BrokerStatus:
    """Stop the running nodes (or only ``node``), all at once: each waits for a controlled
    shutdown, and one by one the last ones would wait on a quorum that is going away."""
    targets = [n for n in status.nodes if n.running and (node is None or n.node_id == node)]
    for n in targets:
        try:
            os.kill(n.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for n in targets:
        _terminate(n.pid, timeout)
    state = _read_state(data_dir)
    if state is not None:
        for entry in state.get("nodes", []):
            if any(int(entry["node_id"]) == n.node_id for n in targets):
                entry["pid"] = None
        _state_file(data_dir).write_text(json.dumps(state))
    status.changed_nodes = [n.node_id for n in targets]
    return status
