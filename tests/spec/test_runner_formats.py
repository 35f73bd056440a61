"""Each spec runner accepts what its format defines and fails, naming it, on what it
cannot check: made-up cases in no upstream file, one per runner.

The visible files of a suite use some of their format's keys; an upstream file the
project has never seen may use the others. These cases use keys the format defines
that no visible file uses (which must be asserted, not ignored), and keys the format
does not define (which must fail the test with UncheckedKey, never pass unasserted).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from mongocore.core.description.server import ServerDescription
from mongocore.core.description.types import ServerType
from mongocore.core.options import ClientOptions, held_value
from mongocore.errors import WaitQueueTimeoutError
from tests.spec import selection_support, test_auth_legacy, test_cmap, test_sdam, uri_runner
from tests.spec import test_initial_dns_seedlist as dns
from tests.spec.format_keys import UncheckedKey, check_keys
from tests.spec.unified import runner as unified

ENCODED = "mongodb+srv://b*b%40f3tt%3D:%244to%40L8%3DMC@test3.test.build.10gen.cc/mydb%3F?replicaSet=repl0"


def _client(uri: str) -> Any:
    """What the DNS runner reads of a client: its settings (no DNS lookup needed)."""
    return SimpleNamespace(settings=ClientOptions.from_uri(uri))


def test_check_keys_names_every_unknown_key() -> None:
    with pytest.raises(UncheckedKey, match=r"\['x', 'y'\]"):
        check_keys("here", {"a": 1, "x": 2, "y": 3}, ["a"])
    check_keys("here", {"a": 1}, ["a", "b"])


# --- initial DNS seedlist discovery --------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("user", "b*b@f3tt="),
        ("username", "b*b@f3tt="),
        ("password", "$4to@L8=MC"),
        ("auth_database", "mydb?"),
        ("db", "mydb?"),
        ("defaultDatabase", "mydb?"),
    ],
)
def test_dns_parsed_options_of_the_connection_string_components(key: str, value: str) -> None:
    dns._assert_options(_client(ENCODED), {"parsed_options": {key: value}})
    with pytest.raises(AssertionError):
        dns._assert_options(_client(ENCODED), {"parsed_options": {key: value + "x"}})


def test_dns_unknown_parsed_option_is_an_error_naming_it() -> None:
    with pytest.raises(UncheckedKey, match="hostCount"):
        dns._assert_options(_client(ENCODED), {"parsed_options": {"hostCount": 1}})


def test_dns_options_take_any_uri_option_in_the_files_form() -> None:
    client = _client(
        "mongodb+srv://test3.test.build.10gen.cc/?socketTimeoutMS=0&maxStalenessSeconds=-1"
        "&readPreference=secondary&w=majority&readPreferenceTags=dc:ny,rack:1&journal=true"
    )
    dns._assert_options(
        client,
        {
            "options": {
                "socketTimeoutMS": 0,
                "maxStalenessSeconds": -1,
                "readPreference": "secondary",
                "w": "majority",
                "readPreferenceTags": [{"dc": "ny", "rack": "1"}],
                "journal": True,
                "ssl": True,
            }
        },
    )
    with pytest.raises(AssertionError):
        dns._assert_options(client, {"options": {"journal": False}})


def test_dns_option_the_client_does_not_hold_is_an_error_naming_it() -> None:
    for name in ("serverSelectionTryOnce", "madeUpOption"):
        with pytest.raises(UncheckedKey, match=name):
            dns._assert_options(_client(ENCODED), {"options": {name: True}})


def test_dns_unknown_file_field_is_an_error(tmp_path: Any) -> None:
    path = tmp_path / "made-up.json"
    path.write_text('{"uri": "mongodb+srv://test1.test.build.10gen.cc/", "expectedHosts": 2}')
    with pytest.raises(UncheckedKey, match="expectedHosts"):
        dns.run("replica-set", path, None, None)  # type: ignore[arg-type]


def test_held_value_is_what_get_option_returns() -> None:
    options = ClientOptions.from_uri("mongodb://h/?connectTimeoutMS=0&tls=true&localThresholdMS=7")
    assert options.get_option("connectTimeoutMS") is None is held_value("connectTimeoutMS", 0)
    assert options.get_option("ssl") is True is held_value("SSL", "true")
    assert options.get_option("localThresholdMS") == 7 == held_value("localthresholdms", "7")
    with pytest.raises(KeyError):
        held_value("serverSelectionTryOnce", True)


# --- SDAM ---------------------------------------------------------------------------------


def test_sdam_outcome_and_server_keys() -> None:
    harness = test_sdam.Harness("mongodb://a/?directConnection=true")
    outcome = {
        "topologyType": "Single",
        "setName": None,
        "servers": {"a:27017": {"type": "Unknown"}},
    }
    test_sdam.check_outcome(harness, outcome, "phase")
    with pytest.raises(UncheckedKey, match="primaryAddress"):
        test_sdam.check_outcome(harness, dict(outcome, primaryAddress="a:27017"), "phase")
    server = {"type": "Unknown", "roundTripTime": 1}
    with pytest.raises(UncheckedKey, match="roundTripTime"):
        test_sdam.check_outcome(harness, dict(outcome, servers={"a:27017": server}), "phase")


def test_sdam_event_topology_fields_are_asserted() -> None:
    harness = test_sdam.Harness("mongodb://a/?replicaSet=rs")
    described = {"topologyType": "ReplicaSetNoPrimary", "servers": [], "setName": "other"}
    # The set name of an event's description is asserted (it was once ignored).
    with pytest.raises(AssertionError):
        test_sdam.check_event_topology(
            harness.description.__class__.initial(harness.description.settings),
            dict(described, servers=[{"address": "a:27017", "type": "Unknown"}]),
            "event",
        )
    with pytest.raises(UncheckedKey, match="heartbeatFrequencyMS"):
        test_sdam.check_event_topology(
            harness.description, dict(described, heartbeatFrequencyMS=1), "event"
        )


# --- server selection ---------------------------------------------------------------------


def test_selection_unknown_server_field_is_an_error() -> None:
    server = {"address": "a:27017", "type": "RSPrimary", "avg_rtt_ms": 5, "hosts": ["a:27017"]}
    with pytest.raises(UncheckedKey, match="hosts"):
        selection_support.server_description(server)
    with pytest.raises(UncheckedKey, match="hedge"):
        selection_support.read_preference({"read_preference": {"mode": "Nearest", "hedge": {}}})


def test_selection_min_wire_version_is_read() -> None:
    sd = selection_support.server_description(
        {"address": "a:27017", "type": "RSPrimary", "minWireVersion": 6}
    )
    assert isinstance(sd, ServerDescription) and sd.type is ServerType.RS_PRIMARY
    assert sd.min_wire_version == 6


# --- connection string, uri options, auth -------------------------------------------------


def test_uri_runner_unknown_case_key_is_an_error() -> None:
    case = {
        "description": "d",
        "uri": "mongodb://a",
        "valid": True,
        "warning": False,
        "hosts": None,
        "auth": None,
        "options": None,
        "credential": None,
    }
    with pytest.raises(UncheckedKey, match="credential"):
        uri_runner.run("made-up", "d", case, warning_means_error=False)


def test_uri_runner_auth_keys_left_out_are_not_asserted() -> None:
    case = {
        "description": "d",
        "uri": "mongodb://u:p@a/db",
        "valid": True,
        "warning": False,
        "hosts": None,
        "auth": {"username": "u"},
        "options": None,
    }
    uri_runner.run("made-up", "d", case, warning_means_error=False)
    with pytest.raises(AssertionError):
        uri_runner.run("made-up", "d", dict(case, auth={"db": "other"}), warning_means_error=False)


def test_auth_credential_properties_are_a_subset_and_missing_keys_unasserted() -> None:
    case = {
        "description": "d",
        "uri": "mongodb://user@h/?authMechanism=GSSAPI&authMechanismProperties=SERVICE_NAME:other",
        "valid": True,
        "credential": {"username": "user", "mechanism_properties": {"SERVICE_NAME": "other"}},
    }
    test_auth_legacy.test_auth_legacy({"tests": [case]}, case)
    wrong = dict(case, credential={"mechanism_properties": {"SERVICE_NAME": "mongodb"}})
    with pytest.raises(AssertionError):
        test_auth_legacy.test_auth_legacy({"tests": [wrong]}, wrong)
    unknown = dict(case, credential={"username": "user", "cache": True})
    with pytest.raises(UncheckedKey, match="cache"):
        test_auth_legacy.test_auth_legacy({"tests": [unknown]}, unknown)


# --- CMAP ---------------------------------------------------------------------------------


def test_cmap_unknown_operation_field_is_an_error() -> None:
    runner = test_cmap.Runner({"poolOptions": {}})
    try:
        with pytest.raises(UncheckedKey, match="timeoutMS"):
            runner.execute({"name": "checkOut", "timeoutMS": 5})
        with pytest.raises(UncheckedKey, match="checkOutAll"):
            runner.execute({"name": "checkOutAll"})
    finally:
        runner.shut_down()


def test_cmap_run_on_is_evaluated() -> None:
    assert test_cmap.run_on_satisfied({"runOn": [{"minServerVersion": "4.4"}]})
    assert not test_cmap.run_on_satisfied({"runOn": [{"maxServerVersion": "4.2"}]})
    with pytest.raises(UncheckedKey, match="topology"):
        test_cmap.run_on_satisfied({"runOn": [{"topology": ["single"]}]})


def test_cmap_error_keys() -> None:
    with pytest.raises(UncheckedKey, match="code"):
        test_cmap.assert_error(
            WaitQueueTimeoutError("t"), {"type": "WaitQueueTimeoutError", "code": 1}
        )


# --- unified ------------------------------------------------------------------------------


def test_unified_special_operation_arguments() -> None:
    unified.check_special_arguments("wait", {"ms": 1})
    with pytest.raises(ValueError, match="connections"):
        unified.check_special_arguments("assertNumberConnectionsCheckedOut", {"client": "c"})
    with pytest.raises(UncheckedKey, match="readPreference"):
        unified.check_special_arguments(
            "failPoint", {"client": "c", "failPoint": {}, "readPreference": {}}
        )


def test_unified_malformed_operation_is_never_the_expected_client_error() -> None:
    # An insertOne without its document breaks the format: it must fail the test, even
    # where the test expects a client error (which a ValueError of mongocore's is).
    from mongocore.api.client import Client  # noqa: PLC0415
    from tests.spec.unified.entities import InvalidTest  # noqa: PLC0415

    run = unified.TestRun({}, {}, SimpleNamespace())  # type: ignore[arg-type]
    client = Client("mongodb://127.0.0.1:1/", serverSelectionTimeoutMS=1)
    try:
        run.entities.add("coll", client["db"]["coll"])
        operation = {"name": "insertOne", "object": "coll", "arguments": {}}
        for expectation in ({"expectError": {"isClientError": True}}, {}):
            with pytest.raises(InvalidTest, match="'document'"):
                run.execute({**operation, **expectation})
        with pytest.raises(InvalidTest, match="no entity named 'other'"):
            run.execute({**operation, "object": "other"})
    finally:
        client.close()
