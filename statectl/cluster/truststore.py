"""JKS and PKCS12 trust stores as the PEM file librdkafka reads, converted once with the JDK's keytool.

A trust store holds only public certificates, so the PEM copy is no secret; it is cached by the
store's path, size and modification time so later commands do not start keytool again.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

from statectl.errors import ConfigError
from statectl.paths import ONE_SHOT_JVM_OPTIONS, cache_root, jdk_tool

_CERT = re.compile(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.DOTALL)


def _keytool() -> str:
    found = jdk_tool("keytool")
    if found is None:
        raise ConfigError(
            [
                "reading a JKS or PKCS12 trust store needs the JDK's keytool, which is not on PATH; "
                "give a PEM file (ssl.truststore.type=PEM) instead"
            ]
        )
    return str(found)


def pem_from_store(path: Path, store_type: str, password: str | None) -> Path:
    """A PEM file with every certificate of the trust store at ``path``."""
    stat = path.stat()
    digest = hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:20]
    target = cache_root() / "truststores" / f"{digest}.pem"
    if target.exists():
        return target
    cmd = [
        _keytool(),
        *(f"-J{o}" for o in ONE_SHOT_JVM_OPTIONS),
        "-list",
        "-rfc",
        "-keystore",
        str(path),
        "-storetype",
        store_type,
    ]
    # keytool reads the password from the environment variable named after :env, so it is not on
    # a command line other users could see.
    env = dict(os.environ)
    if password:
        env["STATECTL_STOREPASS"] = password
        cmd += ["-storepass:env", "STATECTL_STOREPASS"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
    certs = _CERT.findall(done.stdout)
    if done.returncode != 0 or not certs:
        reason = (done.stdout + done.stderr).strip().splitlines()
        # keytool exits 0 with no certificates (and a banner of asterisks as its last line) when a
        # PKCS12 store's certificates need the password it was not given.
        why = next((ln for ln in reason if "error" in ln.lower()), None) or (
            reason[-1]
            if done.returncode != 0 and reason
            else "it holds no certificate keytool could read"
            + ("" if password else " (is ssl.truststore.password missing?)")
        )
        raise ConfigError([f"cannot read the trust store {path}: {why.removeprefix('keytool error: ')}"])
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text("\n".join(certs) + "\n")
    os.replace(tmp, target)
    return target
