"""Collations of a simulated mongod (MongoDB manual, "Collation"; the server's ICU collator).

A server compares strings through ICU when an operation, an index or a collection
carries a collation. The simulator implements the collations whose ICU behaviour it
can reproduce exactly enough to never answer wrongly: the root collation of the
Unicode Collation Algorithm (pyuca's DUCET tables, which ICU's root collation follows)
for the locales whose CLDR collation is the root one, at strengths 1 (base letters),
2 (and diacritics), 3 (and case; the default), 4 (the same as 3 with the default
``alternate: "non-ignorable"``) and 5 (and code points), with ``backwards`` (French
secondary ordering). Options that change ICU's algorithm in ways not reproduced here
(``caseLevel``, ``caseFirst``, ``numericOrdering``, ``alternate: "shifted"``) and the
locales with their own tailoring are refused with NotImplemented (238) rather than
answered with a binary comparison.

A :class:`Collation` gives each string its collation key; the engine compares,
sorts, groups and indexes strings by those keys.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from pyuca.collator import Collator_8_0_0

from mongocore.sim.codes import CommandError

__all__ = ["Collation", "parse_collation"]

#: ICU's version in a 7.0 server's collation specs.
ICU_VERSION = "57.1"

# Locales whose CLDR collation is the root collation (no tailoring); a region or
# variant suffix (en_US) keeps the root collation, except en_US_POSIX.
_ROOT_LANGUAGES = frozenset({"en", "de", "fr", "it", "nl", "pt", "id", "ms"})
_LOCALE = re.compile(r"^([a-z]{2,3})(?:_([A-Z]{2}))?$")
_BOOLEAN_OPTIONS = ("caseLevel", "numericOrdering", "normalization", "backwards")
_FIELDS = frozenset(
    {"locale", "strength", "caseFirst", "alternate", "maxVariable", "version", *_BOOLEAN_OPTIONS}
)


@functools.lru_cache(maxsize=1)
def _collator() -> Any:
    # Unicode 8.0's table: the version ICU 57 (a 7.0 server's) implements.
    return Collator_8_0_0()


@dataclass(frozen=True)
class Collation:
    """A parsed, supported collation: everything a comparison needs."""

    locale: str
    strength: int = 3
    backwards: bool = False
    normalization: bool = False
    max_variable: str = "punct"

    def key(self, text: str) -> tuple[int, ...]:
        """The collation key of ``text``: equal keys compare equal, and keys order as ICU."""
        return _key(self, text)

    def spec(self) -> dict[str, Any]:
        """The complete collation document a 7.0 server reports (listIndexes, listCollections)."""
        return {
            "locale": self.locale,
            "caseLevel": False,
            "caseFirst": "off",
            "strength": self.strength,
            "numericOrdering": False,
            "alternate": "non-ignorable",
            "maxVariable": self.max_variable,
            "normalization": self.normalization,
            "backwards": self.backwards,
            "version": ICU_VERSION,
        }


@functools.lru_cache(maxsize=65536)
def _key(collation: Collation, text: str) -> tuple[int, ...]:
    normalized = unicodedata.normalize("NFD", text)
    elements = _collator().collation_elements(normalized)
    key: list[int] = []
    for level in range(min(collation.strength, 3)):
        weights = [element[level] for element in elements if element[level]]
        if level == 1 and collation.backwards:
            weights.reverse()
        key.extend(weights)
        key.append(0)  # a level separator: shorter strings sort first at each level
    if collation.strength == 5:
        key.extend(ord(c) for c in normalized)
    return tuple(key)


def _unsupported(what: str) -> CommandError:
    return CommandError(238, f"collation {what} is not supported by the simulator")


def parse_collation(value: Any) -> Optional[Collation]:
    """Validate a collation document as a 7.0 server does; None means the simple
    (binary) collation. Raises the server's parse errors, or NotImplemented (238) for
    a valid collation the simulator cannot honour."""
    if not isinstance(value, Mapping):
        raise CommandError(14, "BSON field 'collation' is the wrong type, expected object")
    # A server's parser reads the fields in order, refusing the first unknown one,
    # and looks for the required locale after the last.
    unknown = [name for name in value if name not in _FIELDS]
    if unknown:
        raise CommandError(40415, f"BSON field 'collation.{unknown[0]}' is an unknown field.")
    if "locale" not in value:
        raise CommandError(40414, "BSON field 'locale' is missing but a required field")
    locale = value["locale"]
    if not isinstance(locale, str):
        raise CommandError(14, "BSON field 'locale' is the wrong type, expected string")
    if locale == "simple":
        if len(value) > 1:
            raise CommandError(
                9, f"If locale=simple, no other fields should be present in: {dict(value)}"
            )
        return None
    if not locale:
        raise CommandError(2, f"Field 'locale' cannot be the empty string in: {dict(value)}")
    strength = value.get("strength", 3)
    if isinstance(strength, bool) or not isinstance(strength, (int, float)):
        raise CommandError(14, "BSON field 'strength' is the wrong type, expected int")
    if strength not in (1, 2, 3, 4, 5):
        raise CommandError(9, f"Field 'strength' must be an integer 1 through 5. Got: {strength}")
    for option in _BOOLEAN_OPTIONS:
        if option in value and not isinstance(value[option], bool):
            raise CommandError(14, f"BSON field '{option}' is the wrong type, expected bool")
    case_first = value.get("caseFirst", "off")
    if case_first not in ("upper", "lower", "off"):
        raise CommandError(
            9, f"Field 'caseFirst' must be 'upper', 'lower', or 'off'. Got: {case_first}"
        )
    alternate = value.get("alternate", "non-ignorable")
    if alternate not in ("non-ignorable", "shifted"):
        raise CommandError(
            9, f"Field 'alternate' must be 'non-ignorable' or 'shifted'. Got: {alternate}"
        )
    max_variable = value.get("maxVariable", "punct")
    if max_variable not in ("punct", "space"):
        raise CommandError(
            9, f"Field 'maxVariable' must be 'punct' or 'space'. Got: {max_variable}"
        )
    backwards = bool(value.get("backwards", False))
    if backwards and strength == 1:
        raise CommandError(2, "'backwards' is invalid with 'strength' of 1")
    if case_first != "off" and not value.get("caseLevel") and strength < 3:
        raise CommandError(
            2, "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2"
        )
    version = value.get("version")
    if version is not None and version != ICU_VERSION:
        raise CommandError(
            161,
            f"Requested collation version {version} but the only available collator version"
            f" was {ICU_VERSION}",
        )
    match = _LOCALE.match(locale)
    if match is None or match.group(1) not in _ROOT_LANGUAGES or locale == "en_US_POSIX":
        raise _unsupported(f"locale '{locale}' (only root-collation locales such as 'en')")
    if value.get("caseLevel"):
        raise _unsupported("option caseLevel: true")
    if case_first != "off":
        raise _unsupported(f"option caseFirst: '{case_first}'")
    if value.get("numericOrdering"):
        raise _unsupported("option numericOrdering: true")
    if alternate != "non-ignorable":
        raise _unsupported("option alternate: 'shifted'")
    return Collation(
        locale=locale,
        strength=int(strength),
        backwards=backwards,
        normalization=bool(value.get("normalization", False)),
        max_variable=str(max_variable),
    )
