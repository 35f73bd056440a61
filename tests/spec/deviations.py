"""Read specs/deviations.toml: the reviewed rules that make a spec test deviate from
its upstream file ([[deviation]]) or not apply ([[not_applicable]]).

An entry never lists test ids. It selects tests by what they do, through a ``when``
table of conditions over the test file and the test case: every condition must hold,
and a list value means "any of these". A new upstream file of the same shape is
therefore treated the same way with no change to the list.

Conditions (see :data:`CONDITIONS`):

- ``all = true``: every test of the suite (the suite's format itself encodes the
  contradicted rule).
- ``entity = [kinds]``: the file or the test creates an entity of one of these kinds.
- ``entity_option = ["kind.name"]``: the file or the test creates an entity of that
  kind with that option in its options document (``sessionOptions``,
  ``databaseOptions``, ``collectionOptions``, ``bucketOptions``, ...):
  ``"session.defaultTimeoutMS"``.
- ``create_option = [names]``: a collection the test creates takes that option: a
  ``createOptions`` of its initialData, or an argument of a createCollection.
- ``operation = [names]``: the test runs an operation of that name, or
  ``"entityKind.name"`` for an operation on an entity of that kind.
- ``pipeline_stage = [stages]``: an operation's ``pipeline`` argument has such a stage.
- ``query_operator = [keys]``: the key appears anywhere in an operation's arguments,
  at any depth: a query or update operator, an aggregation expression, a key of a
  nested document (such as the write models of a bulkWrite's ``requests``).
- ``argument = [names]``: an operation is given an argument of that name, a key at
  the top level of its ``arguments`` (an option of the operation itself, never a key
  inside a filter or a document); or ``"operationName.name"`` for that argument of an
  operation of that name only (``"createCollection.capped"``).
- ``fail_point = [names]``: the test configures that fail point.
- ``fail_point_label = [labels]``: a fail point the test configures returns one of
  these error labels (its ``data.errorLabels``).
- ``fail_point_command = [names]``: a failCommand fail point the test configures fails
  one of these commands (its ``data.failCommands``).
- ``max_server_version_below = "x.y"``: every runOnRequirement that applies (the
  test's, else the file's) has a maxServerVersion below this version.
- ``min_server_version_at_least = "x.y"``: every runOnRequirement that applies has a
  minServerVersion of at least this version.
- ``requires = [fields]``: every runOnRequirement that applies requires one of these
  (the field is set and not false: ``csfle: true``, or an object).
- ``uri_option = [names]``: the test's ``uri``, or the ``uriOptions`` of a client
  entity of the file or the test, sets one of these options.
- ``auth_mechanism = [names]``: the test's uri or credential names this mechanism, or
  (unified tests) a client entity's uriOptions or every runOnRequirement that applies
  (its ``authMechanism``) does.
- ``server_parameter = [names]``: every runOnRequirement that applies asks for one of
  these server parameters (in its ``serverParameters``).
- ``uri_password = true|false``: the test's uri does (or does not) carry a password
  in its userinfo (``user:password@``).
- ``valid = true|false``: the connection-string case's ``valid`` field.
- ``skip_reason = true|false``: upstream marks the test (or its file) skipped, with
  a ``skipReason``.
- ``seed_shape = "name"``: the unified test has the shape the seed transformation of
  that name (tests/spec/unified/seed.py) changes; see ``seed.SHAPES``.

Every entry has ``suite`` (a folder under MONGOCORE_SPEC_TESTS, or a list of them, or
``"unified"``: every file in the unified test format, the one with a
``schemaVersion``, whatever its suite, less the folders listed in ``except_suites``),
``when`` and ``selects`` (the rule in words). A [[deviation]] also has ``seed``,
``clause``, ``upstream`` and ``asserted``; a [[not_applicable]] has ``reason``.
In a full strict run (CI) an entry that selected no test is an error, so the list
cannot rot; how many tests each entry selected is printed at the end of the run.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qsl, unquote

from tests.spec.unified import seed

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FILE = Path(__file__).resolve().parents[2] / "specs" / "deviations.toml"
KINDS = ("deviation", "not_applicable")

#: (kind, entry index) -> how many distinct tests the entry selected in this run.
SELECTED: Counter[tuple[str, int]] = Counter()
_SEEN: set[tuple[str, int, str, str]] = set()

Condition = Callable[[Any, Mapping[str, Any], Mapping[str, Any]], bool]


# --- walking a test ----------------------------------------------------------------------


def _operations(test: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every operation of a unified test, those nested in runOnThread included."""
    stack = list(test.get("operations") or [])
    while stack:
        operation = stack.pop(0)
        if not isinstance(operation, Mapping):
            continue
        yield operation
        nested = (operation.get("arguments") or {}).get("operation")
        if operation.get("name") == "runOnThread" and isinstance(nested, Mapping):
            stack.append(nested)


def _entity_definitions(
    document: Mapping[str, Any], test: Mapping[str, Any]
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    definitions: list[Any] = list(document.get("createEntities") or [])
    for operation in _operations(test):
        if operation.get("object") == "testRunner" and operation.get("name") == "createEntities":
            definitions.extend((operation.get("arguments") or {}).get("entities") or [])
    for definition in definitions:
        if isinstance(definition, Mapping) and definition:
            kind, spec = next(iter(definition.items()))
            yield str(kind), spec if isinstance(spec, Mapping) else {}


def _entity_kinds(document: Mapping[str, Any], test: Mapping[str, Any]) -> dict[str, str]:
    return {str(spec.get("id")): kind for kind, spec in _entity_definitions(document, test)}


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _keys(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _keys(item)


def _requirements(
    document: Mapping[str, Any], test: Mapping[str, Any]
) -> Sequence[Mapping[str, Any]]:
    own = test.get("runOnRequirements") if test is not document else None
    return list(own or document.get("runOnRequirements") or [])


def _version(text: Any) -> tuple[int, ...]:
    parts = [int("".join(c for c in p if c.isdigit()) or 0) for p in str(text).split(".")[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


def _uri_options(test: Mapping[str, Any]) -> dict[str, str]:
    uri = test.get("uri")
    if not isinstance(uri, str) or "?" not in uri:
        return {}
    query = uri.split("?", 1)[1]
    return {unquote(k).lower(): v for k, v in parse_qsl(query, keep_blank_values=True)}


def _as_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


# --- the conditions ----------------------------------------------------------------------


def _all(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    if value is not True:
        raise ValueError("the condition 'all' takes only the value true")
    return True


def _entity(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    wanted = set(_as_list(value))
    return any(kind in wanted for kind, _ in _entity_definitions(document, test))


def _entity_option(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    wanted = set(_as_list(value))
    for kind, spec in _entity_definitions(document, test):
        options = spec.get(f"{kind}Options")
        if isinstance(options, Mapping) and any(f"{kind}.{key}" in wanted for key in options):
            return True
    return False


def _create_option(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    wanted = set(_as_list(value))
    for data in document.get("initialData") or []:
        options = data.get("createOptions") if isinstance(data, Mapping) else None
        if isinstance(options, Mapping) and wanted & set(map(str, options)):
            return True
    for operation in _operations(test):
        arguments = operation.get("arguments")
        if (
            operation.get("name") == "createCollection"
            and isinstance(arguments, Mapping)
            and wanted & set(map(str, arguments))
        ):
            return True
    return False


def _operation(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    wanted = set(_as_list(value))
    kinds = _entity_kinds(document, test)
    for operation in _operations(test):
        name = str(operation.get("name"))
        obj = str(operation.get("object"))
        if name in wanted or f"{kinds.get(obj, obj)}.{name}" in wanted:
            return True
    return False


def _pipeline_stage(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    wanted = set(_as_list(value))
    for operation in _operations(test):
        pipeline = (operation.get("arguments") or {}).get("pipeline")
        for stage in pipeline if isinstance(pipeline, (list, tuple)) else ():
            if isinstance(stage, Mapping) and wanted & set(stage):
                return True
    return False


def _query_operator(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    wanted = set(_as_list(value))
    return any(
        key in wanted
        for operation in _operations(test)
        for key in _keys(operation.get("arguments") or {})
    )


def _argument(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    wanted = set(_as_list(value))
    for operation in _operations(test):
        arguments = operation.get("arguments")
        if not isinstance(arguments, Mapping):
            continue
        name = str(operation.get("name"))
        # Only the top-level keys: the same name deeper down (a field of a filter or a
        # document) is data, not an option the operation was given.
        if any(key in wanted or f"{name}.{key}" in wanted for key in map(str, arguments)):
            return True
    return False


def _fail_point(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    wanted = set(_as_list(value))
    names = set()
    for operation in _operations(test):
        point = (operation.get("arguments") or {}).get("failPoint")
        if operation.get("object") == "testRunner" and isinstance(point, Mapping):
            names.add(str(point.get("configureFailPoint")))
    if isinstance(test.get("failPoint"), Mapping):  # CMAP and legacy formats
        names.add(str(test["failPoint"].get("configureFailPoint")))
    return bool(wanted & names)


def _fail_point_label(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    wanted = set(_as_list(value))
    for operation in _operations(test):
        point = (operation.get("arguments") or {}).get("failPoint")
        if operation.get("object") == "testRunner" and isinstance(point, Mapping):
            labels = (point.get("data") or {}).get("errorLabels") or []
            if wanted & {str(label) for label in labels}:
                return True
    return False


def _fail_point_command(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    wanted = set(_as_list(value))
    for operation in _operations(test):
        point = (operation.get("arguments") or {}).get("failPoint")
        if operation.get("object") == "testRunner" and isinstance(point, Mapping):
            commands = (point.get("data") or {}).get("failCommands") or []
            if wanted & {str(command) for command in commands}:
                return True
    return False


def _max_server_version_below(
    value: Any, document: Mapping[str, Any], test: Mapping[str, Any]
) -> bool:
    requirements = _requirements(document, test)
    return bool(requirements) and all(
        "maxServerVersion" in r and _version(r["maxServerVersion"]) < _version(value)
        for r in requirements
    )


def _min_server_version_at_least(
    value: Any, document: Mapping[str, Any], test: Mapping[str, Any]
) -> bool:
    requirements = _requirements(document, test)
    return bool(requirements) and all(
        "minServerVersion" in r and _version(r["minServerVersion"]) >= _version(value)
        for r in requirements
    )


def _requires(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    wanted = _as_list(value)
    requirements = _requirements(document, test)
    return bool(requirements) and all(
        any(r.get(field) not in (None, False) for field in wanted) for r in requirements
    )


def _uri_option(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    options = set(_uri_options(test))
    for kind, spec in _entity_definitions(document, test):
        if kind == "client":
            options.update(str(k).lower() for k in spec.get("uriOptions") or {})
    return any(name.lower() in options for name in _as_list(value))


def _auth_mechanism(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    wanted = {name.upper() for name in _as_list(value)}
    mechanisms = {str(_uri_options(test).get("authmechanism", "")).upper()}
    credential = test.get("credential")
    if isinstance(credential, Mapping):
        mechanisms.add(str(credential.get("mechanism") or "").upper())
    for kind, spec in _entity_definitions(document, test):
        if kind == "client":
            options = {str(k).lower(): v for k, v in (spec.get("uriOptions") or {}).items()}
            mechanisms.add(str(options.get("authmechanism", "")).upper())
    requirements = _requirements(document, test)
    if requirements and all("authMechanism" in r for r in requirements):
        mechanisms.update(str(r["authMechanism"]).upper() for r in requirements)
    return bool(wanted & mechanisms)


def _server_parameter(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    wanted = set(_as_list(value))
    requirements = _requirements(document, test)
    return bool(requirements) and all(
        wanted & {str(name) for name in (r.get("serverParameters") or {})} for r in requirements
    )


def _uri_password(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    uri = str(test.get("uri", ""))
    authority = uri.split("://", 1)[-1].split("/", 1)[0].split("?", 1)[0]
    userinfo = authority.rsplit("@", 1)[0] if "@" in authority else ""
    return (":" in userinfo) is bool(value)


def _valid(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    return "valid" in test and bool(test["valid"]) is bool(value)


def _skip_reason(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    skipped = bool(test.get("skipReason") or document.get("skipReason"))
    return skipped is bool(value)


def _seed_shape(value: Any, document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    shape = seed.SHAPES.get(str(value))
    if shape is None:
        raise ValueError(f"unknown seed_shape {value!r}; known: {sorted(seed.SHAPES)}")
    return shape(document, test)


CONDITIONS: dict[str, Condition] = {
    "all": _all,
    "entity": _entity,
    "entity_option": _entity_option,
    "create_option": _create_option,
    "operation": _operation,
    "pipeline_stage": _pipeline_stage,
    "query_operator": _query_operator,
    "argument": _argument,
    "fail_point": _fail_point,
    "fail_point_label": _fail_point_label,
    "fail_point_command": _fail_point_command,
    "max_server_version_below": _max_server_version_below,
    "min_server_version_at_least": _min_server_version_at_least,
    "requires": _requires,
    "server_parameter": _server_parameter,
    "uri_option": _uri_option,
    "auth_mechanism": _auth_mechanism,
    "uri_password": _uri_password,
    "valid": _valid,
    "skip_reason": _skip_reason,
    "seed_shape": _seed_shape,
}


# --- the entries -------------------------------------------------------------------------


@cache
def entries() -> dict[str, list[dict[str, Any]]]:
    """The file's entries by kind, each checked for its fields and conditions."""
    with open(FILE, "rb") as f:
        data = tomllib.load(f)
    unknown_kinds = set(data) - set(KINDS)
    if unknown_kinds:
        raise ValueError(f"{FILE}: unknown tables {sorted(unknown_kinds)}")
    for kind in KINDS:
        for entry in data.get(kind, []):
            need = {"suite", "when", "selects"}
            need |= (
                {"seed", "clause", "upstream", "asserted"} if kind == "deviation" else {"reason"}
            )
            missing = need - entry.keys()
            if missing:
                raise ValueError(f"{FILE}: a [[{kind}]] entry lacks {sorted(missing)}: {entry}")
            if "tests" in entry:
                raise ValueError(
                    f"{FILE}: [[{kind}]] {entry['selects']!r} lists tests; entries select "
                    "tests by rule (when = {{...}}), never by id"
                )
            when = entry["when"]
            if not isinstance(when, Mapping) or not when:
                raise ValueError(f"{FILE}: [[{kind}]] {entry['selects']!r} has an empty 'when'")
            unknown = set(when) - set(CONDITIONS)
            if unknown:
                raise ValueError(
                    f"{FILE}: [[{kind}]] {entry['selects']!r} uses unknown conditions "
                    f"{sorted(unknown)}; known: {sorted(CONDITIONS)}"
                )
    return {kind: data.get(kind, []) for kind in KINDS}


def _suites(entry: Mapping[str, Any]) -> list[str]:
    return _as_list(entry["suite"])


#: An entry's ``suite`` that covers every unified-format file (see the module's text).
UNIFIED = "unified"


def in_scope(entry: Mapping[str, Any], suite: str, document: Mapping[str, Any]) -> bool:
    """Is this suite's file one the entry covers?"""
    if UNIFIED in _suites(entry) and "schemaVersion" in document:
        return suite not in _as_list(entry.get("except_suites", []))
    return suite in _suites(entry)


def _scope(entry: Mapping[str, Any]) -> str:
    """The entry's suites in words, for the report."""
    suites = ", ".join(_suites(entry))
    excepted = _as_list(entry.get("except_suites", []))
    return f"{suites} except {', '.join(excepted)}" if excepted else suites


def matches(entry: Mapping[str, Any], document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """Does the entry's rule select this test?"""
    return all(CONDITIONS[name](value, document, test) for name, value in entry["when"].items())


def _select(
    kind: str,
    suite: str,
    document: Mapping[str, Any],
    test: Mapping[str, Any],
    name: str | None,
) -> list[dict[str, Any]]:
    found = []
    for index, entry in enumerate(entries()[kind]):
        if in_scope(entry, suite, document) and matches(entry, document, test):
            seen = (kind, index, suite, name or _identity(document, test))
            if seen not in _SEEN:
                _SEEN.add(seen)
                SELECTED[(kind, index)] += 1
            found.append(entry)
    return found


def _identity(document: Mapping[str, Any], test: Mapping[str, Any]) -> str:
    """A name for counting a test once however often it is looked up: the file's and
    the test's descriptions (or, for connection-string suites, the case's uri)."""
    own = f"{test.get('description', '')}:{test.get('uri', '')}" if test is not document else ""
    return f"{document.get('description', '')}:{own}"


def deviations(
    suite: str, document: Mapping[str, Any], test: Mapping[str, Any], name: str | None = None
) -> list[dict[str, Any]]:
    """Every [[deviation]] entry whose rule selects this test, in file order. ``name``
    (e.g. the test id) only tells tests apart when counting what each rule selected."""
    return _select("deviation", suite, document, test, name)


def deviation(
    suite: str, document: Mapping[str, Any], test: Mapping[str, Any], name: str | None = None
) -> dict[str, Any] | None:
    """The one [[deviation]] entry selecting this test (an error if several do)."""
    found = deviations(suite, document, test, name)
    if len(found) > 1:
        raise ValueError(f"several [[deviation]] entries select one test: {found}")
    return found[0] if found else None


def not_applicable(
    suite: str, document: Mapping[str, Any], test: Mapping[str, Any], name: str | None = None
) -> dict[str, Any] | None:
    """The first [[not_applicable]] entry whose rule selects this test, if any."""
    found = _select("not_applicable", suite, document, test, name)
    return found[0] if found else None


def unused() -> list[tuple[str, dict[str, Any]]]:
    """Entries that selected no test in this run."""
    return [
        (kind, entry)
        for kind in KINDS
        for index, entry in enumerate(entries()[kind])
        if SELECTED[(kind, index)] == 0
    ]


def report() -> Iterable[str]:
    """One line per entry: how many tests its rule selected in this run."""
    for kind in KINDS:
        for index, entry in enumerate(entries()[kind]):
            yield f"[[{kind}]] {_scope(entry)}: {entry['selects']}: {SELECTED[(kind, index)]} tests"
