"""The one family of errors statectl raises, and the one table of exit codes; the CLI maps errors to
codes in one place."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Every code a statectl command exits with, each with its one-line meaning.
    docs/commands/index.md prints this table (a test holds the two together)."""

    OK = 0, "success: the command did what was asked, and what it checked is fine"
    FAILURE = 1, "operational failure (Kafka, Spark, storage), or what the command checked is not fine"
    USAGE = 2, "usage or config error: the command line, a config file or a path given cannot be used as asked"
    INTERRUPTED = 130, "interrupted by Ctrl-C before the work was done (128 + SIGINT, as shells report it)"

    meaning: str

    def __new__(cls, code: int, meaning: str):
        member = int.__new__(cls, code)
        member._value_ = code
        member.meaning = meaning
        return member


class StatectlError(Exception):
    """Something went wrong that a user can act on; the message says what and what to do."""

    exit_code = ExitCode.FAILURE


class UsageError(StatectlError):
    """The command line or a config file asks for something invalid."""

    exit_code = ExitCode.USAGE


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
