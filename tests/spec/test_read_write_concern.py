"""The official read/write concern suites that need no deployment, one test per case:

- ``read-write-concern/tests/connection-string``: a connection string's ``w``,
  ``wtimeoutMS``, ``journal`` and ``readConcernLevel`` become the client's default
  WriteConcern and ReadConcern (or the string is refused);
- ``read-write-concern/tests/document``: a WriteConcern or ReadConcern built from the
  options is valid or not, sends the expected document, and says whether it is the
  server's default and whether it is acknowledged.

The operation suite (unified format) is tests/spec/unified/test_read_write_concern_operation.py.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import pytest

from mongocore.core.options import ClientOptions
from mongocore.core.uri import parse_uri
from mongocore.errors import ConfigurationError
from mongocore.read_concern import ReadConcern
from mongocore.write_concern import WriteConcern
from tests.spec import deviations, uri_runner
from tests.spec.format_keys import check_keys

CONNECTION_STRING = "read-write-concern/tests/connection-string"
DOCUMENT = "read-write-concern/tests/document"

#: The spec's option names of a write concern, as WriteConcern's arguments.
_WRITE_CONCERN_OPTIONS = {"w": "w", "wtimeoutMS": "wtimeout", "journal": "j"}
#: The keys of each format's case.
_CONNECTION_STRING_KEYS = ("description", "uri", "valid", "warning", "writeConcern", "readConcern")
_DOCUMENT_KEYS = (
    "description",
    "valid",
    "writeConcern",
    "writeConcernDocument",
    "readConcern",
    "readConcernDocument",
    "isServerDefault",
    "isAcknowledged",
)


def _skip_if_not_applicable(suite: str, test_id: str, case: Mapping[str, Any]) -> None:
    entry = deviations.not_applicable(suite, case, case, test_id)
    if entry is not None:
        pytest.skip(" ".join(str(entry["reason"]).split()))


def _write_concern(options: Mapping[str, Any]) -> WriteConcern:
    unknown = set(options) - set(_WRITE_CONCERN_OPTIONS)
    assert not unknown, f"unknown write concern options {sorted(unknown)}"
    return WriteConcern(**{_WRITE_CONCERN_OPTIONS[k]: v for k, v in options.items()})


def _read_concern(options: Mapping[str, Any]) -> ReadConcern:
    unknown = set(options) - {"level"}
    assert not unknown, f"unknown read concern options {sorted(unknown)}"
    return ReadConcern(options.get("level"))


def _client_concerns(uri: str) -> tuple[WriteConcern, ReadConcern]:
    """The default concerns a client created from ``uri`` has (as Client builds them)."""
    options = ClientOptions.from_uri(uri)
    write_concern = WriteConcern.from_options(options.w, options.w_timeout_ms, options.journal)
    return write_concern, ReadConcern(options.read_concern_level)


@pytest.mark.parametrize(("test_id", "case"), uri_runner.cases(CONNECTION_STRING))
def test_connection_string(test_id: str, case: dict[str, Any]) -> None:
    if case is None:
        pytest.skip("spec suite not available")
    check_keys(test_id, case, _CONNECTION_STRING_KEYS)
    _skip_if_not_applicable(CONNECTION_STRING, test_id, case)
    uri = case["uri"]
    if not case["valid"]:
        with pytest.raises(ConfigurationError):
            _client_concerns(uri)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parsed = parse_uri(uri, warn=True)
    if case.get("warning") is not None:
        assert bool(parsed.warnings or caught) == case["warning"], parsed.warnings
    write_concern, read_concern = _client_concerns(uri)
    if "writeConcern" in case:
        assert write_concern == _write_concern(case["writeConcern"])
        assert write_concern.is_server_default == (not case["writeConcern"])
    if "readConcern" in case:
        assert read_concern == _read_concern(case["readConcern"])
        assert read_concern.document == dict(case["readConcern"])


@pytest.mark.parametrize(("test_id", "case"), uri_runner.cases(DOCUMENT))
def test_document(test_id: str, case: dict[str, Any]) -> None:
    if case is None:
        pytest.skip("spec suite not available")
    check_keys(test_id, case, _DOCUMENT_KEYS)
    _skip_if_not_applicable(DOCUMENT, test_id, case)
    if "writeConcern" in case:
        if not case["valid"]:
            with pytest.raises(ConfigurationError):
                _write_concern(case["writeConcern"])
            return
        write_concern = _write_concern(case["writeConcern"])
        assert write_concern.document == case["writeConcernDocument"]
        assert write_concern.is_server_default == case["isServerDefault"]
        assert write_concern.acknowledged == case["isAcknowledged"]
        return
    assert "readConcern" in case, f"a case with neither readConcern nor writeConcern: {case}"
    if not case["valid"]:
        with pytest.raises(ConfigurationError):
            _read_concern(case["readConcern"])
        return
    read_concern = _read_concern(case["readConcern"])
    assert read_concern.document == case["readConcernDocument"]
    assert (not read_concern.document) == case["isServerDefault"]
