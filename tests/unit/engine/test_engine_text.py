"""The engine's text search: text indexes (their specs and listing), ``$text`` (terms,
phrases, negations, stemming, stop words, case and diacritic sensitivity), scores and
``$meta: "textScore"``, against the MongoDB manual's examples and the server's errors."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from mongocore.sim.codes import CommandError
from mongocore.sim.engine import crud
from mongocore.sim.engine.context import MatchContext
from mongocore.sim.engine.indexes import IndexSpec, index_listing
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.search import collection_operators
from mongocore.sim.engine.store import Collection
from mongocore.sim.engine.text_language import language, tokens
from mongocore.sim.engine.text_query import parse_search

# The manual's "articles" ($text, "Examples").
ARTICLES = [
    {"_id": 1, "subject": "coffee", "author": "xyz", "views": 50},
    {"_id": 2, "subject": "Coffee Shopping", "author": "efg", "views": 5},
    {"_id": 3, "subject": "Baking a cake", "author": "abc", "views": 90},
    {"_id": 4, "subject": "baking", "author": "xyz", "views": 100},
    {"_id": 5, "subject": "Café Con Leche", "author": "abc", "views": 200},
    {"_id": 6, "subject": "Сырники", "author": "jkl", "views": 80},
    {"_id": 7, "subject": "coffee and cream", "author": "efg", "views": 10},
    {"_id": 8, "subject": "Cafe con Leche", "author": "xyz", "views": 10},
]


class Setup:
    def __init__(self, docs: Iterable[Mapping[str, Any]] = (), **index: Any) -> None:
        self.coll = Collection("test.articles")
        self.stamps = itertools.count(1)
        if index:
            self.index(**index)
        for doc in docs:
            self.insert(doc)
        self.context = MatchContext(
            operators=collection_operators(self.coll.indexes.values, "test.articles")
        )

    def index(self, **document: Any) -> None:
        document.setdefault("name", "text_index")
        self.coll.create_index(IndexSpec.from_document(document))

    def insert(self, doc: Mapping[str, Any]) -> None:
        crud.insert(self.coll, doc, next(self.stamps))

    def find(self, flt: Any, **options: Any) -> list[Document]:
        return crud.find(self.coll, flt, context=self.context, **options)

    def ids(self, search: Any, **options: Any) -> set[Any]:
        text = {"$search": search} if isinstance(search, str) else search
        return {doc["_id"] for doc in self.find({"$text": text}, **options)}

    def scores(self, search: str) -> list[tuple[Any, float]]:
        docs = self.find(
            {"$text": {"$search": search}},
            projection={"score": {"$meta": "textScore"}},
            sort={"score": {"$meta": "textScore"}, "_id": 1},
        )
        return [(doc["_id"], doc["score"]) for doc in docs]


def error(call: Any, *args: Any, **kwargs: Any) -> CommandError:
    with pytest.raises(CommandError) as caught:
        call(*args, **kwargs)
    return caught.value


@pytest.fixture
def articles() -> Setup:
    return Setup(ARTICLES, key={"subject": "text"})


@pytest.mark.parametrize(
    ("search", "expected"),
    [
        ("coffee", {1, 2, 7}),  # "Search for a Single Word"
        ("bake coffee cake", {1, 2, 3, 4, 7}),  # "Match Any of the Search Terms"
        ('"coffee shop"', {2}),  # "Search for a Phrase"
        ("coffee -shop", {1, 7}),  # "Exclude Documents That Contain a Term"
        ("сы́рники CAFÉS", {5, 6, 8}),  # "Diacritic Insensitive Search"
        ({"$search": "Coffee", "$caseSensitive": True}, {2}),  # "Case Sensitive Search"
        ({"$search": '"Café Con"', "$caseSensitive": True}, {5}),
        ({"$search": "CAFÉ", "$diacriticSensitive": True}, {5}),  # "Diacritic Sensitive"
        ({"$search": "leches -cafés", "$diacriticSensitive": True}, {8}),
        ("shopped", {2}),  # stemmed: shop
        ("the and a", set()),  # stop words only
        ("-coffee", set()),  # negations only
        ('-"coffee shop" coffee', {1, 7}),
        ('"coffee" -"and cream"', {1, 2}),
    ],
    ids=str,
)
def test_manual_searches(articles: Setup, search: Any, expected: set[int]) -> None:
    assert articles.ids(search) == expected


def test_running_matches_run_in_english_and_not_in_none() -> None:
    docs = [{"_id": 1, "t": "I run every day"}, {"_id": 2, "t": "running shoes"}]
    english = Setup(docs, key={"t": "text"})
    assert english.ids("running") == {1, 2}
    assert english.ids("runs") == {1, 2}
    # The documents are indexed in English (run); the query's term is not stemmed.
    assert english.ids({"$search": "running", "$language": "none"}) == set()
    none = Setup(docs, key={"t": "text"}, default_language="none")
    assert none.ids("running") == {2}
    assert none.ids("the") == set()  # no stop words in "none", and no document has it


def test_scores_follow_the_servers_formula(articles: Setup) -> None:
    # "Baking a cake": two terms (a is a stop word), cake once: 1 * (0.5 * 1/2 + 0.5).
    assert articles.scores("cake") == [(3, 0.75)]
    # bake and cake in one string, each 0.75; "baking" alone: 1 * (0.5 + 0.5).
    assert articles.scores("bake coffee cake") == [
        (3, 1.5),
        (1, 1.0),
        (4, 1.0),
        (2, 0.75),
        (7, 0.75),
    ]
    # A term equal to the whole string (case aside) gains a tenth.
    assert articles.scores("сырники") == [(6, pytest.approx(1.1))]


def test_scores_count_repeats_and_weights() -> None:
    docs = [
        {"_id": 1, "title": "blue blue blue", "body": "red"},
        {"_id": 2, "title": "green", "body": "blue sky"},
    ]
    s = Setup(docs, key={"title": "text", "body": "text"}, weights={"title": 10})
    # Three times in three tokens: (1 + 1/2 + 1/4) * (0.5 * 3/3 + 0.5) * 10.
    # Once in two tokens of a weight-1 field: 1 * (0.5 * 1/2 + 0.5).
    assert s.scores("blue") == [(1, 17.5), (2, 0.75)]
    assert s.scores("blue green") == [(1, 17.5), (2, pytest.approx(11.75))]


def test_sort_by_text_score_without_the_score_projected(articles: Setup) -> None:
    docs = articles.find(
        {"$text": {"$search": "bake coffee cake"}}, sort={"s": {"$meta": "textScore"}, "_id": -1}
    )
    assert [d["_id"] for d in docs] == [3, 4, 1, 7, 2]
    assert all("s" not in d for d in docs)


def test_wildcard_index_and_language_override() -> None:
    docs = [
        {"_id": 1, "a": "running", "nested": {"b": ["jumping", 3]}},
        {"_id": 2, "a": "other", "idioma": "none", "c": "running"},
    ]
    s = Setup(docs, key={"$**": "text"}, language_override="idioma")
    assert s.ids("jump") == {1}
    assert s.ids("running") == {1}  # document 2 is not stemmed: its language is none
    assert s.ids({"$search": "running", "$language": "none"}) == {2}
    assert s.ids("none") == set()  # the override field itself is not indexed


def test_text_query_errors(articles: Setup) -> None:
    text = {"$text": {"$search": "coffee"}}
    cases = [
        (Setup(ARTICLES).find, text, 27, "text index required for $text query"),
        (articles.find, {"$text": "coffee"}, 2, "$text expects an object"),
        (articles.find, {"$text": {"$search": 1}}, 2, "$search needs a String"),
        (articles.find, {"$text": {"$search": "a", "$x": 1}}, 2, "extra fields in $text"),
        (
            articles.find,
            {"$text": {"$search": "a", "$caseSensitive": 1}},
            2,
            "$caseSensitive needs a Boolean",
        ),
        (
            articles.find,
            {"$text": {"$search": "a", "$language": "klingon"}},
            2,
            'unsupported language: "klingon" for text index version 3',
        ),
        (articles.find, {"$nor": [text]}, 2, "text expression not allowed in nor"),
        (articles.find, {"$and": [text, text]}, 2, "Too many text expressions"),
        (
            articles.find,
            {"a": {"$elemMatch": text}},
            2,
            "$text can only be applied to the top-level document",
        ),
    ]
    for find, flt, code, message in cases:
        e = error(find, flt)
        assert (e.code, e.errmsg) == (code, message), flt
    assert articles.ids("coffee") == {1, 2, 7}
    assert {d["_id"] for d in articles.find({"$or": [text, {"views": 90}]})} == {1, 2, 3, 7}


def test_meta_without_text_and_unknown_meta(articles: Setup) -> None:
    e = error(articles.find, {}, projection={"s": {"$meta": "textScore"}})
    assert (e.code, e.errmsg) == (
        40218,
        "query requires text score metadata, but it is not available",
    )
    assert error(articles.find, {}, sort={"s": {"$meta": "textScore"}}).code == 40218
    assert error(articles.find, {}, projection={"s": {"$meta": "nonsense"}}).code == 17308
    assert error(articles.find, {}, projection={"s": {"$meta": "indexKey"}}).code == 238
    assert error(articles.find, {}, sort={"s": {"$meta": "nonsense"}}).code == 31138
    with_score = articles.find(
        {"$text": {"$search": "cake"}}, projection={"subject": 0, "s": {"$meta": "textScore"}}
    )
    assert with_score == [{"_id": 3, "author": "abc", "views": 90, "s": 0.75}]


# -- text indexes -------------------------------------------------------------------------------


def test_text_index_listing_shapes() -> None:
    assert index_listing({"v": 2, "key": {"subject": "text"}, "name": "subject_text"}) == {
        "v": 2,
        "key": {"_fts": "text", "_ftsx": 1},
        "name": "subject_text",
        "weights": {"subject": 1},
        "default_language": "english",
        "language_override": "language",
        "textIndexVersion": 3,
    }
    listed = index_listing(
        {
            "key": {"a": 1, "title": "text", "body": "text", "z": -1},
            "name": "compound",
            "weights": {"title": 10.9, "extra": 2},
            "default_language": "none",
            "language_override": "lang",
        }
    )
    assert listed == {
        "key": {"a": 1, "_fts": "text", "_ftsx": 1, "z": -1},
        "name": "compound",
        "weights": {"body": 1, "extra": 2, "title": 10},
        "default_language": "none",
        "language_override": "lang",
        "textIndexVersion": 3,
    }
    assert list(listed["key"]) == ["a", "_fts", "_ftsx", "z"]
    assert index_listing({"key": {"$**": "text"}, "name": "w"})["weights"] == {"$**": 1}
    # A spec in the stored form lists as itself.
    assert index_listing(listed) == listed


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"key": {"t": "text"}, "weights": {"t": "x"}}, "weight for text index needs numeric type"),
        ({"key": {"t": "text"}, "weights": 3}, "text index option 'weights' must be an object"),
        (
            {"key": {"t": "text"}, "weights": {"t": 0}},
            "text index weight must be in the exclusive interval (0,100000) but found: 0",
        ),
        ({"key": {"t": "text"}, "default_language": "klingon"}, "default_language is not valid"),
        ({"key": {"t": "text"}, "language_override": "$x"}, "language_override is not valid"),
        (
            {"key": {"t": "text", "a": 1, "u": "text"}},
            "'text' fields in index must all be adjacent",
        ),
        (
            {"key": {"t": "text", "a": 2}},
            "expected value 1 or -1 for non-text key in compound index",
        ),
        ({"key": {"t": "text"}, "textIndexVersion": 9}, "bad textIndexVersion: 9"),
    ],
    ids=str,
)
def test_text_index_spec_errors(document: dict[str, Any], message: str) -> None:
    s = Setup()
    e = error(s.index, **document)
    assert (e.code, e.errmsg) == (67, message)


def test_language_override_of_a_document_is_checked() -> None:
    s = Setup([], key={"t": "text"})
    e = error(s.insert, {"_id": 1, "t": "x", "language": 5})
    assert (e.code, e.errmsg) == (
        17261,
        "found language override field in document with non-string type",
    )
    e = error(s.insert, {"_id": 2, "t": "x", "language": "klingon"})
    assert (e.code, e.errmsg) == (17262, "language override unsupported: klingon")
    s.insert({"_id": 3, "t": "x", "language": "en"})
    assert len(s.coll) == 1


def test_languages_without_a_stop_word_list_are_refused() -> None:
    s = Setup([], key={"t": "text"})
    assert error(s.insert, {"_id": 1, "t": "x", "language": "spanish"}).code == 238
    assert error(Setup().index, key={"t": "text"}, default_language="french").code == 238
    articles = Setup(ARTICLES, key={"subject": "text"})
    assert error(articles.find, {"$text": {"$search": "leche", "$language": "es"}}).code == 238


# -- tokens and the search string ----------------------------------------------------------------


def test_tokens() -> None:
    english = language("english")
    assert list(tokens("Don't stop-running, it's the fans' day!", english)) == [
        "stop",
        "run",
        "fan",  # the stemmer takes the possessive away
        "day",
    ]
    # Stemmed before the diacritics go, as the server does: "brulee" alone stems to "brule".
    assert list(tokens("Crème brûlée", english)) == ["creme", "brulee"]
    assert list(tokens("brulee", english)) == ["brule"]
    assert list(tokens("Crème", english, diacritic_sensitive=True)) == ["crème"]
    assert list(tokens("Don't", language("none"))) == ["don", "t"]  # ' is a delimiter there


def test_search_string_parts() -> None:
    assert parse_search('coffee -shop "cafe con" -"big cup" -a-b - c') == (
        ["coffee", "cafe", "con", "c"],
        ["shop", "a", "b"],
        ["cafe con"],
        ["big cup"],
    )


def test_find_and_modify_by_text_score(articles: Setup) -> None:
    doc, _ = crud.find_and_modify(
        articles.coll,
        {"$text": {"$search": "bake coffee cake"}},
        lambda: next(articles.stamps),
        update={"$inc": {"views": 1}},
        new=True,
        sort={"s": {"$meta": "textScore"}},
        fields={"views": 1, "s": {"$meta": "textScore"}},
        context=articles.context,
    )
    assert doc == {"_id": 3, "views": 91, "s": 1.5}
