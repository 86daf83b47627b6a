"""The Kafka options statectl hands Spark are redacted wherever Spark shows a
plan's options (its UI, event logs, explain strings): the redaction regex Spark applies matches
every secret option statectl can set, and none of the plain ones."""

from __future__ import annotations

import re

import pytest

from statectl.adapters.spark.session import BASE_CONF
from statectl.cluster import Cluster
from statectl.cluster.properties import Property
from statectl.cluster.settings import client_settings

OPTIONS = re.compile(BASE_CONF["spark.sql.redaction.options.regex"])


def _spark_options(**props) -> dict[str, str]:
    given = [Property(k.replace("_", "."), v, f"t:{i}") for i, (k, v) in enumerate(props.items())]
    return Cluster("b:9093", client_settings(given, env={})).spark_options()


@pytest.mark.parametrize(
    "option",
    [
        "kafka.sasl.jaas.config",
        "kafka.ssl.truststore.password",
        "kafka.ssl.keystore.password",
        "kafka.ssl.key.password",
        "kafka.ssl.keystore.key",
        "kafka.ssl.keystore.certificate.chain",
    ],
)
def test_secret_options_match_sparks_redaction_regex(option):
    assert OPTIONS.search(option)


@pytest.mark.parametrize(
    "option",
    [
        "kafka.bootstrap.servers",
        "kafka.security.protocol",
        "kafka.sasl.mechanism",
        "kafka.ssl.truststore.type",
        "kafka.ssl.truststore.location",
        "kafka.ssl.endpoint.identification.algorithm",
        "subscribe",
        "startingOffsets",
    ],
)
def test_plain_options_stay_readable(option):
    assert not OPTIONS.search(option)


def test_every_secret_option_a_scram_config_makes_is_covered():
    options = _spark_options(
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_jaas_config="org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="u" password="pw-123456";',
    )
    secret = [k for k, v in options.items() if "pw-123456" in v]
    assert secret == ["kafka.sasl.jaas.config"] and all(OPTIONS.search(k) for k in secret)
