"""mongocore's public surface is pymongo's, module by module, but for the listed differences.

For each public module of pymongo's synchronous API (and gridfs, once
``mongocore.gridfs`` exists) the test compares, against the pymongo installed:

- every public name of the module exists in mongocore's module of the same name;
- every public attribute of every public class exists on mongocore's class;
- the signature of every public method of the main classes (the client, databases,
  collections, cursors, sessions, change streams, the write models, the results and
  GridFS's classes) and of every public function: parameter names, order, kinds and
  defaults (annotations aside). A parameter mongocore adds is no difference when it
  has a default and is keyword-only or comes after all of pymongo's: no call written
  for pymongo can reach it;
- the exception hierarchy: of any two pymongo error classes, one is a subclass of the
  other in mongocore exactly when it is in pymongo.

Every difference found must be listed, with what differs exactly as the test
describes it, in the table of docs/from-pymongo.md ("The surface, name by name"),
which gives each its status ("to fix", or "kept" on purpose) and its reason; and
every row there must still be a difference. The failure message gives the rows to
add or remove.
"""

from __future__ import annotations
import __future__

import importlib
import importlib.util
import inspect
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple, Optional

import pymongo
import pymongo.common
import pymongo.errors
import pytest

import mongocore.errors
import mongocore.results
from mongocore._version import PYMONGO_VERSION

DOC = Path(__file__).parents[2] / "docs" / "from-pymongo.md"
SECTION = "## The surface, name by name"
STATUSES = ("to fix", "kept")

#: The public modules of pymongo 4.20's synchronous API: those its API reference
#: documents, and ``common``, whose validators libraries call.
PYMONGO_MODULES = (
    "pymongo",
    "pymongo.change_stream",
    "pymongo.client_options",
    "pymongo.client_session",
    "pymongo.collation",
    "pymongo.collection",
    "pymongo.command_cursor",
    "pymongo.common",
    "pymongo.cursor",
    "pymongo.database",
    "pymongo.driver_info",
    "pymongo.errors",
    "pymongo.event_loggers",
    "pymongo.mongo_client",
    "pymongo.monitoring",
    "pymongo.operations",
    "pymongo.pool",
    "pymongo.read_concern",
    "pymongo.read_preferences",
    "pymongo.results",
    "pymongo.server_api",
    "pymongo.server_description",
    "pymongo.topology_description",
    "pymongo.typings",
    "pymongo.uri_parser",
    "pymongo.write_concern",
)
#: pymongo's public modules mongocore does not offer (their rows give the reasons).
PYMONGO_MODULES_LEFT_OUT = (
    "pymongo.asynchronous",
    "pymongo.auth_oidc",
    "pymongo.encryption",
    "pymongo.encryption_options",
)
GRIDFS_MODULES = ("gridfs", "gridfs.errors", "gridfs.grid_file")

#: The classes whose public methods must take pymongo's parameters.
MAIN_CLASSES = frozenset(
    {
        "pymongo.mongo_client.MongoClient",
        "pymongo.database.Database",
        "pymongo.collection.Collection",
        "pymongo.cursor.Cursor",
        "pymongo.command_cursor.CommandCursor",
        "pymongo.client_session.ClientSession",
        "pymongo.change_stream.ChangeStream",
        "pymongo.operations.InsertOne",
        "pymongo.operations.UpdateOne",
        "pymongo.operations.UpdateMany",
        "pymongo.operations.ReplaceOne",
        "pymongo.operations.DeleteOne",
        "pymongo.operations.DeleteMany",
        "pymongo.operations.IndexModel",
        "pymongo.operations.SearchIndexModel",
        "pymongo.results.InsertOneResult",
        "pymongo.results.InsertManyResult",
        "pymongo.results.UpdateResult",
        "pymongo.results.DeleteResult",
        "pymongo.results.BulkWriteResult",
        "gridfs.grid_file.GridFS",
        "gridfs.grid_file.GridFSBucket",
        "gridfs.grid_file.GridIn",
        "gridfs.grid_file.GridOut",
        "gridfs.grid_file.GridOutCursor",
    }
)

#: The dunder methods whose presence matters to code written for pymongo (the
#: others, such as ``__repr__``, every class has).
DUNDERS = frozenset(
    {
        "__init__",
        "__getitem__",
        "__getattr__",
        "__iter__",
        "__next__",
        "__enter__",
        "__exit__",
        "__len__",
        "__bool__",
        "__eq__",
        "__ne__",
        "__hash__",
        "__call__",
        "__copy__",
        "__deepcopy__",
        "__class_getitem__",
    }
)

#: The packages, whose classes are those of their modules: compared there, once.
PACKAGES = frozenset({"pymongo", "gridfs"})

#: pymongo's find() and find_raw_batches() take ``*args, **kwargs`` and hand them to
#: their cursor's constructor: its parameters (less the collection) are theirs.
FORWARDED_TO = {
    "pymongo.collection.Collection.find": ("pymongo.cursor", "Cursor"),
}

#: Private names libraries import from pymongo, which mongocore offers too.
PRIVATE_NAMES = (
    ("pymongo.database", "_check_name"),
    ("pymongo.common", "_UUID_REPRESENTATIONS"),
)


# --- what is public -----------------------------------------------------------------


def ours(pymongo_module: str) -> str:
    """The name of mongocore's module for a pymongo (or gridfs) module."""
    if pymongo_module == "pymongo":
        return "mongocore"
    if pymongo_module.startswith("pymongo."):
        return "mongocore." + pymongo_module.removeprefix("pymongo.")
    return "mongocore." + pymongo_module


def _homes(module: types.ModuleType) -> set[str]:
    """The modules whose classes and functions a module presents as its own: itself,
    its synchronous implementation (``pymongo.synchronous.collection``) and its shared
    half (``pymongo.database_shared``)."""
    name = module.__name__
    package, _, leaf = name.rpartition(".")
    homes = {name, f"{name}_shared"}
    if package:
        homes |= {f"{package}.synchronous.{leaf}", f"{package}.{leaf}_shared"}
    else:
        homes.add(f"{name}.synchronous")
    return homes


def public_names(module: types.ModuleType) -> list[str]:
    """A module's ``__all__``; without one, the names not starting with ``_`` that it
    defines (classes and functions of its own, constants), not what it imports for
    itself (modules, typing helpers, other modules' classes)."""
    declared = getattr(module, "__all__", None)
    if declared is not None:
        return sorted(declared)
    homes = _homes(module)
    names = []
    for name, value in vars(module).items():
        if name.startswith("_") or isinstance(value, (types.ModuleType, typing.TypeVar)):
            continue
        if isinstance(value, __future__._Feature) or getattr(typing, name, None) is value:
            continue
        if (inspect.isclass(value) or inspect.isroutine(value)) and getattr(
            value, "__module__", None
        ) not in homes:
            continue
        names.append(name)
    return sorted(names)


def _defined_by(cls: type, name: str) -> Optional[type]:
    return next((k for k in cls.__mro__ if name in vars(k)), None)


def public_members(cls: type) -> list[str]:
    """The attributes of a pymongo class that code may use: not starting with ``_``
    (but for :data:`DUNDERS`), defined by pymongo's own classes (not ``object``,
    ``tuple``...), and ``__class_getitem__`` of a generic class (``MongoClient[dict]``)."""
    members = []
    for name in dir(cls):
        if name.startswith("_") and name not in DUNDERS:
            continue
        owner = _defined_by(cls, name)
        module = getattr(owner, "__module__", "") or ""
        generic = name == "__class_getitem__" and owner is typing.Generic
        if owner is None or (
            module.split(".")[0] not in ("pymongo", "gridfs", "bson") and not generic
        ):
            continue
        members.append(name)
    return members


def has_member(cls: type, name: str) -> bool:
    if hasattr(cls, name):
        return True
    # An attribute each instance sets (a dataclass field, a slot, an annotation).
    return any(
        name in getattr(k, "__annotations__", {}) or name in getattr(k, "__slots__", ())
        for k in cls.__mro__
    )


# --- signatures ------------------------------------------------------------------------

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_KIND_NAMES = {
    inspect.Parameter.POSITIONAL_ONLY: "positional-only",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
    inspect.Parameter.VAR_POSITIONAL: "*args",
    inspect.Parameter.KEYWORD_ONLY: "keyword-only",
    inspect.Parameter.VAR_KEYWORD: "**kwargs",
}


def _parameters(function: Any, skip_first: bool) -> list[inspect.Parameter]:
    parameters = list(inspect.signature(function).parameters.values())
    return parameters[1:] if skip_first and parameters else parameters


def _same_default(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def _shown(value: Any) -> str:
    return "none" if value is inspect.Parameter.empty else f"`{value!r}`"


def signature_difference(
    theirs: list[inspect.Parameter], mine: list[inspect.Parameter]
) -> Optional[str]:
    """What differs between pymongo's parameters and mongocore's, in one line; None
    when a call written for pymongo binds the same way to mongocore's."""
    parts: list[str] = []
    star = {p.kind: p for p in mine if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    their_star = {p.kind: p for p in theirs if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    named_mine = {p.name: p for p in mine if p.kind not in star}
    named_theirs = {p.name: p for p in theirs if p.kind not in their_star}
    for kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
        if kind in their_star and kind not in star:
            parts.append(f"no {_KIND_NAMES[kind]}")
        elif kind in star and kind not in their_star:
            parts.append(f"adds {_KIND_NAMES[kind]}")
    missing = [name for name in named_theirs if name not in named_mine]
    if missing:
        parts.append("no " + ", ".join(f"`{n}`" for n in missing))
    last_shared = max((i for i, p in enumerate(mine) if p.name in named_theirs), default=-1)
    added = [
        p.name
        for i, p in enumerate(mine)
        if p.name not in named_theirs
        and p.kind not in star
        and not (p.default is not p.empty and (p.kind is p.KEYWORD_ONLY or i > last_shared))
    ]
    if added:
        parts.append("adds " + ", ".join(f"`{n}`" for n in added))
    for name, theirs_p in named_theirs.items():
        mine_p = named_mine.get(name)
        if mine_p is None:
            continue
        if mine_p.kind != theirs_p.kind:
            parts.append(f"`{name}` {_KIND_NAMES[mine_p.kind]}")
        if not _same_default(mine_p.default, theirs_p.default):
            parts.append(
                f"`{name}` default {_shown(mine_p.default)} (pymongo {_shown(theirs_p.default)})"
            )
    their_order = [p.name for p in theirs if p.kind in _POSITIONAL and p.name in named_mine]
    my_order = [p.name for p in mine if p.kind in _POSITIONAL and p.name in named_theirs]
    if their_order != my_order and sorted(their_order) == sorted(my_order):
        parts.append("positional order " + ", ".join(f"`{n}`" for n in my_order))
    return "; ".join(parts) or None


# --- the comparison ------------------------------------------------------------------------


class Found(NamedTuple):
    differences: dict[str, str]
    modules: int
    names: int
    members: int
    signatures: int


def _is_function(value: Any) -> bool:
    return inspect.isfunction(value) or inspect.ismethod(value) or inspect.isbuiltin(value)


def _compare_signature(
    key: str, theirs: Any, mine: Any, differences: dict[str, str], *, method: bool
) -> None:
    forwarded = FORWARDED_TO.get(key)
    if forwarded is not None:
        target = getattr(importlib.import_module(forwarded[0]), forwarded[1]).__init__
        their_parameters = _parameters(target, skip_first=True)[1:]
    else:
        their_parameters = _parameters(theirs, skip_first=method)
    try:
        my_parameters = _parameters(mine, skip_first=method)
    except (TypeError, ValueError):  # a builtin without a signature
        differences[key] = "no signature"
        return
    if forwarded is not None and [p.kind for p in my_parameters] == [
        inspect.Parameter.VAR_POSITIONAL,
        inspect.Parameter.VAR_KEYWORD,
    ]:
        # mongocore's forwards too: its cursor's constructor has the parameters.
        my_target = getattr(importlib.import_module(ours(forwarded[0])), forwarded[1]).__init__
        my_parameters = _parameters(my_target, skip_first=True)[1:]
    difference = signature_difference(their_parameters, my_parameters)
    if difference is not None:
        differences[key] = difference


def _compare_class(
    key: str, theirs: type, mine: Any, differences: dict[str, str], counts: dict[str, int]
) -> None:
    if not inspect.isclass(mine):
        differences[key] = "not a class"
        return
    main = key in MAIN_CLASSES
    for member in public_members(theirs):
        counts["members"] += 1
        member_key = f"{key}.{member}"
        if not has_member(mine, member):
            differences[member_key] = "not provided"
            continue
        their_value = inspect.getattr_static(theirs, member)
        if not main or not isinstance(their_value, (types.FunctionType, staticmethod, classmethod)):
            continue
        if member != "__init__" and member.startswith("__"):
            continue
        my_value = inspect.getattr_static(mine, member, None)
        if my_value is None or isinstance(my_value, property):
            differences[member_key] = "not a method"
            continue
        counts["signatures"] += 1
        is_static = isinstance(their_value, staticmethod)
        _compare_signature(
            member_key,
            getattr(theirs, member),
            getattr(mine, member),
            differences,
            method=not is_static,
        )


def _compare_errors(differences: dict[str, str]) -> None:
    """Of any two pymongo error classes, one is a subclass of the other in mongocore
    exactly when it is in pymongo."""
    mine = importlib.import_module("mongocore.errors")
    names = [
        n
        for n in public_names(pymongo.errors)
        if inspect.isclass(getattr(pymongo.errors, n)) and hasattr(mine, n)
    ]
    for name in names:
        extra, lacking = [], []
        for other in names:
            if other == name:
                continue
            theirs = issubclass(getattr(pymongo.errors, name), getattr(pymongo.errors, other))
            ours_ = issubclass(getattr(mine, name), getattr(mine, other))
            if ours_ and not theirs:
                extra.append(other)
            elif theirs and not ours_:
                lacking.append(other)
        parts = []
        if extra:
            parts.append("also a " + ", ".join(f"`{n}`" for n in extra))
        if lacking:
            parts.append("not a " + ", ".join(f"`{n}`" for n in lacking))
        if parts:
            differences[f"pymongo.errors.{name}(hierarchy)"] = "; ".join(parts)


def gridfs_available() -> bool:
    return importlib.util.find_spec("mongocore.gridfs") is not None


def compare() -> Found:
    differences: dict[str, str] = {}
    counts = {"modules": 0, "names": 0, "members": 0, "signatures": 0}
    modules = list(PYMONGO_MODULES) + (list(GRIDFS_MODULES) if gridfs_available() else [])
    for module_name in modules:
        theirs = importlib.import_module(module_name)
        try:
            mine = importlib.import_module(ours(module_name))
        except ImportError:
            differences[module_name] = "module not provided"
            continue
        counts["modules"] += 1
        for name in public_names(theirs):
            counts["names"] += 1
            key = f"{module_name}.{name}"
            their_value = getattr(theirs, name)
            if not hasattr(mine, name):
                differences[key] = "not provided"
                continue
            my_value = getattr(mine, name)
            if inspect.isclass(their_value):
                if module_name in PACKAGES:
                    if not inspect.isclass(my_value):
                        differences[key] = "not a class"
                    continue
                _compare_class(key, their_value, my_value, differences, counts)
            elif _is_function(their_value):
                if not callable(my_value):
                    differences[key] = "not a function"
                    continue
                counts["signatures"] += 1
                _compare_signature(key, their_value, my_value, differences, method=False)
    for module_name in PYMONGO_MODULES_LEFT_OUT:
        if importlib.util.find_spec(ours(module_name)) is None:
            differences[module_name] = "module not provided"
    _compare_errors(differences)
    return Found(
        differences, counts["modules"], counts["names"], counts["members"], counts["signatures"]
    )


# --- the listed differences ------------------------------------------------------------


class Row(NamedTuple):
    differs: str
    status: str
    reason: str


_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def listed_differences(text: str) -> dict[str, Row]:
    """The rows of the table under :data:`SECTION`: ``| name | what differs | status |
    reason |``."""
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    rows: dict[str, Row] = {}
    for line in text[start : end if end != -1 else None].splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in _CELL_SPLIT.split(line.strip())[1:-1]]
        assert len(cells) == 4, f"a row of four cells expected: {line}"
        name = cells[0].strip("`")
        assert name not in rows, f"listed twice: {name}"
        rows[name] = Row(*cells[1:])
    return rows


def row(name: str, differs: str, status: str = "to fix", reason: str = "?") -> str:
    return f"| `{name}` | {differs} | {status} | {reason} |"


def check_in_step(found: dict[str, str], rows: dict[str, Row]) -> list[str]:
    """What is wrong with the table, given the differences found (empty: in step)."""
    problems = []
    for name, differs in sorted(found.items()):
        listed = rows.get(name)
        if listed is None:
            problems.append(f"not listed: {row(name, differs)}")
        elif listed.differs != differs:
            problems.append(
                f"differs otherwise now: {row(name, differs, listed.status, listed.reason)}"
            )
    for name in sorted(set(rows) - set(found)):
        problems.append(f"no longer a difference, remove: {row(name, *rows[name])}")
    for name, listed in sorted(rows.items()):
        if listed.status not in STATUSES:
            problems.append(f"status must be one of {STATUSES}: {name}")
        if not listed.reason or listed.reason == "?":
            problems.append(f"no reason given: {name}")
    return problems


def in_installed_pymongo(name: str) -> bool:
    """Whether the installed pymongo (or gridfs) has the name a row is about."""
    parts = name.removesuffix("(hierarchy)").split(".")
    for split in range(len(parts), 0, -1):
        module_name = ".".join(parts[:split])
        try:
            value: Any = importlib.import_module(module_name)
        except ImportError:
            continue
        for attribute in parts[split:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def rows_for_installed_pymongo(rows: dict[str, Row]) -> dict[str, Row]:
    """The rows, less those about names an older pymongo does not have yet. The table
    is of pymongo 4.20, the API level mongocore implements; on Python 3.9, where pip
    installs pymongo 4.18 (4.20 needs 3.10), a row about a name 4.20 added cannot be a
    difference there. With pymongo 4.20 installed, every row counts."""
    if pymongo.version_tuple[:2] == tuple(int(p) for p in PYMONGO_VERSION.split(".")[:2]):
        return rows
    return {name: row for name, row in rows.items() if in_installed_pymongo(name)}


@pytest.fixture(scope="module")
def found() -> Found:
    return compare()


def test_every_difference_from_pymongo_is_listed_with_a_reason(found: Found) -> None:
    rows = rows_for_installed_pymongo(listed_differences(DOC.read_text("utf-8")))
    problems = check_in_step(found.differences, rows)
    assert not problems, "docs/from-pymongo.md, " + SECTION[3:] + ":\n" + "\n".join(problems)


def test_the_comparison_covers_the_modules_and_the_main_classes(found: Found) -> None:
    # The public modules all compared (none lost to an import error), the main classes
    # and functions too: a comparison that saw nothing would find nothing.
    assert found.modules == len(PYMONGO_MODULES) + (
        len(GRIDFS_MODULES) if gridfs_available() else 0
    )
    assert found.names > 250
    assert found.members > 600
    assert found.signatures > 150


def test_a_row_about_a_name_of_a_newer_pymongo_is_recognized() -> None:
    assert in_installed_pymongo("pymongo.collection.Collection.find")
    assert in_installed_pymongo("pymongo.errors.ProtocolError(hierarchy)")
    assert in_installed_pymongo("pymongo.encryption")
    assert not in_installed_pymongo("pymongo.collection.Collection.find_in_the_future")
    assert not in_installed_pymongo("pymongo.no_such_module.Name")


def test_the_private_names_libraries_import_are_there() -> None:
    for module_name, name in PRIVATE_NAMES:
        assert hasattr(importlib.import_module(ours(module_name)), name), (module_name, name)
    mine = importlib.import_module("mongocore.common")
    assert mine._UUID_REPRESENTATIONS == pymongo.common._UUID_REPRESENTATIONS


# --- the checks can fail ------------------------------------------------------------------


def _params(source: str) -> list[inspect.Parameter]:
    namespace: dict[str, Any] = {}
    exec(f"def f{source}: pass", namespace)
    return _parameters(namespace["f"], skip_first=False)


@pytest.mark.parametrize(
    ("theirs", "mine", "expected"),
    [
        ("(a, b=1)", "(a, b=1)", None),
        ("(a, b=1)", "(a, b=1, *, extra=None)", None),
        ("(a, b=1)", "(a, *, b=1)", "`b` keyword-only"),
        ("(a, b=1)", "(a, b=2)", "`b` default `2` (pymongo `1`)"),
        ("(a, b=False)", "(a, b=0)", "`b` default `0` (pymongo `False`)"),
        ("(a, b=1)", "(a)", "no `b`"),
        ("(a, **kwargs)", "(a)", "no **kwargs"),
        ("(a)", "(a, b)", "adds `b`"),
        ("(a, c)", "(a, b=1, c=None)", "adds `b`; `c` default `None` (pymongo none)"),
        ("(a, c)", "(a, c, b=1)", None),
        ("(a, b, c)", "(a, c, b)", "positional order `a`, `c`, `b`"),
        ("(a, *, b)", "(a, *, b=None)", "`b` default `None` (pymongo none)"),
    ],
)
def test_signature_differences_are_seen(theirs: str, mine: str, expected: Optional[str]) -> None:
    assert signature_difference(_params(theirs), _params(mine)) == expected


def test_the_table_check_sees_a_new_a_changed_and_a_stale_difference() -> None:
    rows = {
        "pymongo.x.A.f": Row("no `b`", "to fix", "not yet pymongo's signature"),
        "pymongo.x.B": Row("not provided", "kept", "no such thing"),
    }
    assert check_in_step({"pymongo.x.A.f": "no `b`", "pymongo.x.B": "not provided"}, rows) == []
    problems = check_in_step({"pymongo.x.A.f": "no `c`", "pymongo.x.C": "not provided"}, rows)
    assert [p.split(":")[0] for p in problems] == [
        "differs otherwise now",
        "not listed",
        "no longer a difference, remove",
    ]


def test_the_table_is_parsed_from_its_section() -> None:
    text = (
        "# Page\n\n## Other\n\n| `pymongo.a.B` | not provided | kept | elsewhere |\n\n"
        f"{SECTION}\n\n| name | what differs | status | reason |\n| --- | --- | --- | --- |\n"
        "| `pymongo.x.A.f` | `b` keyword-only | to fix | not yet pymongo's signature |\n"
        "| `pymongo.x.B` | not provided | kept | a \\| in a cell |\n\n## After\n\n"
        "| `pymongo.y.C` | not provided | kept | after |\n"
    )
    assert listed_differences(text) == {
        "pymongo.x.A.f": Row("`b` keyword-only", "to fix", "not yet pymongo's signature"),
        "pymongo.x.B": Row("not provided", "kept", "a \\| in a cell"),
    }


def test_a_missing_name_and_a_changed_hierarchy_are_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(mongocore.results, "DeleteResult")
    monkeypatch.setattr(
        mongocore.errors, "CursorNotFound", type("CursorNotFound", (Exception,), {})
    )
    differences = compare().differences
    assert differences["pymongo.results.DeleteResult"] == "not provided"
    assert differences["pymongo.errors.CursorNotFound(hierarchy)"] == (
        "not a `OperationFailure`, `PyMongoError`"
    )


def iter_rows() -> Iterator[str]:  # pragma: no cover - a helper for editing the table
    """``python -c 'from tests.unit.test_pymongo_surface import iter_rows; ...'``: the
    rows for the differences found today, to paste (with reasons) into the table."""
    for name, differs in sorted(compare().differences.items()):
        yield row(name, differs)
