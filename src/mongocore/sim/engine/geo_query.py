"""The geo query operators and the ``$geoNear`` stage, as a 7.0 server runs them
(MongoDB manual, "Geospatial Query Operators", "$geoNear (aggregation)").

- ``$geoWithin`` (and its legacy name ``$within``): ``$geometry`` (a Polygon or
  MultiPolygon), ``$centerSphere`` (radians), and the planar ``$box``, ``$center`` and
  ``$polygon``. No index is needed.
- ``$geoIntersects``: ``$geometry`` of any GeoJSON type. No index is needed.
- ``$near`` and ``$nearSphere`` (and ``$geoNear`` as a query operator, the same as
  ``$near``): a GeoJSON point (``$geometry``, distances in meters) or a legacy pair
  (radians on the sphere, planar units with a 2d index's ``$near``), with
  ``$minDistance`` and ``$maxDistance``; results come nearest first. They need an
  index: a GeoJSON point a 2dsphere index on the field, a legacy pair a 2d or 2dsphere
  one; without it the query fails with NoQueryExecutionPlans (291, "unable to find
  index for $geoNear query") as on a server. ``$meta: "geoNearDistance"`` and
  ``"geoNearPoint"`` give each result's distance and location.
- ``$geoNear``: near, distanceField (required), spherical, maxDistance, minDistance,
  query, includeLocs, distanceMultiplier and key; the index is ``key``'s or the
  collection's only geo index.

:class:`GeoSearch` holds the collection's indexes (what ``$near`` needs); its
:meth:`~GeoSearch.field_operators` go into an
:class:`~mongocore.sim.engine.context.OperatorTable` (search.py builds it).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Callable, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.context import FieldOperator, MatchContext, ValueTest
from mongocore.sim.engine.geo_indexes import FLAT, SPHERE, FlatIndex, geo_index_for
from mongocore.sim.engine.geo_relations import (
    Region,
    flat_distance,
    intersects,
    sphere_distance,
    within,
)
from mongocore.sim.engine.geometry import (
    Box,
    Cap,
    Circle,
    Collection,
    FlatPolygon,
    GeoError,
    Point,
    Polygon,
    Shape,
    parse_geojson,
    parse_legacy_point,
    parse_stored,
)
from mongocore.sim.engine.indexes import Index
from mongocore.sim.engine.matcher import Node, compile_filter
from mongocore.sim.engine.paths import Document, candidates, split
from mongocore.sim.engine.query_operators import bad_value
from mongocore.sim.engine.render import render
from mongocore.sim.engine.spherical import EARTH_RADIUS_METERS
from mongocore.sim.engine.stages.context import PipelineContext
from mongocore.sim.engine.stages.registry import Stage, StageProvider
from mongocore.sim.engine.values import MISSING, is_number, numeric_value

__all__ = ["GeoNearStage", "GeoSearch"]


def _geo_error(error: GeoError) -> CommandError:
    return bad_value(error.reason)


def _stored_shapes(value: Any) -> list[tuple[Shape, Any]]:
    """The geometries a stored value holds, each with the value it came from (an array
    of geometries holds several); values that are no geometry are left out."""
    if value is MISSING or value is None:
        return []
    items = value if isinstance(value, list) and value and not is_number(value[0]) else [value]
    out = []
    for item in items:
        try:
            out.append((parse_stored(item), item))
        except GeoError:
            continue
    return out


def _flat_locations(value: Any) -> list[tuple[Point, Any]]:
    """The legacy pairs a 2d index takes from a value (one pair, or an array of them)."""
    if not isinstance(value, (list, Mapping)) or not value:
        return []
    items = list(value.values()) if isinstance(value, Mapping) else value
    locations = [value] if is_number(items[0]) else items
    out = []
    for location in locations:
        try:
            out.append((parse_legacy_point(location), location))
        except GeoError:
            continue
    return out


def _pair(value: Any, what: str) -> tuple[float, float]:
    try:
        point = parse_legacy_point(value, stored=False)
    except GeoError as exc:
        raise _geo_error(exc) from exc
    return point.x, point.y


def _radius(value: Any) -> float:
    if not is_number(value) or not float(numeric_value(value)) >= 0:
        raise bad_value("radius must be a non-negative number")
    return float(numeric_value(value))


def parse_region(operator: str, argument: Any) -> Region:
    """The region of ``$geoWithin`` (or ``$within``)."""
    if not isinstance(argument, Mapping) or not argument:
        raise bad_value(f"{operator} operator requires a geometry: {render(argument)}")
    shapes = [name for name in argument if name != "$uniqueDocs"]
    if len(shapes) != 1:
        raise bad_value(f"{operator} operator takes exactly one geometry: {render(argument)}")
    name = str(shapes[0])
    value = argument[name]
    if name == "$geometry":
        if not isinstance(value, Mapping):
            raise bad_value(f"geometry must be an object: {render(value)}")
        try:
            shape = parse_geojson(value)
        except GeoError as exc:
            raise _geo_error(exc) from exc
        if isinstance(shape, Polygon) or (
            isinstance(shape, Collection) and shape.kind == "MultiPolygon"
        ):
            return shape
        raise bad_value(f"{operator} not supported with provided geometry: {render(argument)}")
    if not isinstance(value, list):
        raise bad_value(f"{name} requires an array: {render(value)}")
    if name == "$box":
        if len(value) != 2:
            raise bad_value("$box requires two points")
        (x1, y1), (x2, y2) = _pair(value[0], name), _pair(value[1], name)
        return Box((min(x1, x2), min(y1, y2)), (max(x1, x2), max(y1, y2)))
    if name in ("$center", "$centerSphere"):
        if len(value) != 2:
            raise bad_value("Only 2 fields allowed for circular region")
        centre = _pair(value[0], name)
        radius = _radius(value[1])
        if name == "$center":
            return Circle(centre, radius)
        point = Point(*centre)
        if not point.on_sphere:
            raise bad_value(
                f"longitude/latitude is out of bounds, lng: {centre[0]:.6g} lat: {centre[1]:.6g}"
            )
        return Cap(point, radius)
    if name == "$polygon":
        points = [_pair(v, name) for v in value]
        if len(points) < 3:
            raise bad_value("Polygon must have at least 3 points")
        return FlatPolygon(points)
    raise bad_value(f"unknown geo specifier: {name}: {render(value)}")


def _within_operator(operator: str) -> FieldOperator:
    def parse(argument: Any, spec: Mapping[str, Any], context: MatchContext) -> ValueTest:
        region = parse_region(operator, argument)

        def test(value: Any) -> bool:
            return any(within(region, shape) for shape, _ in _stored_shapes(value))

        return test

    return FieldOperator(parse=parse, expand_leaf=False)


def _intersects_parse(argument: Any, spec: Mapping[str, Any], context: MatchContext) -> ValueTest:
    if not isinstance(argument, Mapping) or "$geometry" not in argument:
        raise bad_value(f"$geoIntersect requires a $geometry: {render(argument)}")
    geometry = argument["$geometry"]
    if not isinstance(geometry, Mapping):
        raise bad_value(f"geometry must be an object: {render(geometry)}")
    try:
        query = parse_geojson(geometry)
    except GeoError as exc:
        raise _geo_error(exc) from exc

    def test(value: Any) -> bool:
        return any(intersects(query, shape) for shape, _ in _stored_shapes(value))

    return test


# -- near ---------------------------------------------------------------------------------


@dataclass
class NearQuery:
    """A parsed ``$near``/``$nearSphere``: the point, whether it is GeoJSON, whether the
    distance is spherical, and the bounds (in the query's units)."""

    point: Point
    geojson: bool
    sphere: bool
    min_distance: float = 0.0
    max_distance: float = float("inf")


def _distance_bound(name: str, value: Any) -> float:
    if not is_number(value):
        raise bad_value(f"{name} must be a number")
    number = float(numeric_value(value))
    if not number >= 0:
        raise bad_value(f"{name} must be non-negative")
    return number


def parse_near(operator: str, argument: Any, spec: Mapping[str, Any]) -> NearQuery:
    """``{$near: ..., $maxDistance: ..., $minDistance: ...}`` as the server parses it."""
    bounds: dict[str, Any] = {
        k: v for k, v in spec.items() if k in ("$maxDistance", "$minDistance")
    }
    if isinstance(argument, Mapping) and "$geometry" in argument:
        geometry = argument["$geometry"]
        for name, value in argument.items():
            if name in ("$maxDistance", "$minDistance"):
                bounds[str(name)] = value
            elif name != "$geometry":
                raise bad_value(f"invalid argument in geo near query: {name}")
        if not isinstance(geometry, Mapping) or geometry.get("type") != "Point":
            raise bad_value(f"$near requires a point, given {render(geometry)}")
        try:
            shape = parse_geojson(geometry)
        except GeoError as exc:
            raise _geo_error(exc) from exc
        assert isinstance(shape, Point)
        near = NearQuery(shape, geojson=True, sphere=True)
    else:
        if (
            isinstance(argument, list)
            and len(argument) == 3
            and all(is_number(v) for v in argument)
        ):
            bounds.setdefault("$maxDistance", argument[2])
            argument = argument[:2]
        if not isinstance(argument, (list, Mapping)):
            raise bad_value(f"near must be first in: {render(dict(spec))}")
        x, y = _pair(argument, operator)
        near = NearQuery(Point(x, y, legacy=True), geojson=False, sphere=operator == "$nearSphere")
    if "$maxDistance" in bounds:
        near.max_distance = _distance_bound("$maxDistance", bounds["$maxDistance"])
    if "$minDistance" in bounds:
        near.min_distance = _distance_bound("$minDistance", bounds["$minDistance"])
    return near


class _Distances:
    """The distance of each document from a near query's point, through an index."""

    def __init__(self, near: NearQuery, index: Index, path: str) -> None:
        self.near = near
        self.flat = isinstance(index, FlatIndex)
        self.parts = split(path)
        self._cache: dict[int, tuple[Document, Optional[tuple[float, Any]]]] = {}

    def _measure(self, doc: Document) -> Optional[tuple[float, Any]]:
        best: Optional[tuple[float, Any]] = None
        for value, _ in candidates(doc, self.parts, expand_leaf=False):
            if self.flat:
                located: list[tuple[Shape, Any]] = list(_flat_locations(value))
            else:
                located = _stored_shapes(value)
            for shape, raw in located:
                if self.flat and not self.near.sphere:
                    measured = flat_distance(self.near.point, shape)
                else:
                    measured = sphere_distance(self.near.point, shape)
                    if measured is not None and self.near.geojson:
                        measured *= EARTH_RADIUS_METERS
                if measured is not None and (best is None or measured < best[0]):
                    best = (measured, raw)
        return best

    def of(self, doc: Document) -> Optional[tuple[float, Any]]:
        """(distance, the stored location it was measured to), or None."""
        cached = self._cache.get(id(doc))
        if cached is not None and cached[0] is doc:
            return cached[1]
        result = self._measure(doc)
        self._cache[id(doc)] = (doc, result)
        return result

    def within_bounds(self, doc: Document) -> bool:
        result = self.of(doc)
        if result is None:
            return False
        return self.near.min_distance <= result[0] <= self.near.max_distance


def _no_index(namespace: str) -> CommandError:
    return CommandError(
        291,
        f"error processing query: ns={namespace} planner returned error :: caused by :: unable"
        " to find index for $geoNear query",
    )


class GeoSearch:
    """The geo operators of one collection (module doc)."""

    def __init__(self, indexes: Callable[[], Iterable[Index]], namespace: str) -> None:
        self._indexes = indexes
        self.namespace = namespace

    def near_index(self, near: NearQuery, path: str) -> Index:
        kinds = (SPHERE,) if near.geojson else (FLAT, SPHERE)
        index = geo_index_for(self._indexes(), path, kinds)
        if index is None:
            raise _no_index(self.namespace)
        return index

    def _near_operator(self, operator: str) -> FieldOperator:
        def node(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
            near = parse_near(operator, argument, spec)
            if context.in_elem_match:
                raise bad_value("geoNear must be top-level expr")
            index = self.near_index(near, path)
            distances = _Distances(near, index, path)
            annotations = context.annotations
            if annotations is not None:
                annotations.special.append(("near", context.enclosing))
                annotations.meta["geoNearDistance"] = lambda doc: _first(distances.of(doc))
                annotations.meta["geoNearPoint"] = lambda doc: _second(distances.of(doc))
                annotations.order = lambda doc: _first(distances.of(doc))
            return lambda doc, details: distances.within_bounds(doc)

        return FieldOperator(node=node)

    def field_operators(self) -> dict[str, FieldOperator]:
        """``$geoWithin``, ``$within``, ``$geoIntersects``, ``$near``, ``$nearSphere``,
        ``$geoNear``, and the ``$maxDistance``/``$minDistance`` that go with them."""
        return {
            "$geoWithin": _within_operator("$geoWithin"),
            "$within": _within_operator("$within"),
            "$geoIntersects": FieldOperator(parse=_intersects_parse, expand_leaf=False),
            "$near": self._near_operator("$near"),
            "$nearSphere": self._near_operator("$nearSphere"),
            "$geoNear": self._near_operator("$near"),
            "$maxDistance": FieldOperator(node=_bound_operator("$maxDistance")),
            "$minDistance": FieldOperator(node=_bound_operator("$minDistance")),
        }

    # -- the $geoNear stage ---------------------------------------------------------------

    def geo_near_parser(self) -> StageProvider:
        """A parser of the ``$geoNear`` stage for this collection (a StageProvider: the
        command layer puts it in PipelineContext.providers, the registry's slot for the
        stage); its ``query`` compiles with the pipeline's collation, ``let`` and
        operator table."""

        def parse(argument: Any, context: PipelineContext) -> Stage:
            return GeoNearStage(argument, self, context.match_context())

        return parse


def _first(result: Optional[tuple[float, Any]]) -> Any:
    return MISSING if result is None else result[0]


def _second(result: Optional[tuple[float, Any]]) -> Any:
    return MISSING if result is None else result[1]


def _bound_operator(name: str) -> Callable[[str, Any, Mapping[str, Any], MatchContext], Node]:
    def node(path: str, argument: Any, spec: Mapping[str, Any], context: MatchContext) -> Node:
        if not any(op in spec for op in ("$near", "$nearSphere", "$geoNear")):
            raise bad_value(f"{name} must be used with $near or $nearSphere")
        return lambda doc, details: True  # the near operator applies it

    return node


# -- $geoNear -----------------------------------------------------------------------------


def _string_option(options: Mapping[str, Any], name: str, code: int, message: str) -> Optional[str]:
    if name not in options:
        return None
    value = options[name]
    if not isinstance(value, str):
        raise CommandError(code, message)
    return value


def _set_path(doc: Document, path: str, value: Any) -> Document:
    out = dict(doc)
    parts = path.split(".")
    target = out
    for part in parts[:-1]:
        child = target.get(part)
        child = dict(child) if isinstance(child, Mapping) else {}
        target[part] = child
        target = child
    target[parts[-1]] = value
    return out


class GeoNearStage(Stage):
    """A parsed ``$geoNear`` (module doc)."""

    name = "$geoNear"
    blocking = True

    def __init__(self, options: Any, search: GeoSearch, context: MatchContext) -> None:
        if not isinstance(options, Mapping):
            raise CommandError(10065, "invalid parameter: expected an object ($geoNear)")
        for removed in ("limit", "num"):
            if removed in options:
                raise CommandError(
                    50858,
                    f"$geoNear no longer supports the '{removed}' parameter. Use a $limit"
                    " stage instead.",
                )
        if "collation" in options:
            raise CommandError(
                40227,
                "$geoNear does not accept the 'collation' parameter. Instead, specify a collation"
                " for the entire aggregation command.",
            )
        near = options.get("near")
        if not isinstance(near, (list, Mapping)):
            raise CommandError(16605, "$geoNear requires a 'near' option as an Array")
        distance_field = _string_option(
            options,
            "distanceField",
            16606,
            "$geoNear requires a 'distanceField' option as a String",
        )
        if distance_field is None:
            raise CommandError(16606, "$geoNear requires a 'distanceField' option as a String")
        self.distance_field = distance_field
        self.include_locs = _string_option(
            options, "includeLocs", 16607, "$geoNear requires that 'includeLocs' option is a String"
        )
        key = options.get("key")
        if key is not None and not isinstance(key, str):
            raise CommandError(
                14, f"$geoNear parameter 'key' must be of type string but found type: {render(key)}"
            )
        if key == "":
            raise bad_value("$geoNear parameter 'key' cannot be the empty string")
        self.multiplier = 1.0
        if "distanceMultiplier" in options:
            multiplier = options["distanceMultiplier"]
            if not is_number(multiplier) or float(numeric_value(multiplier)) < 0:
                raise bad_value("distanceMultiplier must be a non-negative number")
            self.multiplier = float(numeric_value(multiplier))
        spherical = bool(options.get("spherical", False))
        query = options.get("query", {})
        if not isinstance(query, Mapping):
            raise bad_value("query must be an object")
        spec: dict[str, Any] = {}
        for option, bound in (("maxDistance", "$maxDistance"), ("minDistance", "$minDistance")):
            if option in options:
                spec[bound] = options[option]
        geojson = isinstance(near, Mapping) and near.get("type") == "Point"
        argument: Any = {"$geometry": near} if geojson else near
        operator = "$nearSphere" if spherical else "$near"
        self.near = parse_near(operator, argument, spec)
        path = key if key is not None else self._only_index(search)
        index = search.near_index(self.near, path)
        self.distances = _Distances(self.near, index, path)
        self.matcher = compile_filter(query, context)

    @staticmethod
    def _only_index(search: GeoSearch) -> str:
        indexes = [i for i in search._indexes() if getattr(i, "kind", None) in (FLAT, SPHERE)]
        flat = [i for i in indexes if i.kind == FLAT]  # type: ignore[attr-defined]
        sphere = [i for i in indexes if i.kind == SPHERE]  # type: ignore[attr-defined]
        if len(flat) > 1:
            raise CommandError(
                27,
                f"There is more than one 2d index on {search.namespace}; unsure which to use"
                " for $geoNear",
            )
        if flat:
            return str(flat[0].geo_fields[0])  # type: ignore[attr-defined]
        if len(sphere) > 1:
            raise CommandError(
                27,
                f"There is more than one 2dsphere index on {search.namespace}; unsure which to"
                " use for $geoNear",
            )
        if sphere:
            return str(sphere[0].geo_fields[0])  # type: ignore[attr-defined]
        raise CommandError(27, "$geoNear requires a 2d or 2dsphere index, but none were found")

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        hits: list[tuple[float, int, Document, Any]] = []
        for position, doc in enumerate(docs):
            if not self.matcher.matches(doc) or not self.distances.within_bounds(doc):
                continue
            result = self.distances.of(doc)
            assert result is not None
            hits.append((result[0], position, doc, result[1]))
        hits.sort(key=lambda hit: (hit[0], hit[1]))
        for measured, _, doc, location in hits:
            out = _set_path(doc, self.distance_field, measured * self.multiplier)
            if self.include_locs is not None:
                out = _set_path(out, self.include_locs, copy.deepcopy(location))
            yield out
