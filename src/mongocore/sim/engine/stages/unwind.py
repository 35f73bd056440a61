"""``$unwind`` (MongoDB manual, "$unwind"): a document per element of an array field,
the element in the array's place; ``includeArrayIndex`` adds the element's index (a
long; null where there was no array), ``preserveNullAndEmptyArrays`` keeps the
documents whose field is missing, null or an empty array (an empty array's field is
removed). A value that is not an array is a one-element array."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Optional

from bson import Int64

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.stages.common import check_path, type_name_of
from mongocore.sim.engine.stages.context import PipelineContext
from mongocore.sim.engine.stages.fields import get_field, remove_field, set_field
from mongocore.sim.engine.stages.registry import Stage, register
from mongocore.sim.engine.values import MISSING

__all__ = ["Unwind"]


class Unwind(Stage):
    def __init__(
        self, path: tuple[str, ...], index: Optional[tuple[str, ...]], preserve: bool
    ) -> None:
        self.path = path
        self.index = index
        self.preserve = preserve

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        path, index, preserve = self.path, self.index, self.preserve
        for doc in docs:
            value = get_field(doc, path)
            if isinstance(value, list):
                if not value:
                    if preserve:
                        out = remove_field(doc, path)
                        yield out if index is None else set_field(out, index, None)
                    continue
                for position, element in enumerate(value):
                    out = set_field(doc, path, element)
                    yield out if index is None else set_field(out, index, Int64(position))
            elif value is None or value is MISSING:
                if preserve:
                    yield doc if index is None else set_field(doc, index, None)
            else:
                yield doc if index is None else set_field(doc, index, None)


def _path(value: Any) -> tuple[str, ...]:
    if not isinstance(value, str):
        raise CommandError(
            28808, f"Expected a string as the path for $unwind stage, got {type_name_of(value)}"
        )
    if not value.startswith("$"):
        raise CommandError(
            28818, f"path option to $unwind stage should be prefixed with a '$': {value}"
        )
    check_path(value[1:])
    return tuple(value[1:].split("."))


@register("$unwind")
def parse_unwind(spec: Any, context: PipelineContext) -> Stage:
    if isinstance(spec, str):
        return Unwind(_path(spec), None, False)
    if not isinstance(spec, Mapping):
        raise CommandError(
            15981,
            "expected either a string or an object as specification for $unwind stage, got "
            + type_name_of(spec),
        )
    path: Optional[tuple[str, ...]] = None
    index: Optional[tuple[str, ...]] = None
    preserve = False
    for name, value in spec.items():
        if name == "path":
            path = _path(value)
        elif name == "preserveNullAndEmptyArrays":
            if not isinstance(value, bool):
                raise CommandError(
                    28809,
                    "expected a boolean for the preserveNullAndEmptyArrays option to $unwind"
                    f" stage, got {type_name_of(value)}",
                )
            preserve = value
        elif name == "includeArrayIndex":
            if not isinstance(value, str) or not value:
                raise CommandError(
                    28810,
                    "expected a non-empty string for the includeArrayIndex  option to $unwind"
                    f" stage, got {type_name_of(value)}",
                )
            if value.startswith("$"):
                raise CommandError(
                    28822,
                    "includeArrayIndex option to $unwind stage should not be prefixed with a"
                    f" '$': {value}",
                )
            check_path(value)
            index = tuple(value.split("."))
        else:
            raise CommandError(28811, f"unrecognized option to $unwind stage: {name}")
    if path is None:
        raise CommandError(28812, "no path specified to $unwind stage")
    return Unwind(path, index, preserve)
