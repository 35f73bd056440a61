"""Text indexes (MongoDB manual, "Text Indexes", "Assign Weights to Text Search
Results", "Specify the Default Language"; the server's FTSSpec), registered in
:data:`~mongocore.sim.engine.indexes.KINDS` under ``"text"``.

A text index has version 3 (``textIndexVersion``), its fields' ``weights`` (1 unless
given; ``"$**"`` indexes every string), a ``default_language`` (english) and a
``language_override`` field (``language``) through which a document names its own
language. listIndexes shows it as the server stores it: the text fields replaced in
the key by ``_fts: "text", _ftsx: 1`` (other fields before or after them kept), the
weights by field name, the options above (:meth:`TextIndex.listing`). A spec the
server refuses is refused with its words (CannotCreateIndex, 67); a document whose
language override is not a string (17261) or not a language (17262) cannot be stored.

:meth:`TextIndex.term_scores` is the score of each term in a document as the server
computes it (FTSSpec::scoreDocument): for each indexed string, with ``n`` its tokens
and a term occurring ``c`` times, the term's frequency ``1 + 1/2 + ... + 1/2^(c-1)``
times ``(0.5 * c / n + 0.5)`` times the field's weight, times 1.1 when the term is the
whole string; a term's scores over strings and fields add up.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.indexes import KINDS, Index, IndexSpec, Key
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.text_language import Language, language, language_name, tokens
from mongocore.sim.engine.values import is_number, numeric_value

__all__ = ["TEXT_INDEX_VERSION", "TextIndex", "text_index_of"]

TEXT = "text"
TEXT_INDEX_VERSION = 3
WILDCARD = "$**"
_MAX_WORD_WEIGHT = 100_000


def _cannot(message: str) -> CommandError:
    return CommandError(67, message)


def fix_spec(document: Mapping[str, Any]) -> dict[str, Any]:
    """A text index's spec as the server stores it (FTSSpec::fixSpec), or its error."""
    key = document.get("key")
    assert isinstance(key, Mapping)
    weights: dict[str, int] = {}
    pattern: dict[str, Any] = {}
    fixed = "_fts" in key
    for raw_name, value in key.items():
        name = str(raw_name)
        if name == "_fts":
            if value != TEXT:
                raise _cannot('expecting _fts:"text"')
            pattern[name] = value
        elif name == "_ftsx":
            if not is_number(value) or numeric_value(value) != 1:
                raise _cannot("expecting _ftsx:1")
            pattern[name] = value
        elif value == TEXT:
            if "_fts" not in pattern:
                pattern["_fts"] = TEXT
                pattern["_ftsx"] = 1
            weights[name] = 1
        else:
            if not is_number(value) or int(numeric_value(value)) not in (1, -1):
                raise _cannot("expected value 1 or -1 for non-text key in compound index")
            pattern[name] = value
        if name in ("_fts", "_ftsx") and not fixed:
            raise _cannot("text index with reserved fields _fts/_ftsx not allowed")
    names = list(key)
    kinds = ["text" if (v == TEXT or n in ("_fts", "_ftsx")) else "other" for n, v in key.items()]
    first = kinds.index("text")
    last = len(kinds) - 1 - kinds[::-1].index("text")
    if "other" in kinds[first : last + 1]:
        raise _cannot("'text' fields in index must all be adjacent")
    for name in names[:first] + names[last + 1 :]:
        if name in ("_fts", "_ftsx"):
            raise _cannot("text index with reserved fields _fts/_ftsx not allowed")
    given = document.get("weights")
    if isinstance(given, Mapping):
        for name, value in given.items():
            if not is_number(value):
                raise _cannot("weight for text index needs numeric type")
            weights[str(name)] = int(numeric_value(value))
    elif given == WILDCARD:
        weights[WILDCARD] = 1
    elif given is not None:
        raise _cannot("text index option 'weights' must be an object")
    if not weights:
        raise _cannot("text index option 'weights' must specify fields or the wildcard")
    for name, weight in weights.items():
        if not 0 < weight < _MAX_WORD_WEIGHT:
            raise _cannot(
                f"text index weight must be in the exclusive interval (0,{_MAX_WORD_WEIGHT})"
                f" but found: {weight}"
            )
        if name != WILDCARD:
            parts = name.split(".")
            if any(not part for part in parts):
                raise _cannot("weight cannot have empty path component")
            if any(part.startswith("$") for part in parts):
                raise _cannot("weight cannot have path component with $ prefix")
    default_language = document.get("default_language", "english")
    if not isinstance(default_language, str):
        raise _cannot("default_language needs a string type")
    if language_name(default_language) is None:
        raise _cannot("default_language is not valid")
    override = document.get("language_override", "language")
    if not isinstance(override, str):
        raise _cannot("language_override must be a string")
    if not override or override.startswith("$") or "." in override:
        raise _cannot("language_override is not valid")
    version = document.get("textIndexVersion", TEXT_INDEX_VERSION)
    if not is_number(version):
        raise _cannot("text index option 'textIndexVersion' must be a number")
    if numeric_value(version) not in (2, 3):
        raise _cannot(f"bad textIndexVersion: {int(numeric_value(version))}")
    if numeric_value(version) == 2:
        raise CommandError(238, "text index version 2 is not implemented by the simulator")
    out: dict[str, Any] = {}
    for option, value in document.items():
        if option == "key":
            out["key"] = pattern
        elif option == "weights":
            out["weights"] = dict(sorted(weights.items()))
        elif option == "default_language":
            out[option] = default_language
        elif option == "language_override":
            out[option] = override
        elif option != "textIndexVersion":
            out[str(option)] = value
    out.setdefault("weights", dict(sorted(weights.items())))
    out.setdefault("default_language", default_language)
    out.setdefault("language_override", override)
    out["textIndexVersion"] = TEXT_INDEX_VERSION
    return out


def _document_of(spec: IndexSpec) -> dict[str, Any]:
    return {"key": dict(spec.key), "name": spec.name, **dict(spec.options)}


class TextIndex(Index):
    """A text index (module doc)."""

    def __init__(self, spec: IndexSpec, namespace: str) -> None:
        fixed = fix_spec(_document_of(spec))
        if spec.unique:
            raise CommandError(238, "unique text indexes are not implemented by the simulator")
        super().__init__(spec, namespace)
        self.weights: dict[str, int] = dict(fixed["weights"])
        self.wildcard = WILDCARD in self.weights
        self.default_language = language(str(fixed["default_language"]))
        self.language_override = str(fixed["language_override"])

    @classmethod
    def listing(cls, document: Mapping[str, Any]) -> dict[str, Any]:
        return fix_spec(document)

    # -- documents --------------------------------------------------------------------

    def language_of(self, doc: Mapping[str, Any], default: Optional[Language] = None) -> Language:
        """The language of a document (or embedded document): its override field's."""
        fallback = default or self.default_language
        if self.language_override not in doc:
            return fallback
        value = doc[self.language_override]
        if not isinstance(value, str):
            raise CommandError(
                17261, "found language override field in document with non-string type"
            )
        if language_name(value) is None:
            raise CommandError(17262, f"language override unsupported: {value}")
        return language(value)

    def strings(self, doc: Mapping[str, Any]) -> Iterator[tuple[str, float, Language]]:
        """Every indexed string of ``doc``, with its field's weight and its language."""
        top = self.language_of(doc)
        if self.wildcard:
            yield from self._all_strings(doc, "", top)
            return
        for path, weight in self.weights.items():
            yield from self._strings_at(doc, path.split("."), weight, top)

    def _strings_at(
        self, value: Any, parts: list[str], weight: float, lang: Language
    ) -> Iterator[tuple[str, float, Language]]:
        if not parts:
            if isinstance(value, str):
                yield value, weight, lang
            elif isinstance(value, list):
                for element in value:
                    if isinstance(element, str):
                        yield element, weight, lang
            return
        if isinstance(value, Mapping):
            if parts[0] in value:
                inner = self.language_of(value, lang) if value is not None else lang
                yield from self._strings_at(value[parts[0]], parts[1:], weight, inner)
        elif isinstance(value, list):
            for element in value:
                if isinstance(element, Mapping):
                    yield from self._strings_at(element, parts, weight, lang)

    def _all_strings(
        self, value: Any, prefix: str, lang: Language
    ) -> Iterator[tuple[str, float, Language]]:
        if isinstance(value, Mapping):
            inner = self.language_of(value, lang)
            for name, child in value.items():
                if name == self.language_override:
                    continue
                path = prefix + str(name)
                weight = self.weights.get(path, self.weights[WILDCARD])
                if isinstance(child, str):
                    yield child, weight, inner
                else:
                    yield from self._all_strings_in(child, path, weight, inner)
        elif isinstance(value, list):
            for element in value:
                yield from self._all_strings(element, prefix, lang)

    def _all_strings_in(
        self, value: Any, path: str, weight: float, lang: Language
    ) -> Iterator[tuple[str, float, Language]]:
        if isinstance(value, list):
            for element in value:
                if isinstance(element, str):
                    yield element, weight, lang
                elif isinstance(element, (Mapping, list)):
                    yield from self._all_strings_in(element, path, weight, lang)
        elif isinstance(value, Mapping):
            yield from self._all_strings(value, path + ".", lang)

    def term_scores(self, doc: Mapping[str, Any]) -> dict[str, float]:
        """Each term of ``doc`` and its score (module doc)."""
        scores: dict[str, float] = {}
        for text, weight, lang in self.strings(doc):
            counts: dict[str, int] = {}
            order: list[str] = []
            for term in tokens(text, lang):
                if term not in counts:
                    order.append(term)
                    counts[term] = 0
                counts[term] += 1
            total = sum(counts.values())
            for term in order:
                count = counts[term]
                frequency = sum(1 / 2**k for k in range(count))
                coefficient = 0.5 * count / total + 0.5
                adjustment = 1.1 if len(text) == len(term) and text.lower() == term.lower() else 1.0
                scores[term] = scores.get(term, 0.0) + weight * frequency * coefficient * adjustment
        return scores

    # -- the index interface ----------------------------------------------------------

    def keys(self, doc: Document) -> Optional[dict[Key, dict[str, Any]]]:
        return None  # looked up by $text (text_query.py), never by key

    def check(self, rid: int, doc: Document) -> None:
        for _ in self.strings(doc):  # the language override checks
            pass


def text_index_of(indexes: Any) -> Optional[TextIndex]:
    """The collection's text index (a collection has at most one), if any."""
    for index in indexes:
        if isinstance(index, TextIndex):
            return index
    return None


KINDS[TEXT] = TextIndex
