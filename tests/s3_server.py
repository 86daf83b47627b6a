"""A local S3-compatible server (moto in server mode) on 127.0.0.1, for the tests and the
benchmarks (they import it from here: it is test set-up, not part of statectl).

Path-style. Credentials are checked as S3 checks them: the server starts with IAM
authentication on, makes one user with one access key, and refuses any other key or a wrong
secret (InvalidAccessKeyId, SignatureDoesNotMatch). It does not check regions. Every request it
answers is one line in its log, which is how the request costs are counted.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from statectl.adapters.local.broker import free_port
from statectl.errors import OperationalError

REGION = "us-east-1"
# Requests the server answers before it checks credentials: the three that make the user.
_SETUP_REQUESTS = 3
_ALLOW_ALL = '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}'
_REQUEST = re.compile(r'"([A-Z]+) (\S+) HTTP/[\d.]+" (\d{3})')
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Request:
    method: str
    target: str
    status: int

    @property
    def operation(self) -> str:
        """The S3 operation a request was (ListObjectsV2, GetObject...), from its method and query."""
        path, _, query = self.target.partition("?")
        on_bucket = path.strip("/").count("/") == 0
        if self.method == "GET":
            if "list-type=2" in query:
                return "ListObjectsV2"
            return "ListObjects" if on_bucket else "GetObject"
        if self.method == "HEAD":
            return "HeadBucket" if on_bucket else "HeadObject"
        if self.method == "PUT":
            return "CreateBucket" if on_bucket else ("UploadPart" if "partNumber" in query else "PutObject")
        if self.method == "DELETE":
            return "DeleteBucket" if on_bucket else "DeleteObject"
        if self.method == "POST":
            return "DeleteObjects" if "delete" in query else "Multipart"
        return self.method


@dataclass
class LocalS3:
    """A running server: its endpoint, its log, the settings that reach it."""

    endpoint: str
    log: Path
    process: subprocess.Popen
    access_key: str
    secret_key: str
    _mark: int = field(default=0)

    @property
    def properties(self) -> dict[str, str]:
        """The fs.s3a.* settings of this server (what a --storage-config file holds)."""
        return {
            "fs.s3a.endpoint": self.endpoint,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.access.key": self.access_key,
            "fs.s3a.secret.key": self.secret_key,
            "fs.s3a.endpoint.region": REGION,
            "fs.s3a.connection.ssl.enabled": "false",
        }

    def write_properties(self, path: Path) -> Path:
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties.items()), encoding="utf-8")
        return path

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=REGION,
        )

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def requests(self) -> list[Request]:
        """Every request answered so far, in order."""
        text = _ANSI.sub("", self.log.read_text(encoding="utf-8", errors="replace"))
        return [Request(m.group(1), m.group(2), int(m.group(3))) for m in _REQUEST.finditer(text)]

    def mark(self) -> int:
        """Remember where the log is now; ``requests_since`` counts from here."""
        self._mark = len(self.requests())
        return self._mark

    def requests_since(self, mark: int | None = None) -> list[Request]:
        return self.requests()[self._mark if mark is None else mark :]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_local_s3(workdir: Path, port: int | None = None, timeout: float = 30.0) -> LocalS3:
    """Start the server on 127.0.0.1 (a free port below the ephemeral range unless given); its
    log goes to ``workdir``/s3-server.log. OperationalError when it does not answer in time."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    log = workdir / "s3-server.log"
    env = {
        **os.environ,
        "MOTO_ALLOW_NONEXISTENT_REGION": "true",
        "PYTHONUNBUFFERED": "1",
        "INITIAL_NO_AUTH_ACTION_COUNT": str(_SETUP_REQUESTS),
    }
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise OperationalError(f"the local S3 server exited at start (code {process.returncode}); see {log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                pass
        except OSError:
            time.sleep(0.1)
            continue
        endpoint = f"http://127.0.0.1:{port}"
        access, secret = _make_user(endpoint)
        return LocalS3(endpoint, log, process, access, secret)
    process.kill()
    raise OperationalError(f"the local S3 server did not answer on 127.0.0.1:{port} in {timeout:.0f} s; see {log}")


def _make_user(endpoint: str) -> tuple[str, str]:
    """The one user the server knows, allowed everything: (access key, secret key)."""
    import boto3

    iam = boto3.client(
        "iam", endpoint_url=endpoint, aws_access_key_id="setup", aws_secret_access_key="setup", region_name=REGION
    )
    iam.create_user(UserName="statectl")
    iam.put_user_policy(UserName="statectl", PolicyName="everything", PolicyDocument=_ALLOW_ALL)
    key = iam.create_access_key(UserName="statectl")["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]
