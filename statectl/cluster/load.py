"""Which cluster a command talks to, and with which client settings, by precedence.

Bootstrap servers: ``--bootstrap-servers`` > ``$KAFKA_BOOTSTRAP_SERVERS`` > the client config's
``bootstrap.servers`` (a file given by flag or environment) > the project context's
``bootstrap_servers`` > its client config's ``bootstrap.servers`` > the job config's
``kafka.bootstrap_servers`` > ``localhost:9092``.
Client properties: the job config's ``kafka.properties``, then the client config file
(``--client-config`` or ``$STATECTL_CLIENT_CONFIG``, else the context's ``client_config``) over
them, key by key.

The context's values are arguments: this package knows nothing of projects (statectl.project's
precedence table is the one place the order is written down).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from statectl.cluster import Cluster
from statectl.cluster.properties import Property, read_properties_file
from statectl.cluster.settings import client_settings
from statectl.cluster.truststore import pem_from_store

CLIENT_CONFIG_ENV = "STATECTL_CLIENT_CONFIG"
DEFAULT_BOOTSTRAP = "localhost:9092"


def client_config_path(flag: Path | None, env: Mapping[str, str] | None = None) -> Path | None:
    env = os.environ if env is None else env
    if flag is not None:
        # The shell leaves "~" alone in --client-config=~/client.properties.
        return Path(flag).expanduser()
    named = env.get(CLIENT_CONFIG_ENV)
    return Path(named).expanduser() if named else None


def load_cluster(
    bootstrap_flag: str | None = None,
    client_config: Path | None = None,
    config_bootstrap: str | None = None,
    config_properties: Mapping[str, str] | None = None,
    config_source: str | None = None,
    env: Mapping[str, str] | None = None,
    context_bootstrap: str | None = None,
    context_client_config: Path | None = None,
    context_source: str | None = None,
) -> Cluster:
    """The cluster the flags, environment, client config file, project context and job config
    name together.

    ``config_source`` is the job config file (for problem lines and ``@relative`` paths);
    ``context_*`` are the project context's settings (``context_source`` names it in messages)."""
    env = os.environ if env is None else env
    props: list[Property] = []
    base_dirs: dict[str, Path | None] = {}
    if config_properties:
        source = config_source or "job config"
        # Origins read "leaderboard.yaml: kafka.properties" (a problem adds the key); the part
        # before the last ":" names the file whose folder @relative paths start from.
        props += [Property(k, v, f"{source}: kafka.properties") for k, v in config_properties.items()]
        base_dirs[source] = Path(config_source).parent if config_source else None
    path = client_config_path(client_config, env)
    from_context = path is None and context_client_config is not None
    if from_context:
        path = Path(context_client_config).expanduser()
        if not path.is_file():
            from statectl.errors import ConfigError

            raise ConfigError(
                [
                    f"client config {path} ({context_source or 'the project context'}'s client_config) "
                    f"does not exist or is not a file"
                ]
            )
    file_sets_bootstrap = False
    if path is not None:
        from_file = read_properties_file(path)
        file_sets_bootstrap = any(p.key == "bootstrap.servers" for p in from_file)
        props += from_file
        base_dirs[str(path)] = path.parent
    settings = client_settings(props, env=env, base_dirs=base_dirs, pem_from_store=pem_from_store)
    file_bootstrap = settings.bootstrap if file_sets_bootstrap else None
    config_bootstrap = config_bootstrap or settings.bootstrap
    candidates = (
        bootstrap_flag,
        env.get("KAFKA_BOOTSTRAP_SERVERS"),
        None if from_context else file_bootstrap,
        context_bootstrap,
        file_bootstrap if from_context else None,
        config_bootstrap,
    )
    for candidate in candidates:
        if candidate:
            return Cluster(candidate, settings)
    return Cluster(DEFAULT_BOOTSTRAP, settings)
