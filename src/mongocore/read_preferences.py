"""Read preferences in pymongo's shape: ``Primary()``, ``SecondaryPreferred(...)``, ...

Seed: server-selection.rst 1.5, "Components of a read preference" (mode, tag_sets,
maxStalenessSeconds). The classes here are the names pymongo users write
(``pymongo.read_preferences``); each is a subclass of mongocore's own
:class:`mongocore.core.selection.read_preference.ReadPreference`, so server selection,
the retry executor and the wire code take them unchanged.

Differences kept on purpose: ``mode`` is mongocore's :class:`Mode` (a string enum,
``"secondary"``) rather than pymongo's integer, and ``tag_sets`` is a tuple of
dicts. Hedged reads (``hedge``) are not supported: MongoDB 8.0 deprecated them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Optional

from mongocore.core.selection.read_preference import DEFAULT_TAG_SETS, Mode, TagSets
from mongocore.core.selection.read_preference import ReadPreference as _SelectionReadPreference
from mongocore.errors import ConfigurationError, InvalidReadPreference

__all__ = [
    "Nearest",
    "Primary",
    "PrimaryPreferred",
    "ReadPreference",
    "Secondary",
    "SecondaryPreferred",
    "expand_read_preference_keyword",
    "from_read_preference",
    "make_read_preference",
    "read_pref_mode_from_name",
    "read_preference_options",
]

#: The keyword spellings (normalized) of the read preference options.
_READ_PREFERENCE_KEY = "readpreference"
_READ_PREFERENCE_PARTS = ("readpreferencetags", "maxstalenessseconds")


# --- argument checks ----------------------------------------------------------------
# A wrong type is a TypeError, as in pymongo; a bad value is an InvalidReadPreference
# (checked here for max_staleness and hedge, by the base class for tag values).


def _check_tag_sets(tag_sets: Optional[TagSets]) -> Optional[list[Mapping[str, Any]]]:
    if tag_sets is None:
        return None
    if isinstance(tag_sets, (Mapping, str, bytes)) or not hasattr(tag_sets, "__iter__"):
        raise TypeError(
            "tag_sets must be a list of tag sets (documents), for example "
            f"[{{'dc': 'ny'}}, {{}}], not {type(tag_sets).__name__} ({tag_sets!r})"
        )
    result = list(tag_sets)
    for tag_set in result:
        if not isinstance(tag_set, Mapping):
            raise TypeError(
                f"each tag set in tag_sets must be a document (a dict), not "
                f"{type(tag_set).__name__} ({tag_set!r})"
            )
    return result


def _check_max_staleness(max_staleness: object) -> Optional[int]:
    if isinstance(max_staleness, bool) or not isinstance(max_staleness, int):
        raise TypeError(
            f"max_staleness must be an integer number of seconds (or -1 for no "
            f"maximum), not {type(max_staleness).__name__} ({max_staleness!r})"
        )
    if max_staleness == -1:
        return None
    if max_staleness <= 0:
        raise InvalidReadPreference(
            f"max_staleness must be a positive number of seconds, or -1 for no "
            f"maximum, not {max_staleness}"
        )
    return max_staleness


def _check_hedge(hedge: object) -> None:
    if hedge is None:
        return
    if not isinstance(hedge, Mapping):
        raise TypeError(f"hedge must be a document (a dict), not {type(hedge).__name__}")
    if hedge:
        raise InvalidReadPreference(
            f"hedge={dict(hedge)!r}: hedged reads are not supported by mongocore "
            "(MongoDB 8.0 deprecated them); leave hedge unset"
        )


class _ReadPreferenceDocument(dict[str, Any]):
    """The ``$readPreference`` document, usable both ways it is spelled.

    pymongo's ``document`` is a property (``rp.document["mode"]``); mongocore's
    selection and wire code call ``rp.document()``. Being a dict that is also
    callable (returning a fresh copy) lets one object serve both.
    """

    def __call__(self) -> dict[str, Any]:
        # A new document each call, tag sets included: callers may change it.
        document = dict(self)
        if "tags" in document:
            document["tags"] = [dict(t) for t in document["tags"]]
        return document


class _ServerMode(_SelectionReadPreference):
    """What the five pymongo read preference classes share."""

    __slots__ = ()

    #: The mode of the class; set by each subclass.
    _MODE: ClassVar[Mode] = Mode.PRIMARY

    def __init__(
        self,
        tag_sets: Optional[TagSets] = None,
        max_staleness: int = -1,
        hedge: Optional[Mapping[str, Any]] = None,
    ) -> None:
        _check_hedge(hedge)
        super().__init__(self._MODE, _check_tag_sets(tag_sets), _check_max_staleness(max_staleness))

    # --- pymongo's attributes ------------------------------------------------------

    @property
    def name(self) -> str:
        """The class name: ``"SecondaryPreferred"``."""
        return type(self).__name__

    @property
    def mongos_mode(self) -> str:
        """The mode as the server spells it: ``"secondaryPreferred"``."""
        return self.mode.value

    @property
    def document(self) -> _ReadPreferenceDocument:
        """The ``$readPreference`` document: ``mode``, and ``tags`` and
        ``maxStalenessSeconds`` when set. Also callable, as mongocore's method is."""
        return _ReadPreferenceDocument(super().document())

    @property
    def max_staleness(self) -> int:
        """maxStalenessSeconds, or -1 for no maximum (pymongo's spelling)."""
        seconds = self.max_staleness_seconds
        return -1 if seconds is None else seconds

    @property
    def min_wire_version(self) -> int:
        """The lowest server wire version that can honour this read preference
        (maxStalenessSeconds needs MongoDB 3.4, wire version 5)."""
        return 0 if self.max_staleness_seconds is None else 5

    @property
    def hedge(self) -> None:
        """Always None: hedged reads are not supported."""
        return None

    # --- identity ------------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._arguments())

    def _arguments(self) -> tuple[Any, ...]:
        return (self._tag_sets_argument(), self.max_staleness)

    def _tag_sets_argument(self) -> Optional[list[dict[str, Any]]]:
        return None if self.tag_sets == DEFAULT_TAG_SETS else [dict(t) for t in self.tag_sets]

    def __repr__(self) -> str:
        return (
            f"{self.name}(tag_sets={self._tag_sets_argument()!r}, "
            f"max_staleness={self.max_staleness!r}, hedge=None)"
        )


class Primary(_ServerMode):
    """Read from the primary only (the default)."""

    __slots__ = ()
    _MODE = Mode.PRIMARY

    def __init__(self) -> None:
        super().__init__()

    def _arguments(self) -> tuple[Any, ...]:
        return ()

    def __repr__(self) -> str:
        return "Primary()"


class PrimaryPreferred(_ServerMode):
    """Read from the primary if there is one, else from a secondary."""

    __slots__ = ()
    _MODE = Mode.PRIMARY_PREFERRED


class Secondary(_ServerMode):
    """Read from a secondary only."""

    __slots__ = ()
    _MODE = Mode.SECONDARY


class SecondaryPreferred(_ServerMode):
    """Read from a secondary if one is eligible, else from the primary."""

    __slots__ = ()
    _MODE = Mode.SECONDARY_PREFERRED


class Nearest(_ServerMode):
    """Read from any eligible member within the latency window."""

    __slots__ = ()
    _MODE = Mode.NEAREST


class ReadPreference:
    """pymongo's namespace of the default read preference of each mode:
    ``ReadPreference.SECONDARY`` is ``Secondary()``.

    mongocore's own read preference class, with the same name, is
    :class:`mongocore.core.selection.read_preference.ReadPreference`.
    """

    PRIMARY: ClassVar[Primary] = Primary()
    PRIMARY_PREFERRED: ClassVar[PrimaryPreferred] = PrimaryPreferred()
    SECONDARY: ClassVar[Secondary] = Secondary()
    SECONDARY_PREFERRED: ClassVar[SecondaryPreferred] = SecondaryPreferred()
    NEAREST: ClassVar[Nearest] = Nearest()


_CLASSES: Mapping[Mode, type[_ServerMode]] = {
    Mode.PRIMARY_PREFERRED: PrimaryPreferred,
    Mode.SECONDARY: Secondary,
    Mode.SECONDARY_PREFERRED: SecondaryPreferred,
    Mode.NEAREST: Nearest,
}


#: The modes in pymongo's order: pymongo numbers them 0 (primary) to 4 (nearest).
_MODES_IN_ORDER = (
    Mode.PRIMARY,
    Mode.PRIMARY_PREFERRED,
    Mode.SECONDARY,
    Mode.SECONDARY_PREFERRED,
    Mode.NEAREST,
)


def read_pref_mode_from_name(name: str) -> int:
    """pymongo's number of a mode given by its name: ``"secondary"`` is 2."""
    try:
        return _MODES_IN_ORDER.index(Mode(name))
    except ValueError:
        raise ValueError(f"{name!r} is not a read preference mode") from None


def make_read_preference(
    mode: Any, tag_sets: Optional[TagSets], max_staleness: int = -1
) -> _ServerMode:
    """The read preference of a mode (pymongo's number, its name or a :class:`Mode`),
    tag sets and max staleness. Primary takes neither tags nor a max staleness."""
    if isinstance(mode, int) and not isinstance(mode, bool) and 0 <= mode < len(_MODES_IN_ORDER):
        mode = _MODES_IN_ORDER[mode]
    try:
        mode = Mode(mode)
    except ValueError:
        raise ValueError(f"{mode!r} is not a read preference mode") from None
    if mode is Mode.PRIMARY:
        if tag_sets not in (None, [{}]):
            raise ConfigurationError("Read preference primary cannot be combined with tags")
        if max_staleness != -1:
            raise ConfigurationError(
                "Read preference primary cannot be combined with maxStalenessSeconds"
            )
        return Primary()
    return _CLASSES[mode](tag_sets, max_staleness)


def from_read_preference(read_preference: _SelectionReadPreference) -> _ServerMode:
    """The pymongo-shaped equivalent of any mongocore read preference (the same
    object if it already is one)."""
    if isinstance(read_preference, _ServerMode):
        return read_preference
    if read_preference.mode is Mode.PRIMARY:
        return ReadPreference.PRIMARY
    cls = _CLASSES[read_preference.mode]
    tag_sets = None if not read_preference.has_tags else list(read_preference.tag_sets)
    seconds = read_preference.max_staleness_seconds
    return cls(tag_sets, -1 if seconds is None else seconds)


def read_preference_options(read_preference: _SelectionReadPreference) -> dict[str, Any]:
    """The client keyword options that stand for ``read_preference``:
    ``readPreference``, ``readPreferenceTags`` and ``maxStalenessSeconds`` (all three,
    so that they replace whatever the connection string said)."""
    if not isinstance(read_preference, _SelectionReadPreference):
        raise TypeError(
            "read_preference must be a read preference such as ReadPreference.SECONDARY "
            f"or Secondary(tag_sets=[...]), not {type(read_preference).__name__}"
        )
    seconds = read_preference.max_staleness_seconds
    return {
        "readPreference": read_preference.mode.value,
        "readPreferenceTags": [dict(t) for t in read_preference.tag_sets]
        if read_preference.has_tags
        else [],
        "maxStalenessSeconds": -1 if seconds is None else seconds,
    }


def expand_read_preference_keyword(options: Mapping[str, Any]) -> dict[str, Any]:
    """Client keyword options with a read preference object (``read_preference=`` or
    ``readPreference=``, e.g. ``SecondaryPreferred(tag_sets=[...])``) replaced by the
    three options it stands for; a mode name is left as it is.

    The object carries its own tag sets and max staleness: giving
    ``readPreferenceTags`` or ``maxStalenessSeconds`` beside it is a
    ConfigurationError.
    """
    result: dict[str, Any] = {}
    given: Optional[tuple[str, _SelectionReadPreference]] = None
    parts = []
    for key, value in options.items():
        normalized = key.replace("_", "").lower()
        if normalized == _READ_PREFERENCE_KEY and isinstance(value, _SelectionReadPreference):
            given = (key, value)
            continue
        if normalized in _READ_PREFERENCE_PARTS:
            parts.append(key)
        result[key] = value
    if given is None:
        return result
    key, read_preference = given
    if parts:
        raise ConfigurationError(
            f"{key} is a read preference object, which carries its own tag sets and "
            f"max staleness: {', '.join(parts)} cannot be given with it"
        )
    result.update(read_preference_options(read_preference))
    return result
