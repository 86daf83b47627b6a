"""What ``statectl kafka up --secure`` adds to the local broker: TLS, SASL users, an authorizer, ACLs.

The broker's client listener speaks SASL_SSL with SCRAM-SHA-512; its certificate is signed by a
throwaway CA made here with the JDK's keytool. The controller listener (127.0.0.1 only) speaks
SASL_PLAINTEXT with the PLAIN mechanism and one static user, ``controller``, which is a super user
as ``admin`` is: nobody reaches either listener anonymously. The SCRAM users ``admin`` (super user)
and ``statectl`` (the ACLs a statectl tour needs, no more) are written into the storage when it is
formatted.

Files in the data dir (secrets mode 0600, never printed):

- ``secrets.json``: the passwords (users, controller, key stores); its presence marks a data dir
  formatted for a secured broker.
- ``tls/ca.p12`` (CA key and certificate), ``tls/broker.p12`` (the broker's key and certificate
  chain), ``tls/ca.pem`` (the CA certificate clients trust; public).
- ``client.properties`` (user ``statectl``) and ``admin.properties`` (user ``admin``): Kafka's
  Java client config format, read by ``--client-config`` / ``$STATECTL_CLIENT_CONFIG`` and by
  Kafka's own tools (``--command-config``).
"""

from __future__ import annotations

import json
import os
import secrets as _random
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from statectl import redact
from statectl.cluster import Cluster
from statectl.cluster.load import load_cluster
from statectl.cluster.settings import jaas_config
from statectl.errors import OperationalError
from statectl.paths import ONE_SHOT_JVM_OPTIONS, jdk_tool

MECHANISM = "SCRAM-SHA-512"
PROTOCOL = "SASL_SSL"
ADMIN_USER = "admin"
CLIENT_USER = "statectl"
CONTROLLER_USER = "controller"
SECRETS_FILE = "secrets.json"
CLIENT_CONFIG = "client.properties"
ADMIN_CONFIG = "admin.properties"
TLS_DIR = "tls"
CA_PEM = "ca.pem"
CA_STORE = "ca.p12"
BROKER_STORE = "broker.p12"
#: What the broker certificate names: clients connect to 127.0.0.1 (or localhost).
SAN = "dns:localhost,ip:127.0.0.1"


@dataclass(frozen=True, repr=False)
class Secrets:
    admin: str
    statectl: str
    controller: str
    keystore: str

    def __repr__(self) -> str:
        return "Secrets(***)"

    def users(self) -> dict[str, str]:
        return {ADMIN_USER: self.admin, CLIENT_USER: self.statectl}


@dataclass(frozen=True)
class SecureFiles:
    client_config: Path
    admin_config: Path
    ca_file: Path
    keystore: Path


def is_secure_dir(data_dir: Path) -> bool:
    """Whether ``data_dir`` was set up for a secured broker (its secrets file exists)."""
    return (data_dir / SECRETS_FILE).exists()


def files_of(data_dir: Path) -> SecureFiles:
    return SecureFiles(
        client_config=data_dir / CLIENT_CONFIG,
        admin_config=data_dir / ADMIN_CONFIG,
        ca_file=data_dir / TLS_DIR / CA_PEM,
        keystore=data_dir / TLS_DIR / BROKER_STORE,
    )


def forget(data_dir: Path) -> None:
    """Remove what a secured set-up left in a data dir whose storage was never formatted for it."""
    for name in (SECRETS_FILE, CLIENT_CONFIG, ADMIN_CONFIG):
        (data_dir / name).unlink(missing_ok=True)
    shutil.rmtree(data_dir / TLS_DIR, ignore_errors=True)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (mode 0600), atomically."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        with os.fdopen(fd, "w", encoding="latin-1" if path.suffix == ".properties" else "utf-8") as f:
            f.write(text)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


# ---------------------------------------------------------------- passwords
def load_or_create_secrets(data_dir: Path) -> Secrets:
    """The data dir's passwords, made (random) the first time; every one is registered with
    :mod:`statectl.redact`, so no message or log line of statectl shows it."""
    path = data_dir / SECRETS_FILE
    try:
        raw = json.loads(path.read_text())
        found = Secrets(
            admin=raw["users"][ADMIN_USER],
            statectl=raw["users"][CLIENT_USER],
            controller=raw["controller"],
            keystore=raw["keystore"],
        )
    except FileNotFoundError:
        found = Secrets(*(_random.token_urlsafe(24) for _ in range(4)))
        # Key stores left from other secrets are locked with another password: made again.
        shutil.rmtree(data_dir / TLS_DIR, ignore_errors=True)
        write_private(
            path,
            json.dumps(
                {
                    "users": found.users(),
                    "controller": found.controller,
                    "keystore": found.keystore,
                },
                indent=2,
            )
            + "\n",
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise OperationalError(
            f"cannot read the broker's secrets {path} ({exc}); delete the data dir {data_dir} to start over"
        ) from None
    redact.register(found.admin, found.statectl, found.controller, found.keystore)
    return found


def scram_format_args(secrets: Secrets) -> list[str]:
    """StorageTool's ``--add-scram`` arguments: the SCRAM users, in the metadata from the start."""
    return [f"--add-scram={MECHANISM}=[name={user},password={password}]" for user, password in secrets.users().items()]


# ---------------------------------------------------------------- the throwaway CA and the broker certificate
def _keytool() -> str:
    found = jdk_tool("keytool")
    if found is None:
        raise OperationalError(
            "the JDK's keytool is not on PATH; `kafka up --secure` needs it to make the broker's TLS certificate"
        )
    return str(found)


def _run_keytool(keytool: str, steps: list[list[str]], cwd: Path, password: str) -> None:
    """Run keytool once per step, all at once (each is a JVM start); fail on the first error."""
    # Passwords come from the environment (-storepass:env), never the command line.
    env = {**os.environ, "STATECTL_KEYSTORE_PASS": password}
    fast = [f"-J{o}" for o in ONE_SHOT_JVM_OPTIONS]
    procs = [
        subprocess.Popen(
            [keytool, *fast, *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for args in steps
    ]
    failed = []
    for args, proc in zip(steps, procs):
        try:
            output, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
                other.wait()
            raise OperationalError(
                f"making the broker's TLS certificate failed: keytool {args[0]} did not finish within 120 s"
            ) from None
        if proc.returncode != 0:
            last = (output.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
            failed.append(f"keytool {args[0]}: {last}")
    if failed:
        raise OperationalError("making the broker's TLS certificate failed: " + "; ".join(failed))


def ensure_tls(data_dir: Path, secrets: Secrets, java: str) -> SecureFiles:
    """The CA and the broker's key store in ``<data dir>/tls``: kept from an earlier start when
    present, else made now (a few seconds of keytool, once per data dir)."""
    files = files_of(data_dir)
    tls = data_dir / TLS_DIR
    if files.ca_file.exists() and files.keystore.exists() and (tls / CA_STORE).exists():
        return files
    keytool = _keytool()
    work = data_dir / f".{TLS_DIR}.{os.getpid()}.tmp"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(mode=0o700)
    try:
        store = ["-storetype", "PKCS12", "-storepass:env", "STATECTL_KEYSTORE_PASS"]
        key = ["-keypass:env", "STATECTL_KEYSTORE_PASS", "-keyalg", "EC", "-groupname", "secp256r1"]
        ca_name = f"CN=statectl local CA {uuid.uuid4().hex[:8]}, O=statectl"
        _run_keytool(
            keytool,
            [
                [
                    "-genkeypair",
                    "-alias",
                    "ca",
                    *key,
                    "-dname",
                    ca_name,
                    "-validity",
                    "3650",
                    "-ext",
                    "bc:c",
                    "-ext",
                    "KU:c=keyCertSign,cRLSign",
                    "-keystore",
                    CA_STORE,
                    *store,
                ],
                [
                    "-genkeypair",
                    "-alias",
                    "broker",
                    *key,
                    "-dname",
                    "CN=localhost, O=statectl",
                    "-validity",
                    "825",
                    "-keystore",
                    BROKER_STORE,
                    *store,
                ],
            ],
            work,
            secrets.keystore,
        )
        _run_keytool(
            keytool,
            [
                ["-exportcert", "-rfc", "-alias", "ca", "-keystore", CA_STORE, *store, "-file", CA_PEM],
                ["-certreq", "-alias", "broker", "-keystore", BROKER_STORE, *store, "-file", "broker.csr"],
            ],
            work,
            secrets.keystore,
        )
        _run_keytool(
            keytool,
            [
                [
                    "-gencert",
                    "-rfc",
                    "-alias",
                    "ca",
                    "-keystore",
                    CA_STORE,
                    *store,
                    "-infile",
                    "broker.csr",
                    "-outfile",
                    "broker.crt",
                    "-validity",
                    "825",
                    "-ext",
                    f"SAN={SAN}",
                    "-ext",
                    "KU:c=digitalSignature,keyEncipherment,keyAgreement",
                    "-ext",
                    "EKU=serverAuth,clientAuth",
                ],
            ],
            work,
            secrets.keystore,
        )
        # The reply with its chain (broker, then CA) installs without trusting the CA first.
        (work / "chain.pem").write_text((work / "broker.crt").read_text() + (work / CA_PEM).read_text())
        _run_keytool(
            keytool,
            [
                [
                    "-importcert",
                    "-noprompt",
                    "-alias",
                    "broker",
                    "-file",
                    "chain.pem",
                    "-keystore",
                    BROKER_STORE,
                    *store,
                    "-keypass:env",
                    "STATECTL_KEYSTORE_PASS",
                ],
            ],
            work,
            secrets.keystore,
        )
        for name in ("broker.csr", "broker.crt", "chain.pem"):
            (work / name).unlink()
        for name in (CA_STORE, BROKER_STORE):
            os.chmod(work / name, 0o600)
        os.chmod(work / CA_PEM, 0o644)
        os.chmod(work, 0o755)
        shutil.rmtree(tls, ignore_errors=True)
        os.replace(work, tls)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return files


# ---------------------------------------------------------------- broker and client configs
def _jaas(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _prop(value: str) -> str:
    """A value as java.util.Properties.load reads it back: backslashes escaped, non-ASCII as \\uXXXX."""
    out = []
    for ch in value.replace("\\", "\\\\"):
        if ord(ch) < 0x80:
            out.append(ch)
        else:
            encoded = ch.encode("utf-16-be")
            out += [f"\\u{int.from_bytes(encoded[i : i + 2], 'big'):04x}" for i in range(0, len(encoded), 2)]
    return "".join(out)


def server_properties(host: str, port: int, controller_port: int, secrets: Secrets, files: SecureFiles) -> list[str]:
    """The listener, SASL, TLS and authorizer lines of a secured broker's server.properties."""
    controller_jaas = (
        f"org.apache.kafka.common.security.plain.PlainLoginModule required "
        f"username={_jaas(CONTROLLER_USER)} password={_jaas(secrets.controller)} "
        f"user_{CONTROLLER_USER}={_jaas(secrets.controller)};"
    )
    return [
        f"listeners={PROTOCOL}://{host}:{port},CONTROLLER://{host}:{controller_port}",
        f"advertised.listeners={PROTOCOL}://{host}:{port}",
        "controller.listener.names=CONTROLLER",
        f"inter.broker.listener.name={PROTOCOL}",
        f"listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT,{PROTOCOL}:{PROTOCOL}",
        # Clients and inter-broker traffic: SCRAM over TLS; the broker logs in to itself as admin.
        f"sasl.enabled.mechanisms={MECHANISM}",
        f"sasl.mechanism.inter.broker.protocol={MECHANISM}",
        f"listener.name.{PROTOCOL.lower()}.{MECHANISM.lower()}.sasl.jaas.config="
        + _prop(jaas_config(MECHANISM, ADMIN_USER, secrets.admin)),
        # The controller: PLAIN with one static user, on loopback; no anonymous access.
        "sasl.mechanism.controller.protocol=PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms=PLAIN",
        f"listener.name.controller.plain.sasl.jaas.config={_prop(controller_jaas)}",
        "ssl.keystore.type=PKCS12",
        f"ssl.keystore.location={_prop(str(files.keystore))}",
        f"ssl.keystore.password={secrets.keystore}",
        f"ssl.key.password={secrets.keystore}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={_prop(str(files.ca_file))}",
        "ssl.client.auth=none",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found=false",
        f"super.users=User:{ADMIN_USER};User:{CONTROLLER_USER}",
    ]


def write_client_configs(data_dir: Path, bootstrap: str, secrets: Secrets, files: SecureFiles) -> None:
    """``client.properties`` (user statectl) and ``admin.properties`` (user admin), mode 0600."""
    for path, user, password, what in (
        (files.client_config, CLIENT_USER, secrets.statectl, "the ACLs of a statectl tour"),
        (files.admin_config, ADMIN_USER, secrets.admin, "super user"),
    ):
        write_private(
            path,
            "\n".join(
                [
                    f"# statectl's local secured Kafka broker ({_prop(str(data_dir))}): user {user} ({what}).",
                    "# Use it with statectl's --client-config or $STATECTL_CLIENT_CONFIG, or Kafka's --command-config.",
                    f"security.protocol={PROTOCOL}",
                    f"sasl.mechanism={MECHANISM}",
                    f"sasl.jaas.config={_prop(jaas_config(MECHANISM, user, password))}",
                    "ssl.truststore.type=PEM",
                    f"ssl.truststore.location={_prop(str(files.ca_file))}",
                    f"bootstrap.servers={bootstrap}",
                    "",
                ]
            ),
        )


def admin_cluster(bootstrap: str, files: SecureFiles) -> Cluster:
    """How statectl reaches the secured broker as ``admin`` (for readiness, ACLs and status)."""
    return load_cluster(bootstrap_flag=bootstrap, client_config=files.admin_config, env={})


# ---------------------------------------------------------------- ACLs of the statectl user
def statectl_acls():
    """The ACL bindings of ``User:statectl``: what the statectl tour needs on a secured cluster."""
    from confluent_kafka.admin import AclBinding, AclPermissionType, ResourcePatternType
    from confluent_kafka.admin import AclOperation as Op
    from confluent_kafka.admin import ResourceType as Rt

    def allow(resource, name: str, operation) -> AclBinding:
        return AclBinding(
            resource, name, ResourcePatternType.LITERAL, f"User:{CLIENT_USER}", "*", operation, AclPermissionType.ALLOW
        )

    return (
        [
            allow(Rt.BROKER, "kafka-cluster", op)
            for op in (Op.CREATE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.IDEMPOTENT_WRITE)
        ]
        + [allow(Rt.TOPIC, "*", Op.ALL)]
        + [allow(Rt.GROUP, "*", op) for op in (Op.READ, Op.DESCRIBE)]
        + [allow(Rt.TRANSACTIONAL_ID, "*", op) for op in (Op.WRITE, Op.DESCRIBE)]
    )


def create_statectl_acls(cluster: Cluster, timeout: float) -> None:
    """Create the ACLs of ``statectl`` as ``admin`` and wait until the broker's authorizer has
    them (so the first request of the user right after ``kafka up`` is allowed)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    from statectl.adapters.kafka.connect import admin_client

    wanted = statectl_acls()
    admin = admin_client(cluster)
    deadline = time.monotonic() + timeout
    problem = "no answer"
    mine = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        f"User:{CLIENT_USER}",
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    created = False
    while time.monotonic() < deadline:
        left = max(1.0, deadline - time.monotonic())
        try:
            if not created:
                for future in admin.create_acls(wanted, request_timeout=left).values():
                    future.result()
                created = True
            if len(admin.describe_acls(mine, request_timeout=left).result()) >= len(wanted):
                return
            problem = "the broker does not list them yet"
        except KafkaException as exc:
            problem = exc.args[0].str() if exc.args else str(exc)
        time.sleep(0.2)
    raise OperationalError(f"creating the ACLs of user {CLIENT_USER!r} on the secured broker failed: {problem}")
