"""Collations: language rules for comparing strings, under pymongo's module name
(``pymongo.collation``).

``Collation("fr", strength=CollationStrength.SECONDARY)`` is accepted wherever a
method takes ``collation=``, as is its document (``{"locale": "fr", "strength": 2}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, Union

from mongocore.common import validate_integer, validate_string
from mongocore.write_concern import validate_boolean

__all__ = [
    "Collation",
    "CollationAlternate",
    "CollationCaseFirst",
    "CollationMaxVariable",
    "CollationStrength",
    "validate_collation_or_none",
]


class CollationStrength:
    """The values of ``strength``: how many levels of difference count."""

    PRIMARY = 1
    """Base characters only."""
    SECONDARY = 2
    """Also accents."""
    TERTIARY = 3
    """Also case (the default)."""
    QUATERNARY = 4
    """Also punctuation, when ``alternate`` is shifted."""
    IDENTICAL = 5
    """Also code points: the strings are identical."""


class CollationAlternate:
    """The values of ``alternate``: whether spaces and punctuation are base characters."""

    NON_IGNORABLE = "non-ignorable"
    """They are (the default)."""
    SHIFTED = "shifted"
    """They are not (they count only at strength QUATERNARY or above)."""


class CollationMaxVariable:
    """The values of ``maxVariable``: what ``alternate="shifted"`` ignores."""

    PUNCT = "punct"
    """Spaces and punctuation (the default)."""
    SPACE = "space"
    """Spaces only."""


class CollationCaseFirst:
    """The values of ``caseFirst``: which case sorts first."""

    UPPER = "upper"
    LOWER = "lower"
    OFF = "off"
    """The locale's order (the default)."""


#: Collation's keyword -> how its value is checked (a wrong type is a TypeError).
_CHECKS = {
    "caseLevel": validate_boolean,
    "caseFirst": validate_string,
    "strength": validate_integer,
    "numericOrdering": validate_boolean,
    "alternate": validate_string,
    "maxVariable": validate_string,
    "normalization": validate_boolean,
    "backwards": validate_boolean,
}


class Collation:
    """A collation: ``locale`` (an ICU locale id such as ``"en_US"``) and the options
    of the server's collation document, each left out when None. Other keywords go
    into the document as they are. Immutable; equal when the documents are."""

    __slots__ = ("_document",)

    def __init__(  # noqa: PLR0917 - positional as pymongo's
        self,
        locale: str,
        caseLevel: Optional[bool] = None,
        caseFirst: Optional[str] = None,
        strength: Optional[int] = None,
        numericOrdering: Optional[bool] = None,
        alternate: Optional[str] = None,
        maxVariable: Optional[str] = None,
        normalization: Optional[bool] = None,
        backwards: Optional[bool] = None,
        **kwargs: Any,
    ) -> None:
        document: dict[str, Any] = {"locale": validate_string("locale", locale)}
        given = {
            "caseLevel": caseLevel,
            "caseFirst": caseFirst,
            "strength": strength,
            "numericOrdering": numericOrdering,
            "alternate": alternate,
            "maxVariable": maxVariable,
            "normalization": normalization,
            "backwards": backwards,
        }
        for name, value in given.items():
            if value is not None:
                document[name] = _CHECKS[name](name, value)
        document.update(kwargs)
        self._document = document

    @property
    def document(self) -> dict[str, Any]:
        """The collation document (a copy: changing it does not change the Collation)."""
        return dict(self._document)

    def __repr__(self) -> str:
        return "Collation({})".format(", ".join(f"{k}={v!r}" for k, v in self._document.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Collation):
            return self._document == other._document
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]  # equal by a mutable document, as pymongo's


def validate_collation_or_none(
    value: Union[Mapping[str, Any], Collation, None],
) -> Optional[dict[str, Any]]:
    """The collation document of a Collation or a dict; None stays None."""
    if value is None:
        return None
    if isinstance(value, Collation):
        return value.document
    if isinstance(value, dict):
        return value
    raise TypeError("collation must be a dict, an instance of collation.Collation, or None")
