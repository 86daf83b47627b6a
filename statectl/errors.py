"""The one family of errors statectl raises; the CLI maps them to exit codes in one place."""

from __future__ import annotations


class StatectlError(Exception):
    """Something went wrong that a user can act on; the message says what and what to do."""

    exit_code = 1


class UsageError(StatectlError):
    """The command line or a config file asks for something invalid."""

    exit_code = 2


class ConfigError(UsageError):
    """A config file (or a --set override) is invalid; carries every problem found."""

    def __init__(self, problems: list[str], source: str | None = None):
        self.problems = list(problems)
        self.source = source
        head = f"{source}: " if source else ""
        if len(self.problems) == 1:
            message = head + self.problems[0]
        else:
            message = head + f"{len(self.problems)} problems:\n" + "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(message)


class OperationalError(StatectlError):
    """An operation failed at run time (broker, Spark, filesystem)."""


class BrokerUnavailable(OperationalError):
    """The Kafka broker could not be reached in time."""


class NotAuthorized(OperationalError):
    """The cluster's ACLs do not let the user do what the command needs (names the topic and operation)."""


class AuthenticationFailed(BrokerUnavailable):
    """The broker answered but refused the credentials or the TLS handshake."""


class JarResolutionError(OperationalError):
    """Required jars could not be resolved from Maven Central or the local cache."""


class DeliveryFailed(OperationalError):
    """Some records were not delivered to Kafka; ``report`` says which topics and why."""

    def __init__(self, message: str, report=None):
        super().__init__(message)
        self.report = report
