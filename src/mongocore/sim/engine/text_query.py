"""``$text`` as a 7.0 server runs it (MongoDB manual, "$text", "Text Search Score";
the server's FTSQueryImpl, TextOrStage and FTSMatcher).

``$search`` is split into positive terms, negated terms (``-word``: a ``-`` after
white space negates up to the next white space), and phrases in double quotes
(``-"a phrase"`` negates it; words inside a phrase are terms too). Terms are cut
with the query's language (``$language``, else the index's default): stop words
dropped, stemmed, case and diacritics folded unless ``$caseSensitive`` or
``$diacriticSensitive`` asks otherwise.

A document matches when one of its index terms is a positive term; then, as the
server's matcher does, it must contain a positive term with the case and
diacritics asked for, no negated term, every positive phrase and no negated phrase
(phrases are substrings, case- and diacritic-insensitive unless asked). Its score
(``$meta: "textScore"``) is the sum of its index scores (text_index.py) of the
positive terms it holds. A query whose terms are all stop words, or only negated,
matches nothing, as on a server.

``$text`` needs the collection's text index (IndexNotFound, 27, "text index
required for $text query"), stands at the top level (not in ``$elemMatch``, not in
``$nor``) and only once per query (the matcher's rules, context.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Callable, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.context import MatchContext
from mongocore.sim.engine.indexes import Index
from mongocore.sim.engine.matcher import Node
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.query_operators import bad_value
from mongocore.sim.engine.text_index import TextIndex, text_index_of
from mongocore.sim.engine.text_language import Language, language, strip_diacritics, tokens
from mongocore.sim.engine.values import MISSING

__all__ = ["TextSearch", "parse_search", "text_operator"]


def parse_search(search: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """The positive words, negated words, positive phrases and negated phrases of a
    ``$search`` string, as FTSQueryImpl::parse splits them (words unprocessed)."""
    positive: list[str] = []
    negative: list[str] = []
    phrases: list[str] = []
    negated_phrases: list[str] = []
    in_negation = False
    in_phrase = False
    phrase_start = 0
    position = 0
    length = len(search)
    previous_space = True
    while position < length:
        char = search[position]
        if char.isspace():
            previous_space = True
            position += 1
            continue
        if char == "-":
            if not in_phrase and previous_space:
                in_negation = True
            previous_space = False
            position += 1
            continue
        if char == '"':
            if in_phrase:
                phrase = search[phrase_start:position]
                (negated_phrases if in_negation else phrases).append(phrase)
                in_phrase = False
            else:
                in_phrase = True
                if in_negation and previous_space:
                    in_negation = False
                phrase_start = position + 1
            previous_space = False
            position += 1
            continue
        end = position
        while end < length and not search[end].isspace() and search[end] not in '-"':
            end += 1
        word = search[position:end]
        if not (in_phrase and in_negation):
            if in_negation and previous_space:
                in_negation = False
            (negative if in_negation else positive).append(word)
        previous_space = False
        position = end
    return positive, negative, phrases, negated_phrases


class TextSearch:
    """A parsed ``$text`` query over one text index."""

    def __init__(
        self,
        index: TextIndex,
        search: str,
        lang: Language,
        case_sensitive: bool,
        diacritic_sensitive: bool,
    ) -> None:
        self.index = index
        self.case_sensitive = case_sensitive
        self.diacritic_sensitive = diacritic_sensitive
        positive, negative, self.phrases, self.negated_phrases = parse_search(search)
        sentence, negated = " ".join(positive), " ".join(negative)
        self.bounds = set(tokens(sentence, lang))
        sensitive = {"case_sensitive": case_sensitive, "diacritic_sensitive": diacritic_sensitive}
        self.positive = set(tokens(sentence, lang, **sensitive))
        self.negative = set(tokens(negated, lang, **sensitive))
        self._scores: dict[int, tuple[Document, Optional[float]]] = {}

    def _sensitive_terms(self, doc: Document) -> set[str]:
        out: set[str] = set()
        for text, _, lang in self.index.strings(doc):
            out.update(
                tokens(
                    text,
                    lang,
                    case_sensitive=self.case_sensitive,
                    diacritic_sensitive=self.diacritic_sensitive,
                )
            )
        return out

    def _phrase_in(self, phrase: str, doc: Document) -> bool:
        wanted = self._fold(phrase)
        return any(wanted in self._fold(text) for text, _, _ in self.index.strings(doc))

    def _fold(self, text: str) -> str:
        if not self.case_sensitive:
            text = text.lower()
        if not self.diacritic_sensitive:
            text = strip_diacritics(text)
        return text

    def score(self, doc: Document) -> Optional[float]:
        """The document's score, or None if it does not match."""
        cached = self._scores.get(id(doc))
        if cached is not None and cached[0] is doc:
            return cached[1]
        result = self._score(doc)
        self._scores[id(doc)] = (doc, result)
        return result

    def _score(self, doc: Document) -> Optional[float]:
        if not self.bounds:
            return None
        scores = self.index.term_scores(doc)
        matched = [term for term in self.bounds if term in scores]
        if not matched:
            return None
        if self.case_sensitive or self.diacritic_sensitive or self.negative:
            terms = self._sensitive_terms(doc)
            if (self.case_sensitive or self.diacritic_sensitive) and not (terms & self.positive):
                return None
            if terms & self.negative:
                return None
        if not all(self._phrase_in(p, doc) for p in self.phrases):
            return None
        if any(self._phrase_in(p, doc) for p in self.negated_phrases):
            return None
        return sum(scores[term] for term in matched)


def _boolean(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise bad_value(f"{name} needs a Boolean")
    return value


def text_operator(indexes: Callable[[], Iterable[Index]]) -> Callable[[Any, MatchContext], Node]:
    """The top-level ``$text`` operator of a collection whose indexes ``indexes`` gives."""

    def parse(value: Any, context: MatchContext) -> Node:
        if context.in_elem_match:
            raise bad_value("$text can only be applied to the top-level document")
        if not isinstance(value, Mapping):
            raise bad_value("$text expects an object")
        search = value.get("$search", MISSING)
        if not isinstance(search, str):
            raise bad_value("$search needs a String")
        known = {"$search", "$language", "$caseSensitive", "$diacriticSensitive"}
        if any(name not in known for name in value):
            raise bad_value("extra fields in $text")
        index = text_index_of(indexes())
        if index is None:
            raise CommandError(27, "text index required for $text query")
        if "$language" in value:
            if not isinstance(value["$language"], str):
                raise bad_value("$language needs a String")
            lang = language(value["$language"])
        else:
            lang = index.default_language
        case = (
            _boolean(value["$caseSensitive"], "$caseSensitive")
            if "$caseSensitive" in value
            else False
        )
        diacritic = (
            _boolean(value["$diacriticSensitive"], "$diacriticSensitive")
            if "$diacriticSensitive" in value
            else False
        )
        text = TextSearch(index, search, lang, case, diacritic)
        annotations = context.annotations
        if annotations is not None:
            annotations.special.append(("text", context.enclosing))
            annotations.meta["textScore"] = lambda doc: _or_missing(text.score(doc))
        return lambda doc, details: text.score(doc) is not None

    return parse


def _or_missing(score: Optional[float]) -> Any:
    return MISSING if score is None else score
