"""Read preferences in pymongo's shape (mongocore.read_preferences).

Seed: server-selection.rst 1.5, "Components of a read preference". The classes must
show pymongo's attributes, take pymongo's arguments, and be mongocore read
preferences that server selection and the wire code take unchanged.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pymongo
import pymongo.read_preferences as pm
import pytest

import mongocore
from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.core.selection.read_preference import Mode, read_preference_for_server
from mongocore.core.selection.read_preference import ReadPreference as SelectionReadPreference
from mongocore.core.selection.selectors import select_servers
from mongocore.errors import InvalidReadPreference
from mongocore.read_preferences import (
    Nearest,
    Primary,
    PrimaryPreferred,
    ReadPreference,
    Secondary,
    SecondaryPreferred,
    from_read_preference,
    read_preference_options,
)

CLASSES = {
    "Primary": (Primary, pm.Primary),
    "PrimaryPreferred": (PrimaryPreferred, pm.PrimaryPreferred),
    "Secondary": (Secondary, pm.Secondary),
    "SecondaryPreferred": (SecondaryPreferred, pm.SecondaryPreferred),
    "Nearest": (Nearest, pm.Nearest),
}
NON_PRIMARY = [name for name in CLASSES if name != "Primary"]

#: Arguments every non-primary class takes, in pymongo's forms.
ARGUMENTS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),
    (([{"dc": "ny"}],), {}),
    ((), {"tag_sets": [{"dc": "ny"}, {}]}),
    ((), {"max_staleness": 120}),
    (([{"dc": "ny", "rack": "1"}], 90), {}),
    ((None, -1), {}),
    ((), {"tag_sets": [{}]}),
]


def _same_attributes(ours: Any, theirs: Any, *, same_repr: bool = True) -> None:
    assert ours.name == theirs.name
    assert ours.mongos_mode == theirs.mongos_mode
    assert ours.document == theirs.document
    assert list(ours.tag_sets) == theirs.tag_sets
    assert ours.max_staleness == theirs.max_staleness
    assert ours.min_wire_version == theirs.min_wire_version
    assert ours.hedge is None
    if same_repr:
        assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", NON_PRIMARY)
@pytest.mark.parametrize(("args", "kwargs"), ARGUMENTS)
def test_attributes_match_pymongo(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    ours_cls, theirs_cls = CLASSES[name]
    # The default tag sets, given explicitly, show as None: they are not kept as given.
    same_repr = kwargs.get("tag_sets") != [{}]
    _same_attributes(ours_cls(*args, **kwargs), theirs_cls(*args, **kwargs), same_repr=same_repr)


def test_primary_matches_pymongo() -> None:
    _same_attributes(Primary(), pm.Primary())
    with pytest.raises(TypeError):
        Primary([{"dc": "ny"}])  # type: ignore[call-arg]


def test_the_namespace_matches_pymongo() -> None:
    for attribute in (
        "PRIMARY",
        "PRIMARY_PREFERRED",
        "SECONDARY",
        "SECONDARY_PREFERRED",
        "NEAREST",
    ):
        ours = getattr(ReadPreference, attribute)
        theirs = getattr(pymongo.ReadPreference, attribute)
        _same_attributes(ours, theirs)
        assert ours.mode is Mode.parse(theirs.mongos_mode)
    assert mongocore.ReadPreference is ReadPreference


def test_modes_are_mongocore_modes() -> None:
    # mongocore's own mode enum, which selection compares by identity.
    assert Primary().mode is Mode.PRIMARY
    assert PrimaryPreferred().mode is Mode.PRIMARY_PREFERRED
    assert Secondary().mode is Mode.SECONDARY
    assert SecondaryPreferred().mode is Mode.SECONDARY_PREFERRED
    assert Nearest().mode is Mode.NEAREST


def test_they_are_mongocore_read_preferences() -> None:
    rp = SecondaryPreferred(tag_sets=[{"dc": "ny"}], max_staleness=120)
    assert isinstance(rp, SelectionReadPreference)
    base = SelectionReadPreference(Mode.SECONDARY_PREFERRED, [{"dc": "ny"}], 120)
    assert rp == base
    assert hash(rp) == hash(base)
    assert rp.max_staleness_seconds == 120
    assert rp.has_tags
    assert rp != SecondaryPreferred([{"dc": "sf"}], max_staleness=120)
    assert Secondary() == SelectionReadPreference(Mode.SECONDARY)
    assert Nearest().max_staleness_seconds is None


def test_document_is_a_property_and_a_method() -> None:
    rp = Secondary([{"dc": "ny"}], max_staleness=100)
    expected = {"mode": "secondary", "tags": [{"dc": "ny"}], "maxStalenessSeconds": 100}
    assert rp.document == expected
    assert rp.document["mode"] == "secondary"
    fresh = rp.document()
    assert fresh == expected
    assert type(fresh) is dict
    fresh["tags"][0]["dc"] = "changed"
    assert rp.document() == expected


def test_what_reaches_the_wire() -> None:
    tagged = SecondaryPreferred([{"dc": "ny"}])
    to_mongos = read_preference_for_server(tagged, TopologyType.SHARDED, ServerType.MONGOS)
    assert to_mongos.document == {"mode": "secondaryPreferred", "tags": [{"dc": "ny"}]}
    assert to_mongos.secondary_ok
    untagged = read_preference_for_server(
        ReadPreference.SECONDARY_PREFERRED, TopologyType.SHARDED, ServerType.MONGOS
    )
    assert untagged.document is None
    assert untagged.secondary_ok
    primary = read_preference_for_server(
        ReadPreference.PRIMARY, TopologyType.SHARDED, ServerType.MONGOS
    )
    assert primary.document is None
    assert not primary.secondary_ok


def _member(host: str, server_type: ServerType, dc: str) -> ServerDescription:
    return ServerDescription(
        Address(host, 27017),
        server_type,
        round_trip_time=0.005,
        tags={"dc": dc},
        last_write_date=100.0,
        last_update_time=100.0,
        max_wire_version=21,
    )


def test_server_selection_takes_them() -> None:
    servers = [
        _member("p", ServerType.RS_PRIMARY, "ny"),
        _member("ny", ServerType.RS_SECONDARY, "ny"),
        _member("sf", ServerType.RS_SECONDARY, "sf"),
    ]
    settings = TopologySettings(seeds=tuple(sd.address for sd in servers))
    td = TopologyDescription(
        TopologyType.REPLICA_SET_WITH_PRIMARY, {sd.address: sd for sd in servers}, settings
    )

    def chosen(rp: SelectionReadPreference) -> set[str]:
        return {sd.address.host for sd in select_servers(td, rp)}

    assert chosen(SecondaryPreferred([{"dc": "sf"}])) == {"sf"}
    assert chosen(SecondaryPreferred(tag_sets=[{"dc": "la"}])) == {"p"}
    assert chosen(Secondary([{"dc": "la"}, {"dc": "ny"}])) == {"ny"}
    assert chosen(ReadPreference.PRIMARY) == {"p"}
    assert chosen(ReadPreference.SECONDARY) == {"ny", "sf"}
    assert chosen(Nearest([{"dc": "ny"}])) == {"p", "ny"}


@pytest.mark.parametrize("name", NON_PRIMARY)
def test_pickle_and_copy_keep_the_class(name: str) -> None:
    cls = CLASSES[name][0]
    rp = cls([{"dc": "ny"}, {}], max_staleness=150)
    for clone in (pickle.loads(pickle.dumps(rp)), copy.copy(rp), copy.deepcopy(rp)):
        assert type(clone) is cls
        assert clone == rp
        assert repr(clone) == repr(rp)
    assert type(pickle.loads(pickle.dumps(Primary()))) is Primary


def test_immutable() -> None:
    rp = Secondary()
    with pytest.raises(AttributeError):
        rp.max_staleness_seconds = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        rp.tag_sets = ({"a": "b"},)  # type: ignore[misc]


# --- bad arguments: TypeError for a wrong type, InvalidReadPreference for a bad value --


TYPE_ERRORS: list[tuple[Callable[[], object], str]] = [
    (lambda: Secondary({"dc": "ny"}), "tag_sets"),  # type: ignore[arg-type]
    (lambda: Secondary("dc:ny"), "tag_sets"),  # type: ignore[arg-type]
    (lambda: Secondary(5), "tag_sets"),  # type: ignore[arg-type]
    (lambda: Secondary(["dc"]), "tag set"),  # type: ignore[list-item]
    (lambda: Nearest(max_staleness="90"), "max_staleness"),  # type: ignore[arg-type]
    (lambda: Nearest(max_staleness=90.5), "max_staleness"),  # type: ignore[arg-type]
    (lambda: Nearest(max_staleness=True), "max_staleness"),
    (lambda: Nearest(max_staleness=None), "max_staleness"),  # type: ignore[arg-type]
    (lambda: Nearest(hedge=1), "hedge"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("build", "named"), TYPE_ERRORS)
def test_wrong_types_are_type_errors_naming_the_argument(
    build: Callable[[], object], named: str
) -> None:
    with pytest.raises(TypeError, match=named):
        build()


VALUE_ERRORS: list[tuple[Callable[[], object], str]] = [
    (lambda: Secondary(max_staleness=0), "max_staleness"),
    (lambda: Secondary(max_staleness=-2), "max_staleness"),
    (lambda: Secondary(hedge={"enabled": True}), "hedge"),
    (lambda: Secondary([{"dc": ["ny"]}]), "dc"),
    (lambda: Secondary([{1: "ny"}]), "tag names"),
]


@pytest.mark.parametrize(("build", "named"), VALUE_ERRORS)
def test_bad_values_are_invalid_read_preferences(build: Callable[[], object], named: str) -> None:
    with pytest.raises(InvalidReadPreference, match=named):
        build()


def test_an_empty_hedge_is_no_hedge() -> None:
    assert Secondary(hedge={}) == Secondary()


# --- conversions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "base",
    [
        SelectionReadPreference(Mode.PRIMARY),
        SelectionReadPreference(Mode.PRIMARY_PREFERRED, [{"dc": "ny"}]),
        SelectionReadPreference(Mode.SECONDARY, None, 120),
        SelectionReadPreference(Mode.SECONDARY_PREFERRED, [{"a": "1"}, {}], 100),
        SelectionReadPreference(Mode.NEAREST),
    ],
)
def test_from_read_preference(base: SelectionReadPreference) -> None:
    converted = from_read_preference(base)
    assert converted == base
    assert (
        converted.name
        == {
            Mode.PRIMARY: "Primary",
            Mode.PRIMARY_PREFERRED: "PrimaryPreferred",
            Mode.SECONDARY: "Secondary",
            Mode.SECONDARY_PREFERRED: "SecondaryPreferred",
            Mode.NEAREST: "Nearest",
        }[base.mode]
    )
    assert from_read_preference(converted) is converted


def test_read_preference_options() -> None:
    assert read_preference_options(Secondary([{"dc": "ny"}, {}], 90)) == {
        "readPreference": "secondary",
        "readPreferenceTags": [{"dc": "ny"}, {}],
        "maxStalenessSeconds": 90,
    }
    assert read_preference_options(ReadPreference.NEAREST) == {
        "readPreference": "nearest",
        "readPreferenceTags": [],
        "maxStalenessSeconds": -1,
    }
    with pytest.raises(TypeError, match="read_preference"):
        read_preference_options("secondary")  # type: ignore[arg-type]
