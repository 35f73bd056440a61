"""Time dilation for unified tests whose outcome is decided by durations.

A test of timeouts races a fail point's block against a timeout: the Client Side
Operations Timeout suite blocks a command 125 ms against a socketTimeoutMS of 100, or
60 ms against a timeoutMS of 100. On a machine whose two cores run the simulated
deployments, the client and the other test worker at once, a thread often waits
longer than such a margin for its turn, and the test then depends on the machine's
load, not on the driver.

:func:`dilate` multiplies every duration of a test by the same factor: the
milliseconds of every ``...MS`` option and argument (timeoutMS, blockTimeMS,
socketTimeoutMS, maxTimeMS, maxAwaitTimeMS, wTimeoutMS, heartbeatFrequencyMS, ...) and
of a command's ``writeConcern.wtimeout``, the bounds an expectation puts on one
(``maxTimeMS: {$$lte: 450}``), and the ``ms`` of the test runner's ``wait``. Every
ratio and every order between two durations is kept, so what happens first, what
times out and what the command carries are upstream's; only the margins widen.
The data is left alone: initialData, outcome, an
expected result, and the filters, documents, updates and pipelines of operations.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping
from typing import Any

#: Durations in milliseconds whose names do not end in MS: a command's write concern.
_OTHER_DURATIONS = frozenset({"wtimeout"})
#: What holds documents, not options: never scaled, at any depth.
_DATA = frozenset(
    {"filter", "document", "documents", "update", "replacement", "pipeline", "expectResult"}
)
#: The operators an expectation compares a number with.
_BOUNDS = frozenset({"$$lte", "$$lt", "$$gte", "$$gt"})


def dilate(
    document: Mapping[str, Any], test: Mapping[str, Any], factor: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Copies of the file and the test with every duration ``factor`` times longer."""
    if factor < 1:
        raise ValueError(f"the dilation factor must be at least 1, not {factor}")
    scaled_document = copy.deepcopy(dict(document))
    scaled_test = copy.deepcopy(dict(test))
    if factor == 1:
        return scaled_document, scaled_test
    entities = scaled_document.get("createEntities")
    if entities is not None:
        _scale(entities, factor)
    for key, value in scaled_test.items():
        if key not in ("outcome", "description", "runOnRequirements"):
            _scale(value, factor)
    return scaled_document, scaled_test


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _scale(value: Any, factor: int) -> None:
    if isinstance(value, list):
        for item in value:
            _scale(item, factor)
        return
    if not isinstance(value, MutableMapping):
        return
    if value.get("name") == "wait" and value.get("object") == "testRunner":
        arguments = value.get("arguments")
        if isinstance(arguments, MutableMapping) and _is_number(arguments.get("ms")):
            arguments["ms"] = arguments["ms"] * factor
    for key, item in value.items():
        if key in _DATA:
            continue
        if isinstance(key, str) and (key.endswith("MS") or key in _OTHER_DURATIONS):
            if _is_number(item):
                value[key] = item * factor
                continue
            if isinstance(item, MutableMapping):
                for operator in _BOUNDS & set(item):
                    if _is_number(item[operator]):
                        item[operator] = item[operator] * factor
                continue
        _scale(item, factor)
