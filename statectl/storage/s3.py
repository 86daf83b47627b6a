"""The S3 store: one bucket through boto3, with exactly the requests statectl means to make
(one GET per file read, one LIST per 1,000 keys, single PUTs, server-side copies, batched
deletes), folder listings kept for the command's life, and every failure one line saying which
and what to do."""

from __future__ import annotations

import errno
import os
import signal
import threading
from collections.abc import Callable, Iterable

from statectl.errors import OperationalError, StatectlError, UsageError
from statectl.storage.entries import ObjectEntry
from statectl.storage.settings import S3Settings

#: Seconds to wait for a connection, and attempts per request: an unreachable endpoint is
#: reported within 10 s.
#: boto3 (botocore: a third of the light install) comes with the "s3" extra.
S3_EXTRA = 'pip install "statectl[s3]"'
S3_EXTRA_NEEDED = "s3a:// checkpoints need AWS's S3 client (boto3)"
CONNECT_TIMEOUT = 2.0
READ_TIMEOUT = 30.0
ATTEMPTS = 3
_DELETE_BATCH = 1000
_COPY_LIMIT = 5 * 1024**3  # CopyObject's limit; larger objects are copied in parts

_CREDENTIAL_CODES = {
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidToken",
    "ExpiredToken",
    "TokenRefreshRequired",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
}
_REGION_CODES = {
    "AuthorizationHeaderMalformed",
    "PermanentRedirect",
    "IllegalLocationConstraintException",
    "InvalidRegion",
}


_WRITES = {"PutObject", "CopyObject", "UploadPartCopy", "DeleteObject", "DeleteObjects"}
#: Fault tests: the process kills itself (SIGKILL) instead of making its (N+1)th write to an
#: object store, so a test can stop a change at every point there is, not only where a timer lands.
FAULT_ENV = "STATECTL_FAULT_AFTER_WRITES"
_writes_made = [0]


def _fault_point() -> None:
    limit = os.environ.get(FAULT_ENV)
    if limit is not None and limit.isdigit() and _writes_made[0] >= int(limit):
        os.kill(os.getpid(), signal.SIGKILL)
    _writes_made[0] += 1


class S3Store:
    """One bucket's objects. Keys are relative to the bucket; a folder is a key prefix ending in /."""

    def __init__(self, bucket: str, settings: S3Settings, scheme: str = "s3a"):
        self.bucket = bucket
        self.settings = settings
        self.scheme = scheme
        self._client = None
        self._lock = threading.RLock()
        #: folder key -> {child name: entry}, for every folder whose full listing is known
        self._folders: dict[str, dict[str, ObjectEntry]] = {}
        #: folder keys listed with everything under them: a folder below one not in _folders is empty
        self._complete: set[str] = set()
        #: folder keys listed on their own (one level)
        self._listed: set[str] = set()
        #: folders that exist as a marker object (``key/``, as S3A writes them), without the slash
        self._markers: set[str] = set()

    # -- plumbing ------------------------------------------------------------------------------
    @property
    def client(self):
        if self._client is None:
            self._client = _make_client(self.settings, self._fail)
        return self._client

    def uri(self, key: str) -> str:
        return f"{self.scheme}://{self.bucket}/{key}" if key else f"{self.scheme}://{self.bucket}"

    def _call(self, operation: str, key: str, fn: Callable):
        if operation in _WRITES:
            _fault_point()
        try:
            return fn()
        except Exception as exc:  # botocore's families, turned into one line each
            raise self._fail(exc, operation, key) from None

    def _fail(self, exc: BaseException, operation: str = "", key: str = "") -> BaseException:
        if isinstance(exc, StatectlError):  # said already (no S3 client installed)
            return exc
        from botocore import exceptions as bx

        where = self.uri(key)
        endpoint = self.settings.endpoint_url or "AWS S3"
        if isinstance(exc, bx.ClientError):
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in ("NoSuchKey", "404", "NotFound") and operation != "HeadBucket":
                return FileNotFoundError(errno.ENOENT, "No such file or directory", where)
            if code == "NoSuchBucket" or (operation == "HeadBucket" and status == 404):
                return OperationalError(
                    f"bucket {self.bucket!r} does not exist at {endpoint} ({where}); create "
                    f"it, or fix the bucket in the checkpoint URL or fs.s3a.endpoint"
                )
            if code in _CREDENTIAL_CODES:
                return OperationalError(
                    f"{endpoint} refused the credentials from {self.settings.credentials_from} "
                    f"({code}) reading {where}; check the access key, secret key and session "
                    f"token"
                )
            if code in _REGION_CODES or status == 301:
                told = exc.response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("x-amz-bucket-region")
                hint = f"it is in {told}; " if told else ""
                return OperationalError(
                    f"bucket {self.bucket!r} is not in region {self.settings.region or 'us-east-1'}"
                    f" ({code or status}): {hint}set fs.s3a.endpoint.region (or AWS_REGION) "
                    f"to the bucket's region"
                )
            if code in ("AccessDenied", "AllAccessDisabled", "403") or status == 403:
                return OperationalError(
                    f"{endpoint} denied {operation} on {where} to the credentials from "
                    f"{self.settings.credentials_from}; give them s3:ListBucket, "
                    f"s3:GetObject (and s3:PutObject, s3:DeleteObject to change it)"
                )
            message = error.get("Message") or code or status
            return OperationalError(f"{operation} on {where} failed: {message}")
        if isinstance(exc, (bx.EndpointConnectionError, bx.ConnectTimeoutError, bx.ConnectionClosedError)):
            return OperationalError(
                f"cannot reach the S3 endpoint {endpoint} (from {self.settings.endpoint_from}) "
                f"for {where}; check the network and fs.s3a.endpoint"
            )
        if isinstance(exc, bx.ReadTimeoutError):
            return OperationalError(
                f"the S3 endpoint {endpoint} did not answer {operation} on {where} in "
                f"{READ_TIMEOUT:.0f} s; check the network and try again"
            )
        if isinstance(exc, bx.NoCredentialsError):
            return OperationalError(
                f"no AWS credentials for {where}: set fs.s3a.access.key and fs.s3a.secret.key "
                f"(--storage-config or the job's spark.conf), AWS_ACCESS_KEY_ID/"
                f"AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
            )
        if isinstance(exc, bx.ProfileNotFound):
            return UsageError(
                f"AWS profile {self.settings.profile!r} (AWS_PROFILE) is not in the AWS config "
                f"files; fix AWS_PROFILE or set keys"
            )
        if isinstance(exc, bx.BotoCoreError):
            return OperationalError(f"{operation} on {where} failed: {exc}")
        return exc

    # -- listings ------------------------------------------------------------------------------
    def _under_complete(self, key: str) -> bool:
        return any(key == c or c == "" or key.startswith(c + "/") for c in self._complete)

    def _folder(self, key: str) -> dict[str, ObjectEntry]:
        if key not in self._folders:
            self._folders[key] = {}
            if key:
                parent, _, name = key.rpartition("/")
                self._folder(parent).setdefault(name, ObjectEntry(name, self.uri(key), True))
        return self._folders[key]

    def _add_object(self, key: str, size: int, mtime: float, etag: str | None = None) -> None:
        if key.endswith("/"):  # a folder marker
            self._folder(key.rstrip("/"))
            self._markers.add(key.rstrip("/"))
            return
        parent, _, name = key.rpartition("/")
        self._folder(parent)[name] = ObjectEntry(name, self.uri(key), False, size, mtime, etag)

    def _pages(self, operation: str, key: str, **kwargs) -> Iterable[dict]:
        token = None
        while True:
            args = dict(Bucket=self.bucket, **kwargs)
            if token:
                args["ContinuationToken"] = token
            page = self._call(operation, key, lambda args=args: self.client.list_objects_v2(**args))
            yield page
            if not page.get("IsTruncated"):
                return
            token = page.get("NextContinuationToken")

    def prefetch(self, key: str) -> None:
        """List everything under ``key`` in one go (one request per 1,000 objects) and keep it:
        every folder below is then answered without a request."""
        with self._lock:
            if self._under_complete(key):
                return
            prefix = f"{key}/" if key else ""
            objects = [
                (obj["Key"], obj.get("Size", 0), obj["LastModified"].timestamp(), _etag(obj))
                for page in self._pages("ListObjectsV2", key, Prefix=prefix)
                for obj in page.get("Contents", [])
            ]
            for stale in [k for k in self._folders if k == key or k.startswith(prefix)]:
                del self._folders[stale]
            for name, size, mtime, etag in objects:
                self._add_object(name, size, mtime, etag)
            self._complete.add(key)

    def sizes_under(self, key: str, max_pages: int) -> tuple[int, int, bool]:
        """(objects, bytes, cut short) of everything under ``key``, from at most ``max_pages``
        listings of 1,000 objects: the cost of a look at a large state stays bounded."""
        prefix = f"{key}/" if key else ""
        files = total = pages = 0
        for page in self._pages("ListObjectsV2", key, Prefix=prefix):
            pages += 1
            for obj in page.get("Contents", []):
                if not obj["Key"].endswith("/"):
                    files += 1
                    total += obj.get("Size", 0)
            if page.get("IsTruncated") and pages >= max_pages:
                return files, total, True
        return files, total, False

    def list_dir(self, key: str) -> dict[str, ObjectEntry]:
        """The children of folder ``key`` (FileNotFoundError when nothing is under it)."""
        with self._lock:
            if key in self._listed or self._under_complete(key):
                if key in self._folders:
                    return self._folders[key]
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", self.uri(key))
            prefix = f"{key}/" if key else ""
            children: dict[str, ObjectEntry] = {}
            seen = False
            for page in self._pages("ListObjectsV2", key, Prefix=prefix, Delimiter="/"):
                for common in page.get("CommonPrefixes", []):
                    name = common["Prefix"][len(prefix) :].rstrip("/")
                    children[name] = ObjectEntry(name, self.uri(common["Prefix"].rstrip("/")), True)
                    seen = True
                for obj in page.get("Contents", []):
                    seen = True
                    if obj["Key"] == prefix:
                        self._markers.add(key)
                        continue
                    name = obj["Key"][len(prefix) :]
                    children[name] = ObjectEntry(
                        name,
                        self.uri(obj["Key"]),
                        False,
                        obj.get("Size", 0),
                        obj["LastModified"].timestamp(),
                        _etag(obj),
                    )
            if not seen and key:
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", self.uri(key))
            folder = self._folder(key)
            for name, entry in children.items():
                folder.setdefault(name, entry)
            self._listed.add(key)
            return folder

    def entry(self, key: str) -> ObjectEntry | None:
        """The entry of ``key`` (file or folder), None when nothing is there: answered from the
        parent's listing, listing it (one request) when it is not known yet."""
        if not key:
            self.check_bucket()
            return ObjectEntry("", self.uri(""), True)
        if key in self._folders and (self._folders[key] or key in self._listed or self._under_complete(key)):
            return ObjectEntry(key.rpartition("/")[2], self.uri(key), True)
        if self._under_complete(key):
            parent_known = key.rpartition("/")[0]
            return self._folders.get(parent_known, {}).get(key.rpartition("/")[2])
        parent, _, name = key.rpartition("/")
        if parent in self._listed or self._under_complete(parent):
            try:
                return self.list_dir(parent).get(name)
            except FileNotFoundError:
                return None
        # The folder above is not known (it may hold thousands of other things): look at the key
        # itself, as a folder (its listing is kept for what comes next), then as an object.
        try:
            self.list_dir(key)
            return ObjectEntry(name, self.uri(key), True)
        except FileNotFoundError:
            pass
        try:
            head = self._call("HeadObject", key, lambda: self.client.head_object(Bucket=self.bucket, Key=key))
        except FileNotFoundError:
            return None
        return ObjectEntry(
            name,
            self.uri(key),
            False,
            head.get("ContentLength", 0),
            head["LastModified"].timestamp() if head.get("LastModified") else 0.0,
            _etag(head),
        )

    def check_bucket(self) -> None:
        self._call("HeadBucket", "", lambda: self.client.head_bucket(Bucket=self.bucket))

    def forget(self) -> None:
        """Drop every listing kept, so the next look sees the store as it is now."""
        with self._lock:
            self._folders.clear()
            self._complete.clear()
            self._listed.clear()
            self._markers.clear()

    # -- objects -------------------------------------------------------------------------------
    def read(self, key: str) -> bytes:
        def get() -> bytes:
            return self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()

        return self._call("GetObject", key, get)

    def write(self, key: str, data: bytes) -> None:
        response = self._call("PutObject", key, lambda: self.client.put_object(Bucket=self.bucket, Key=key, Body=data))
        self._remember(key, len(data), _etag(response))

    def copy(self, source: str, target: str, size: int | None = None) -> None:
        """Server-side: the bytes never come through this machine."""
        where = {"Bucket": self.bucket, "Key": source}
        etag = None
        if size is not None and size >= _COPY_LIMIT:
            self._call("UploadPartCopy", target, lambda: self.client.copy(where, self.bucket, target))
        else:
            response = self._call(
                "CopyObject", target, lambda: self.client.copy_object(Bucket=self.bucket, Key=target, CopySource=where)
            )
            etag = _etag(response.get("CopyObjectResult", {}))
        found = self.entry_if_known(source)
        self._remember(target, found.size if found else (size or 0), etag)

    def delete(self, key: str) -> None:
        self._call("DeleteObject", key, lambda: self.client.delete_object(Bucket=self.bucket, Key=key))
        self._drop(key)

    def delete_many(self, keys: list[str]) -> None:
        """Delete ``keys``, 1,000 per request."""
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = keys[start : start + _DELETE_BATCH]
            response = self._call(
                "DeleteObjects",
                batch[0],
                lambda batch=batch: self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True}
                ),
            )
            errors = response.get("Errors") or []
            if errors:
                first = errors[0]
                raise OperationalError(
                    f"S3 did not delete {len(errors)} of {len(batch)} objects, first "
                    f"{self.uri(first.get('Key', ''))}: {first.get('Message') or first.get('Code')}"
                )
            for key in batch:
                self._drop(key)

    def markers(self, key: str) -> list[str]:
        """The folder markers under ``key`` (keys without their slash), from the listing of it."""
        self.prefetch(key)
        prefix = f"{key}/" if key else ""
        return sorted(m for m in self._markers if m == key or m.startswith(prefix))

    def delete_marker(self, key: str) -> None:
        self._call("DeleteObject", key + "/", lambda: self.client.delete_object(Bucket=self.bucket, Key=key + "/"))
        self._markers.discard(key)

    def put_marker(self, key: str) -> None:
        self._call("PutObject", key + "/", lambda: self.client.put_object(Bucket=self.bucket, Key=key + "/", Body=b""))
        self._markers.add(key)
        self._folder(key)

    def entry_if_known(self, key: str) -> ObjectEntry | None:
        parent, _, name = key.rpartition("/")
        return self._folders.get(parent, {}).get(name)

    def _remember(self, key: str, size: int, etag: str | None = None) -> None:
        import time

        with self._lock:
            parent, _, name = key.rpartition("/")
            # Folders above learn that this one now exists (a folder not listed yet stays unlisted).
            self._folder(parent)[name] = ObjectEntry(name, self.uri(key), False, size, time.time(), etag)

    def _drop(self, key: str) -> None:
        with self._lock:
            parent, _, name = key.rpartition("/")
            folder = self._folders.get(parent)
            if folder is not None:
                folder.pop(name, None)
            # A folder left empty is no folder on an object store.
            while parent and folder is not None and not folder:
                del self._folders[parent]
                self._listed.discard(parent)
                parent, _, name = parent.rpartition("/")
                folder = self._folders.get(parent)
                if folder is not None:
                    folder.pop(name, None)


def _etag(doc: dict) -> str | None:
    value = doc.get("ETag")
    return value.strip('"') if value else None


def _make_client(settings: S3Settings, fail: Callable):
    try:
        import boto3
    except ImportError:
        raise UsageError(f"{S3_EXTRA_NEEDED}: {S3_EXTRA}") from None
    from botocore import UNSIGNED
    from botocore.config import Config

    config = Config(
        connect_timeout=CONNECT_TIMEOUT,
        read_timeout=READ_TIMEOUT,
        retries={"max_attempts": ATTEMPTS, "mode": "standard"},
        s3={"addressing_style": "path" if settings.path_style else "auto"},
        signature_version=UNSIGNED if settings.anonymous else None,
        # Hadoop 3.5 leaves checksums off by default; many S3-compatible stores reject them.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    try:
        session = (
            boto3.Session(profile_name=settings.profile)
            if settings.profile and not settings.access_key
            else boto3.Session()
        )
    except Exception as exc:
        raise fail(exc) from None
    kwargs = {}
    if settings.access_key:
        kwargs = dict(
            aws_access_key_id=settings.access_key,
            aws_secret_access_key=settings.secret_key,
            aws_session_token=settings.session_token,
        )
    return session.client(
        "s3", endpoint_url=settings.endpoint_url, region_name=settings.region or "us-east-1", config=config, **kwargs
    )
