"""The secured broker of a test session (`statectl kafka up --secure`), for the ``secure_broker``
fixture of tests/integration/conftest.py and for tests that start one of their own.

A secured broker listens with SASL_SSL (SCRAM-SHA-512) on a free loopback port; its data dir
holds ``client.properties`` (user ``statectl``: the ACLs of the statectl tour) and
``admin.properties`` (user ``admin``: super user), both in Kafka's client.properties format with
``bootstrap.servers`` set, the CA at ``tls/ca.pem``. Connect from Python with::

    from statectl.cluster.load import load_cluster
    cluster = load_cluster(client_config=Path(status.client_config), env={})

(``env={}``: neither $KAFKA_BOOTSTRAP_SERVERS nor $STATECTL_CLIENT_CONFIG of the test process
interferes), or run statectl with ``STATECTL_CLIENT_CONFIG=<status.client_config>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from statectl.adapters.local.broker import BrokerStatus, broker_down, broker_up, free_port
from statectl.errors import StatectlError

#: Generous: the machine may be busy with other test runs (the first start also makes the CA).
START_TIMEOUT = 120.0
ATTEMPTS = 3


def start_secure_broker(data_dir: Path, timeout: float = START_TIMEOUT, attempts: int = ATTEMPTS) -> BrokerStatus:
    """``broker_up(data_dir, port=<free port>, secure=True)``, with another free port when the one
    picked was taken in the meantime (another test run grabbed it) or the start failed. Raises the
    last error after ``attempts`` tries; never leaves a broker running when it raises."""
    last: Exception | None = None
    for _ in range(attempts):
        try:
            return broker_up(data_dir, port=free_port(), timeout=timeout, secure=True)
        except StatectlError as exc:
            last = exc
            broker_down(data_dir)
    assert last is not None
    raise last


def secure_broker_session(data_dir: Path) -> Iterator[BrokerStatus]:
    """Start a secured broker in ``data_dir``, yield its status, stop it however the session ends."""
    try:
        yield start_secure_broker(data_dir)
    finally:
        broker_down(data_dir)


def secrets_of(data_dir: str | Path) -> list[str]:
    """Every password of a secured broker's data dir (users, controller, key stores): for tests that
    check none of them is printed or written elsewhere."""
    import json

    raw = json.loads((Path(data_dir) / "secrets.json").read_text())
    return [*raw["users"].values(), raw["controller"], raw["keystore"]]
