"""The handshake's client metadata: contents, FaaS detection, the 512-byte limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bson
import pytest

from mongocore import DRIVER_NAME, __version__
from mongocore.io.handshake import MAX_METADATA_SIZE, client_metadata, detect_faas

NO_DOCKER = "/nonexistent/.dockerenv"
OS = {"type": "Linux", "name": "Example Linux 1.0", "architecture": "x86_64", "version": "6.1"}


def metadata(environ: dict[str, str], **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("dockerenv", NO_DOCKER)
    kwargs.setdefault("os_info", OS)
    kwargs.setdefault("platform_info", "CPython 3.12.1")
    return client_metadata(environ=environ, **kwargs)


def test_required_fields_and_application_name() -> None:
    document = metadata({}, app_name="reporting")
    assert document == {
        "application": {"name": "reporting"},
        "driver": {"name": DRIVER_NAME, "version": __version__},
        "os": OS,
        "platform": "CPython 3.12.1",
    }
    assert "application" not in metadata({})


def test_detected_values_are_present() -> None:
    document = client_metadata(environ={}, dockerenv=NO_DOCKER)
    assert document["os"]["type"]
    assert document["platform"].split()[0] in ("CPython", "PyPy")
    assert len(bson.encode(document)) <= MAX_METADATA_SIZE


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, None),
        ({"AWS_EXECUTION_ENV": "AWS_Lambda_python3.12"}, "aws.lambda"),
        ({"AWS_EXECUTION_ENV": "EC2"}, None),  # must start with AWS_Lambda_
        ({"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001"}, "aws.lambda"),
        ({"FUNCTIONS_WORKER_RUNTIME": "python"}, "azure.func"),
        ({"K_SERVICE": "svc"}, "gcp.func"),
        ({"FUNCTION_NAME": "fn"}, "gcp.func"),
        ({"VERCEL": "1"}, "vercel"),
        ({"VERCEL": "1", "AWS_LAMBDA_RUNTIME_API": "x"}, "vercel"),  # vercel wins over lambda
        ({"FUNCTIONS_WORKER_RUNTIME": "python", "K_SERVICE": "svc"}, None),  # ambiguous
        ({"VERCEL": "1", "AWS_LAMBDA_RUNTIME_API": "x", "K_SERVICE": "svc"}, None),
        ({"VERCEL": ""}, None),  # populated means non-empty
    ],
)
def test_detect_faas(environ: dict[str, str], expected: str) -> None:
    assert detect_faas(environ) == expected


def test_faas_fields_with_types() -> None:
    env = metadata(
        {
            "AWS_EXECUTION_ENV": "AWS_Lambda_java8",
            "AWS_REGION": "us-east-2",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
        }
    )["env"]
    assert env == {"name": "aws.lambda", "region": "us-east-2", "memory_mb": 1024}
    assert isinstance(env["memory_mb"], int)
    env = metadata(
        {
            "FUNCTION_NAME": "f",
            "FUNCTION_MEMORY_MB": "big",  # wrong type: left out, no error
            "FUNCTION_TIMEOUT_SEC": "60",
            "FUNCTION_REGION": "us-central1",
        }
    )["env"]
    assert env == {"name": "gcp.func", "timeout_sec": 60, "region": "us-central1"}
    assert metadata({"VERCEL": "1", "VERCEL_REGION": "cdg1"})["env"] == {
        "name": "vercel",
        "region": "cdg1",
    }
    assert metadata(
        {"AWS_LAMBDA_RUNTIME_API": "x", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "2147483648"}
    )["env"] == {"name": "aws.lambda"}  # beyond int32


def test_container_fields(tmp_path: Path) -> None:
    dockerenv = tmp_path / ".dockerenv"
    dockerenv.touch()
    env = metadata({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, dockerenv=str(dockerenv))["env"]
    assert env == {"container": {"runtime": "docker", "orchestrator": "kubernetes"}}
    both = metadata({"FUNCTIONS_WORKER_RUNTIME": "python", "KUBERNETES_SERVICE_HOST": "h"})
    assert both["env"] == {"name": "azure.func", "container": {"orchestrator": "kubernetes"}}


def test_oversized_env_keeps_only_its_name_first() -> None:
    environ = {"AWS_EXECUTION_ENV": "AWS_Lambda_java8", "AWS_REGION": "r" * 400}
    document = metadata(environ)
    assert document["env"] == {"name": "aws.lambda"}
    assert document["os"] == OS  # nothing else was cut
    assert len(bson.encode(document)) <= MAX_METADATA_SIZE


def test_oversized_os_keeps_only_its_type_next() -> None:
    os_info = {**OS, "name": "n" * 400}
    document = metadata({"AWS_EXECUTION_ENV": "AWS_Lambda_java8"}, os_info=os_info)
    assert document["os"] == {"type": "Linux"}
    assert document["env"] == {"name": "aws.lambda"}
    assert document["platform"] == "CPython 3.12.1"
    assert len(bson.encode(document)) <= MAX_METADATA_SIZE


def test_env_is_dropped_then_platform_truncated() -> None:
    platform_info = "CPython 3.12.1 " + "é" * 300  # multi-byte characters
    document = metadata(
        {"AWS_EXECUTION_ENV": "AWS_Lambda_java8"},
        app_name="a" * 128,
        os_info={**OS, "name": "n" * 100},
        platform_info=platform_info,
    )
    assert "env" not in document
    assert document["os"] == {"type": "Linux"}
    assert platform_info.startswith(document["platform"])
    assert document["platform"].startswith("CPython 3.12.1")
    size = len(bson.encode(document))
    assert MAX_METADATA_SIZE - 2 <= size <= MAX_METADATA_SIZE
    assert document["application"] == {"name": "a" * 128}
