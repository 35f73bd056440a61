"""Codec options (mongocore.core.codec): built from the connection string and the client's
keywords as pymongo builds them, inherited by databases and collections and overridden
by get_database/get_collection/with_options; documents re-encoded and re-decoded with
them, and left alone with the defaults.

No server is contacted: the clients here point at a closed port and are closed at once.
"""

from __future__ import annotations

import datetime
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import bson
import pytest
from bson import SON, Binary, Decimal128
from bson.binary import UuidRepresentation
from bson.codec_options import (
    DEFAULT_CODEC_OPTIONS,
    CodecOptions,
    DatetimeConversion,
    TypeCodec,
    TypeRegistry,
)
from bson.raw_bson import RawBSONDocument

from mongocore.api.client import Client
from mongocore.api.database import Database
from mongocore.core import codec
from mongocore.core.options import ClientOptions
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import ConfigurationError, InvalidOperation
from mongocore.read_concern import ReadConcern
from mongocore.write_concern import WriteConcern

NOWHERE = "mongodb://127.0.0.1:9"


class DecimalCodec(TypeCodec):
    python_type = Decimal
    bson_type = Decimal128

    def transform_python(self, value: Any) -> Any:
        return Decimal128(value)

    def transform_bson(self, value: Any) -> Any:
        return value.to_decimal()


@pytest.fixture
def make_client() -> Iterator[Any]:
    clients: list[Client] = []

    def make(uri: str = NOWHERE, **kwargs: Any) -> Client:
        client = Client(uri, **kwargs)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


# --- building the options --------------------------------------------------------------


def test_no_codec_option_gives_the_default_object(make_client: Any) -> None:
    client = make_client()
    assert client.codec_options is DEFAULT_CODEC_OPTIONS
    assert client.shop.orders._decoding is None  # the plain path: no re-decoding


@pytest.mark.parametrize(
    ("text", "constant"),
    [
        ("standard", UuidRepresentation.STANDARD),
        ("pythonLegacy", UuidRepresentation.PYTHON_LEGACY),
        ("javaLegacy", UuidRepresentation.JAVA_LEGACY),
        ("csharpLegacy", UuidRepresentation.CSHARP_LEGACY),
        ("unspecified", UuidRepresentation.UNSPECIFIED),
    ],
)
def test_uuid_representation_from_the_uri_and_the_keyword(
    make_client: Any, text: str, constant: int
) -> None:
    from_uri = make_client(f"{NOWHERE}/?uuidRepresentation={text}")
    from_keyword = make_client(uuidRepresentation=text)
    snake = make_client(uuid_representation=text)
    for client in (from_uri, from_keyword, snake):
        assert client.codec_options.uuid_representation == constant


def test_uri_codec_options(make_client: Any) -> None:
    client = make_client(
        f"{NOWHERE}/?tz_aware=true&unicode_decode_error_handler=replace"
        "&datetime_conversion=DATETIME_AUTO"
    )
    options = client.codec_options
    assert options.tz_aware is True
    assert options.unicode_decode_error_handler == "replace"
    assert options.datetime_conversion is DatetimeConversion.DATETIME_AUTO


def test_keyword_codec_options(make_client: Any) -> None:
    tz = datetime.timezone(datetime.timedelta(hours=2))
    registry = TypeRegistry([DecimalCodec()])
    client = make_client(
        document_class=SON,
        tz_aware=True,
        tzinfo=tz,
        type_registry=registry,
        datetime_conversion=DatetimeConversion.DATETIME_MS,
    )
    options = client.codec_options
    assert options.document_class is SON
    assert options.tzinfo is tz
    assert options.type_registry is registry
    assert options.datetime_conversion is DatetimeConversion.DATETIME_MS


def test_codec_options_keyword_is_the_base_and_other_keywords_override_it(
    make_client: Any,
) -> None:
    base = CodecOptions(document_class=OrderedDict, tz_aware=False)
    client = make_client(codec_options=base, tz_aware=True)
    assert client.codec_options.document_class is OrderedDict
    assert client.codec_options.tz_aware is True
    assert make_client(codec_options=base).codec_options is base


@pytest.mark.parametrize(
    "uri",
    [
        f"{NOWHERE}/?uuidRepresentation=bogus",
        f"{NOWHERE}/?tz_aware=maybe",
        f"{NOWHERE}/?datetime_conversion=NEVER",
        f"{NOWHERE}/?unicode_decode_error_handler=shout",
    ],
)
def test_invalid_uri_values_are_refused(uri: str) -> None:
    with pytest.raises(ConfigurationError):
        ClientOptions.from_uri(uri)


def test_invalid_keyword_values_are_refused(make_client: Any) -> None:
    with pytest.raises(ConfigurationError, match="codec_options"):
        make_client(codec_options={"tz_aware": True})
    with pytest.raises(ConfigurationError, match="type_registry"):
        make_client(type_registry=[DecimalCodec()])
    with pytest.raises(ConfigurationError, match="tzinfo"):
        make_client(tzinfo="UTC")


def test_uuid_representation_is_no_longer_an_unknown_uri_option() -> None:
    options = ClientOptions.from_uri(f"{NOWHERE}/?uuidRepresentation=standard")
    assert options.uuid_representation == "standard"
    assert options.get_option("uuidrepresentation") == "standard"


# --- databases and collections ---------------------------------------------------------


def test_databases_and_collections_inherit_and_override(make_client: Any) -> None:
    client = make_client(uuidRepresentation="standard")
    standard = client.codec_options
    db = client.shop
    assert db.codec_options is standard
    assert db.orders.codec_options is standard
    assert db["orders"]["lines"].codec_options is standard

    son = CodecOptions(document_class=SON)
    assert client.get_database("shop", son).codec_options is son
    assert client.get_database("shop", codec_options=son).orders.codec_options is son
    assert db.get_collection("orders", son).codec_options is son
    assert db.with_options(codec_options=son).codec_options is son
    assert db.orders.with_options(son).codec_options is son
    # with_options keeps what it is not given.
    primary = ReadPreference(Mode.SECONDARY)
    changed = db.orders.with_options(son).with_options(read_preference=primary)
    assert changed.codec_options is son
    assert changed.read_preference is primary


def test_get_database_takes_every_option_positionally(make_client: Any) -> None:
    client = make_client()
    son = CodecOptions(document_class=SON)
    rp = ReadPreference(Mode.SECONDARY_PREFERRED)
    wc = WriteConcern(w="majority")
    rc = ReadConcern("majority")
    db = client.get_database("shop", son, rp, wc, rc)
    assert (db.codec_options, db.read_preference, db.write_concern, db.read_concern) == (
        son,
        rp,
        wc,
        rc,
    )
    coll = db.get_collection("orders", None, None, WriteConcern(w=1))
    assert coll.codec_options is son
    assert coll.write_concern.document == {"w": 1}


def test_get_database_without_a_name_uses_the_connection_strings(make_client: Any) -> None:
    assert make_client(f"{NOWHERE}/shop").get_database().name == "shop"
    assert make_client(f"{NOWHERE}/shop").get_default_database("other").name == "shop"
    assert make_client().get_default_database("other").name == "other"
    with pytest.raises(ConfigurationError, match="No default database"):
        make_client().get_database()


def test_attribute_access(make_client: Any) -> None:
    client = make_client()
    db = client.shop
    assert isinstance(db, Database)
    assert db.name == "shop"
    assert db.client is client
    assert client.admin.name == "admin"
    coll = db.orders
    assert (coll.name, coll.full_name, coll.database) == ("orders", "shop.orders", db)
    sub = coll.lines
    assert (sub.name, sub.full_name) == ("orders.lines", "shop.orders.lines")
    assert coll["lines"] == sub
    with pytest.raises(AttributeError, match=r"client\['_private'\]"):
        _ = client._private
    with pytest.raises(AttributeError, match=r"database\['_private'\]"):
        _ = db._private
    with pytest.raises(AttributeError, match=r"database\['orders._private'\]"):
        _ = coll._private


def test_calling_a_missing_method_says_so(make_client: Any) -> None:
    client = make_client()
    with pytest.raises(TypeError, match="not callable"):
        client.shop.orders.find_and_modify({})


def test_equality_and_hashing(make_client: Any) -> None:
    one = make_client()
    same_seeds = make_client()
    other = make_client("mongodb://127.0.0.1:10")
    assert one == one  # noqa: PLR0124 - equality with itself is the point
    assert one == same_seeds
    assert hash(one) == hash(same_seeds)
    assert one != other
    assert one.shop == one["shop"]
    assert one.shop == same_seeds.shop
    assert one.shop != one.other
    assert one.shop != other.shop
    assert one.shop.orders == one["shop"]["orders"]
    assert one.shop.orders != one.shop.lines
    assert len({one.shop, one["shop"], same_seeds.shop}) == 1
    assert len({one.shop.orders, one.shop["orders"], one.shop.lines}) == 2
    # Options do not take part, as in pymongo.
    assert one.shop.with_options(CodecOptions(tz_aware=True)) == one.shop


def test_a_closed_client_raises_invalid_operation(make_client: Any) -> None:
    client = make_client()
    client.close()
    with pytest.raises(InvalidOperation, match="after close"):
        client.shop.orders.find_one()
    with pytest.raises(InvalidOperation, match="after close"):
        client.start_session()
    with pytest.raises(InvalidOperation, match="after close"):
        _ = client.address


# --- encoding and decoding -------------------------------------------------------------


STANDARD: CodecOptions[Any] = CodecOptions(uuid_representation=UuidRepresentation.STANDARD)


def test_to_wire_turns_a_uuid_into_a_subtype_4_binary() -> None:
    value = uuid.uuid4()
    wire = codec.to_wire({"filter": {"u": value}, "n": [value]}, STANDARD)
    expected = Binary(value.bytes, 4)
    assert wire == {"filter": {"u": expected}, "n": [expected]}
    # What the wire layer then sends is what the user's options would have sent.
    assert bson.encode(wire) == bson.encode({"filter": {"u": value}, "n": [value]}, False, STANDARD)


def test_to_wire_with_unspecified_raises_pymongos_error() -> None:
    with pytest.raises(ValueError, match=r"UuidRepresentation\.UNSPECIFIED"):
        codec.to_wire({"u": uuid.uuid4()}, CodecOptions())


def test_to_wire_applies_type_encoders_and_keeps_out_of_range_dates() -> None:
    options: CodecOptions[Any] = CodecOptions(type_registry=TypeRegistry([DecimalCodec()]))
    far = bson.DatetimeMS(-(10**15))
    wire = codec.to_wire({"d": Decimal("1.5"), "t": far}, options)
    assert wire == {"d": Decimal128("1.5"), "t": far}


def test_to_wire_value_leaves_encoded_bytes_alone() -> None:
    data = bson.encode({"a": 1})
    assert codec.to_wire_value(data, STANDARD) is data
    assert codec.to_wire_value({"a": uuid.UUID(int=1)}, STANDARD) == {
        "a": Binary(uuid.UUID(int=1).bytes, 4)
    }


def test_decoding_with_user_options() -> None:
    value = uuid.uuid4()
    stored = bson.decode(
        bson.encode({"u": value, "t": datetime.datetime(2020, 1, 1)}, False, STANDARD)
    )
    tz = datetime.timezone(datetime.timedelta(hours=-5))
    options: CodecOptions[Any] = CodecOptions(
        document_class=SON,
        tz_aware=True,
        tzinfo=tz,
        uuid_representation=UuidRepresentation.STANDARD,
    )
    decoded = codec.decode_document(stored, options)
    assert isinstance(decoded, SON)
    assert decoded["u"] == value
    assert decoded["t"] == datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    assert decoded["t"].utcoffset() == datetime.timedelta(hours=-5)
    batch = codec.decode_documents([stored, stored], options)
    assert [type(d) for d in batch] == [SON, SON]
    assert codec.decode_values([stored["u"], 1, "x"], options) == [value, 1, "x"]


def test_decoding_to_raw_documents() -> None:
    raw_options: CodecOptions[Any] = CodecOptions(document_class=RawBSONDocument)
    (document,) = codec.decode_documents([{"a": 1}], raw_options)
    assert isinstance(document, RawBSONDocument)
    assert document["a"] == 1


def test_is_default() -> None:
    assert codec.is_default(DEFAULT_CODEC_OPTIONS)
    assert codec.is_default(CodecOptions())
    assert not codec.is_default(STANDARD)
    assert not codec.is_default(CodecOptions(document_class=SON))
