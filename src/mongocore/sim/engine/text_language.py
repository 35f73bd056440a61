"""The languages of text search, and how a text index version 3 cuts a string into
terms (MongoDB manual, "Text Search Languages"; the server's unicode tokenizer).

A string is split at delimiters (white space, dashes, hyphens, quotation marks,
terminal punctuation and the Unicode Pattern_Syntax characters; in English the
apostrophe is part of a word, so "don't" is one token). Each token is lower-cased
(Turkish with its dotted and dotless i), dropped if it is a stop word of the
language, stemmed with the language's Snowball stemmer, then stripped of its
diacritics. A case-sensitive query keeps the token's case, a diacritic-sensitive one
its diacritics.

Stemming uses the ``snowballstemmer`` package (the Snowball algorithms the server's
libstemmer runs; docs/dependencies.md). Stop words are the server's lists; the
simulator has the English one, so text search in English and in ``none`` (no stop
words, no stemming) is answered as a server answers it, and a text index, document
or query in another language the server supports is refused with NotImplemented
(238) rather than answered without its stop words.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterator
from typing import Any, Callable, Optional

import snowballstemmer

from mongocore.sim.codes import CommandError

__all__ = ["LANGUAGES", "Language", "language", "tokens"]

#: Each language of text index version 3 and its two-letter code.
LANGUAGES: dict[str, str] = {
    "danish": "da",
    "dutch": "nl",
    "english": "en",
    "finnish": "fi",
    "french": "fr",
    "german": "de",
    "hungarian": "hu",
    "italian": "it",
    "norwegian": "nb",
    "portuguese": "pt",
    "romanian": "ro",
    "russian": "ru",
    "spanish": "es",
    "swedish": "sv",
    "turkish": "tr",
    "none": "none",
}
_BY_CODE = {code: name for name, code in LANGUAGES.items()}


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# The English stop word list of the server (stop_words_english.txt).
_ENGLISH_STOP_WORDS = _words(
    """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can't cannot could couldn't did didn't do
    does doesn't doing don't down during each few for from further had hadn't has hasn't
    have haven't having he he'd he'll he's her here here's hers herself him himself his
    how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more
    most mustn't my myself no nor not of off on once only or other ought our ours
    ourselves out over own same shan't she she'd she'll she's should shouldn't so some
    such than that that's the their theirs them themselves then there there's these they
    they'd they'll they're they've this those through to too under until up very was
    wasn't we we'd we'll we're we've were weren't what what's when when's where where's
    which while who who's whom why why's with won't would wouldn't you you'd you'll
    you're you've your yours yourself yourselves
    """
)

_STOP_WORDS: dict[str, frozenset[str]] = {"english": _ENGLISH_STOP_WORDS, "none": frozenset()}


class Language:
    """One text search language: its stop words and its stemmer."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.english = name == "english"
        self.turkish = name == "turkish"
        stop_words = _STOP_WORDS.get(name)
        if stop_words is None:
            raise CommandError(
                238,
                f"text search in {name} is not implemented by the simulator (it has the stop"
                " words of english only)",
            )
        self.stop_words = stop_words
        self._stem: Callable[[str], str] = _stemmer(name)

    def stem(self, word: str) -> str:
        return self._stem(word)

    def lower(self, word: str) -> str:
        if self.turkish:
            word = word.replace("I", "\u0131").replace("\u0130", "i")  # dotless and dotted i
        return word.lower()


def _stemmer(name: str) -> Callable[[str], str]:
    if name == "none":
        return lambda word: word
    stemmer: Any = snowballstemmer.stemmer(name)
    return functools.lru_cache(maxsize=4096)(stemmer.stemWord)


@functools.cache
def _language(name: str) -> Language:
    return Language(name)


def language_name(value: str) -> Optional[str]:
    """The language a name or code stands for (case-insensitive), None if unknown."""
    lowered = value.lower()
    if lowered in LANGUAGES:
        return lowered
    return _BY_CODE.get(lowered)


def language(value: str) -> Language:
    """The language named ``value`` (BadValue for one text index version 3 does not
    know; NotImplemented for one whose stop words the simulator lacks)."""
    name = language_name(value)
    if name is None:
        raise CommandError(2, f'unsupported language: "{value}" for text index version 3')
    return _language(name)


# -- delimiters ---------------------------------------------------------------------------

# Unicode's Pattern_Syntax ranges (a stable property: UAX #31).
_PATTERN_SYNTAX = (
    (0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x5E), (0x60, 0x60), (0x7B, 0x7E),
    (0xA1, 0xA7), (0xA9, 0xA9), (0xAB, 0xAC), (0xAE, 0xAE), (0xB0, 0xB1), (0xB6, 0xB6),
    (0xBB, 0xBB), (0xBF, 0xBF), (0xD7, 0xD7), (0xF7, 0xF7), (0x2010, 0x2027),
    (0x2030, 0x203E), (0x2041, 0x2053), (0x2055, 0x205E), (0x2190, 0x245F),
    (0x2500, 0x2775), (0x2794, 0x2BFF), (0x2E00, 0x2E7F), (0x3001, 0x3003),
    (0x3008, 0x3020), (0x3030, 0x3030), (0xFD3E, 0xFD3F), (0xFE45, 0xFE46),
)  # fmt: skip


@functools.lru_cache(maxsize=65536)
def _is_delimiter(char: str, english: bool) -> bool:
    if char == "'" and english:
        return False
    if "a" <= char <= "z" or "A" <= char <= "Z" or "0" <= char <= "9":
        return False
    if char.isspace():
        return True
    code = ord(char)
    if any(low <= code <= high for low, high in _PATTERN_SYNTAX):
        return True
    # Dash and Hyphen (Pd), Quotation_Mark (Pi, Pf), Terminal_Punctuation and STerm (Po).
    return unicodedata.category(char) in ("Pd", "Pi", "Pf", "Po")


def strip_diacritics(word: str) -> str:
    """``word`` without its combining marks (é is e)."""
    decomposed = unicodedata.normalize("NFD", word)
    return unicodedata.normalize(
        "NFC", "".join(c for c in decomposed if not unicodedata.combining(c))
    )


def raw_tokens(text: str, lang: Language) -> Iterator[str]:
    """The tokens of ``text`` between delimiters, as written."""
    start: Optional[int] = None
    for position, char in enumerate(text):
        if _is_delimiter(char, lang.english):
            if start is not None:
                yield text[start:position]
                start = None
        elif start is None:
            start = position
    if start is not None:
        yield text[start:]


def tokens(
    text: str,
    lang: Language,
    *,
    stop_words: bool = True,
    case_sensitive: bool = False,
    diacritic_sensitive: bool = False,
) -> Iterator[str]:
    """The terms of ``text`` (module doc)."""
    for raw in raw_tokens(text, lang):
        lowered = lang.lower(raw)
        if stop_words and lowered in lang.stop_words:
            continue
        word = lang.stem(raw if case_sensitive else lowered)
        if not diacritic_sensitive:
            word = strip_diacritics(word)
        yield word
