"""The order in which a collation document's errors are reported (a 7.0 server's parser
reads the fields in order, then looks for the required locale)."""

from __future__ import annotations

import pytest

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import parse_collation


def _error(spec: object) -> CommandError:
    with pytest.raises(CommandError) as info:
        parse_collation(spec)
    return info.value


def test_an_unknown_field_is_reported_before_the_missing_locale() -> None:
    error = _error({"arndom": "wrdo"})
    assert error.code == 40415
    assert error.errmsg == "BSON field 'collation.arndom' is an unknown field."


def test_the_first_unknown_field_in_document_order_is_named() -> None:
    error = _error({"locale": "en", "zeta": 1, "alpha": 2})
    assert (error.code, error.errmsg) == (40415, "BSON field 'collation.zeta' is an unknown field.")


def test_a_missing_locale_alone() -> None:
    error = _error({"strength": 2})
    assert error.code == 40414


def test_simple_with_an_unknown_field_is_the_unknown_field() -> None:
    assert _error({"locale": "simple", "bogus": 1}).code == 40415
