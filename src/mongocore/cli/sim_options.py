"""What ``python -m mongocore sim`` takes besides the deployment's shape.

Users (``--auth USER:PASSWORD``), TLS certificates made at start (``--tls``), member
tags (``--tags``) and compressors (``--compressors``), parsed here; and the
connection string that goes with them, the one the command prints first. Nothing
here imports the simulator (its extra may be missing).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional
from urllib.parse import quote

from mongocore.core.compression import COMPRESSOR_IDS, available_compressors

__all__ = [
    "TlsFiles",
    "client_uri",
    "make_tls_files",
    "parse_compressors",
    "parse_tags",
    "parse_user",
]


def parse_user(text: str) -> tuple[str, str]:
    """``USER:PASSWORD`` (split at the first colon) -> (user, password)."""
    name, colon, password = text.partition(":")
    if not colon or not name:
        raise argparse.ArgumentTypeError(f"expected USER:PASSWORD, got {text!r}")
    return name, password


def _tag_set(text: str, member: int) -> dict[str, str]:
    tags: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise argparse.ArgumentTypeError(
                f"member {member}: expected name=value pairs separated by commas, got {pair!r}"
            )
        tags[key.strip()] = value.strip()
    return tags


def parse_tags(text: str) -> list[dict[str, str]]:
    """Tags of the members in order: ``dc=ny;dc=sf,rack=2;dc=la`` (``;`` between
    members, ``,`` between tags; an empty entry leaves a member untagged), or the JSON
    array ``[{"dc": "ny"}, {"dc": "sf", "rack": "2"}]`` (values are strings, as in a
    replica set config)."""
    if text.lstrip().startswith("["):
        try:
            value: Any = json.loads(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"invalid JSON: {exc}") from None
        if not all(
            isinstance(entry, dict) and all(isinstance(v, str) for v in entry.values())
            for entry in value
        ):
            raise argparse.ArgumentTypeError(
                "expected a JSON array of objects with string values, one per member"
            )
        return [dict(entry) for entry in value]
    return [_tag_set(part, i) for i, part in enumerate(text.split(";"))]


def parse_compressors(text: str) -> tuple[str, ...]:
    """``zstd,zlib,snappy``: the compressors the members offer, each known and installed."""
    names = tuple(filter(None, (n.strip() for n in text.split(","))))
    known = sorted(n for n in COMPRESSOR_IDS if n != "noop")  # noop: what a server never offers
    for name in names:
        if name not in known:
            raise argparse.ArgumentTypeError(
                f"unknown compressor {name!r} (known: {', '.join(known)})"
            )
        if name not in available_compressors():
            raise argparse.ArgumentTypeError(
                f"compressor {name!r} is not installed: pip install 'mongocore[{name}]'"
            )
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"a compressor is named twice in {text!r}")
    return names


@dataclass(frozen=True)
class TlsFiles:
    """The PEM files of a deployment's TLS: a CA made for it, and the server's
    certificate (for ``localhost``, ``127.0.0.1`` and ``::1``) with its key."""

    directory: Path
    ca_file: Path
    #: The certificate chain and the private key in one file (mongod's
    #: ``--tlsCertificateKeyFile``).
    server_file: Path
    #: Whether ``remove()`` deletes the directory (it was made for this run).
    temporary: bool

    def remove(self) -> None:
        if self.temporary:
            shutil.rmtree(self.directory, ignore_errors=True)


def make_tls_files(directory: Optional[str] = None) -> TlsFiles:
    """A new CA and a server certificate it signs, written to ``directory`` (created if
    needed; by default a new temporary directory, deleted by ``remove()``).

    Needs the ``trustme`` package (the ``sim`` extra); ImportError without it.
    """
    import trustme  # noqa: PLC0415 - only --tls needs it (and cryptography under it)

    temporary = directory is None
    where = Path(tempfile.mkdtemp(prefix="mongocore-sim-tls-") if directory is None else directory)
    where.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="mongocore sim", organization_unit_name="test CA")
    server = ca.issue_cert("localhost", "127.0.0.1", "::1")
    files = TlsFiles(where, where / "ca.pem", where / "server.pem", temporary)
    ca.cert_pem.write_to_path(str(files.ca_file))
    server.private_key_and_cert_chain_pem.write_to_path(str(files.server_file))
    return files


def client_uri(
    uri: str,
    *,
    user: Optional[tuple[str, str]] = None,
    ca_file: Optional[Path] = None,
    compressors: Sequence[str] = (),
) -> str:
    """``uri`` (a deployment's, without credentials) with what a client needs to use
    it: the user and password, ``tls=true&tlsCAFile=...``, ``compressors=...``."""
    scheme, _, rest = uri.partition("://")
    hosts, _, tail = rest.partition("/")
    path, _, query = tail.partition("?")
    params = [query] if query else []
    if ca_file is not None:
        params += ["tls=true", "tlsCAFile=" + quote(str(ca_file), safe="/")]
    if compressors:
        params.append("compressors=" + ",".join(compressors))
    credentials = ""
    if user is not None:
        credentials = f"{quote(user[0], safe='')}:{quote(user[1], safe='')}@"
    query = "&".join(params)
    return f"{scheme}://{credentials}{hosts}/{path}" + (f"?{query}" if query else "")
