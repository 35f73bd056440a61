"""The MongoDB handshake's hello: the client metadata and the command itself.

Spec: MongoDB Handshake ("Connection handshake", "Hello Command", "client", "client.env"
with the FaaS and container fields, "Limitations": 512 bytes and how to trim,
"Supporting Wrapping Libraries"); Load Balancer Support ("Connection Establishment":
``hello`` with ``loadBalanced: true``); Wire Compression in Drivers ("MongoDB Handshake
Amendment": the ``compression`` field); Stable API ("Handshake behavior"). The
connection sends it and adopts the reply (:mod:`mongocore.io.connection`).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import bson

from mongocore._version import DRIVER_NAME, __version__
from mongocore.core.stable_api import add_api_fields, requires_op_msg
from mongocore.driver_info import DriverInfo, append_driver_info
from mongocore.io.connection_settings import ConnectionSettings

__all__ = ["MAX_METADATA_SIZE", "client_metadata", "detect_faas", "handshake_command"]

#: "The entire client metadata BSON document MUST NOT exceed 512 bytes."
MAX_METADATA_SIZE = 512

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


def detect_faas(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The FaaS platform ``client.env.name`` names, or None ("client.env", "FaaS").

    Exactly one platform must be detected, except that Vercel wins over AWS Lambda
    (Vercel functions run on Lambda); any other combination detects nothing.
    """
    env = os.environ if environ is None else environ
    found = []
    if env.get("AWS_EXECUTION_ENV", "").startswith("AWS_Lambda_") or env.get(
        "AWS_LAMBDA_RUNTIME_API"
    ):
        found.append("aws.lambda")
    if env.get("FUNCTIONS_WORKER_RUNTIME"):
        found.append("azure.func")
    if env.get("K_SERVICE") or env.get("FUNCTION_NAME"):
        found.append("gcp.func")
    if env.get("VERCEL"):
        found.append("vercel")
    if len(found) == 1:
        return found[0]
    if sorted(found) == ["aws.lambda", "vercel"]:
        return "vercel"
    return None


# Per platform: (field, environment variable, int32?).
_FAAS_FIELDS: Mapping[str, Sequence[tuple[str, str, bool]]] = {
    "aws.lambda": (
        ("region", "AWS_REGION", False),
        ("memory_mb", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", True),
    ),
    "gcp.func": (
        ("memory_mb", "FUNCTION_MEMORY_MB", True),
        ("timeout_sec", "FUNCTION_TIMEOUT_SEC", True),
        ("region", "FUNCTION_REGION", False),
    ),
    "vercel": (("region", "VERCEL_REGION", False),),
    "azure.func": (),
}


def _env_document(environ: Mapping[str, str], dockerenv: str) -> dict[str, Any]:
    env: dict[str, Any] = {}
    name = detect_faas(environ)
    if name is not None:
        env["name"] = name
        for field, variable, is_int in _FAAS_FIELDS[name]:
            raw = environ.get(variable)
            if not raw:
                continue
            if is_int:
                # A value of the wrong type is left out, never an error.
                try:
                    number = int(raw)
                except ValueError:
                    continue
                if _INT32_MIN <= number <= _INT32_MAX:
                    env[field] = number
            else:
                env[field] = raw
    container: dict[str, str] = {}
    if os.path.exists(dockerenv):
        container["runtime"] = "docker"
    if environ.get("KUBERNETES_SERVICE_HOST"):
        container["orchestrator"] = "kubernetes"
    if container:
        env["container"] = container
    return env


@functools.lru_cache(maxsize=1)
def _os_document() -> dict[str, str]:
    import platform  # noqa: PLC0415 - read once per process, at the first handshake

    system = platform.system()
    name = system
    version = platform.release()
    if system == "Linux":
        # No os-release file, or Python < 3.10: the system name will do.
        with contextlib.suppress(OSError, AttributeError):
            name = platform.freedesktop_os_release().get("PRETTY_NAME", system)
    elif system == "Darwin":
        name = "macOS"
        version = platform.mac_ver()[0] or version
    elif system == "Windows":
        version = platform.version() or version
    document = {
        "type": system or "unknown",
        "name": name,
        "architecture": platform.machine(),
        "version": version,
    }
    return {key: value for key, value in document.items() if value}


def _platform_string() -> str:
    import platform  # noqa: PLC0415 - as in _os_document

    return f"{platform.python_implementation()} {platform.python_version()}"


def _metadata_size(document: Mapping[str, Any]) -> int:
    return len(bson.encode(document))


def client_metadata(
    app_name: Optional[str] = None,
    *,
    environ: Optional[Mapping[str, str]] = None,
    dockerenv: str = "/.dockerenv",
    platform_info: Optional[str] = None,
    os_info: Optional[Mapping[str, str]] = None,
    driver_info: Sequence[DriverInfo] = (),
) -> dict[str, Any]:
    """The handshake's ``client`` document, kept within 512 bytes of BSON.

    ``driver_info`` is appended to the driver's name and version and the platform
    ("Supporting Wrapping Libraries"). When the document is too large, the spec's steps
    are applied cumulatively until it fits: keep only ``env.name``; keep only
    ``os.type``; drop ``env``; truncate ``platform``. The other keyword arguments
    replace what is detected (for tests).
    """
    document: dict[str, Any] = {}
    if app_name is not None:
        document["application"] = {"name": app_name}
    document["driver"] = {"name": DRIVER_NAME, "version": __version__}
    document["os"] = dict(_os_document() if os_info is None else os_info)
    document["platform"] = _platform_string() if platform_info is None else platform_info
    document = append_driver_info(document, driver_info)
    env = _env_document(os.environ if environ is None else environ, dockerenv)
    if env:
        document["env"] = env

    if _metadata_size(document) <= MAX_METADATA_SIZE:
        return document
    if "env" in document:
        name = document["env"].get("name")
        if name is None:
            del document["env"]
        else:
            document["env"] = {"name": name}
        if _metadata_size(document) <= MAX_METADATA_SIZE:
            return document
    document["os"] = {"type": document["os"].get("type", "unknown")}
    if _metadata_size(document) <= MAX_METADATA_SIZE:
        return document
    document.pop("env", None)
    overflow = _metadata_size(document) - MAX_METADATA_SIZE
    if overflow > 0:
        encoded = document["platform"].encode("utf-8")
        keep = max(0, len(encoded) - overflow)
        # Cutting may split a character; drop the partial bytes.
        document["platform"] = encoded[:keep].decode("utf-8", "ignore")
    return document


@functools.lru_cache(maxsize=16)
def _cached_metadata(
    app_name: Optional[str], driver_info: tuple[DriverInfo, ...] = ()
) -> dict[str, Any]:
    # The environment is read once per process, like the OS and platform details.
    return client_metadata(app_name, driver_info=driver_info)


def handshake_command(settings: ConnectionSettings) -> dict[str, Any]:
    """The hello that opens a connection (without what an authenticator adds)."""
    command: dict[str, Any]
    if requires_op_msg(settings.server_api, settings.load_balanced):
        command = {"hello": 1, "helloOk": True}
    else:
        command = {"isMaster": 1, "helloOk": True}
    infos = settings.driver_info.snapshot() if settings.driver_info is not None else ()
    command["client"] = _cached_metadata(settings.app_name, infos)
    # Sent only when compressors are configured: the spec's empty list is a SHOULD,
    # and an absent field means the same to every server.
    if settings.compressors:
        command["compression"] = list(settings.compressors)
    if settings.load_balanced:
        command["loadBalanced"] = True
    add_api_fields(command, settings.server_api)
    return command
