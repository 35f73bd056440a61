"""Geometries as a 7.0 server parses them (MongoDB manual, "GeoJSON Objects", "Legacy
Coordinate Pairs"; the server's GeoParser and GeometryContainer).

Stored values and query arguments come in two families:

- GeoJSON objects on the WGS84 sphere: ``Point``, ``LineString``, ``Polygon`` (an
  exterior ring and holes), ``MultiPoint``, ``MultiLineString``, ``MultiPolygon`` and
  ``GeometryCollection``, longitude first, with the server's checks (bounds, closed
  rings of at least 3 distinct vertices, edges that do not cross, holes inside the
  exterior ring, lines of at least 2 distinct vertices) and its messages;
- legacy coordinate pairs (``[x, y]`` or ``{lng: x, lat: y}``: the first two numbers,
  more allowed in a stored value) and the legacy query shapes ``$box``, ``$center``,
  ``$centerSphere`` and ``$polygon``, planar except ``$centerSphere``.

A parse error is a :class:`GeoError` carrying the server's reason; the caller adds
the code and context (BadValue, 2, in a query; "Can't extract geo keys", 16755, for
an index). A GeoJSON object with the ``crs`` of a strict-winding "big polygon" is
refused with NotImplemented (238), as the simulator does not test such polygons.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.render import render
from mongocore.sim.engine.spherical import Loop, Vector, to_vector
from mongocore.sim.engine.values import is_number, numeric_value

__all__ = [
    "Box",
    "Cap",
    "Circle",
    "Collection",
    "FlatPolygon",
    "GeoError",
    "Line",
    "Point",
    "Polygon",
    "Shape",
    "number_text",
    "parse_geojson",
    "parse_legacy_point",
    "parse_stored",
]

_CRS_NAMES = ("urn:ogc:def:crs:OGC:1.3:CRS84", "EPSG:4326")
_STRICT_WINDING = "urn:x-mongodb:crs:strictwinding:EPSG:4326"


class GeoError(Exception):
    """A geometry the server refuses, with its reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def number_text(value: float) -> str:
    """A double as the server's messages print it (C++ stream, 6 significant digits)."""
    return f"{value:.6g}"


@dataclass
class Point:
    """A point: ``x``/``y`` are longitude/latitude for GeoJSON, the pair for legacy."""

    x: float
    y: float
    legacy: bool = False

    @property
    def on_sphere(self) -> bool:
        """True when the point is a valid longitude/latitude (a legacy pair may not be)."""
        return -180.0 <= self.x <= 180.0 and -90.0 <= self.y <= 90.0

    @property
    def vector(self) -> Vector:
        return to_vector(self.x, self.y)


@dataclass
class Line:
    points: list[Point]

    @property
    def vectors(self) -> list[Vector]:
        return [p.vector for p in self.points]


@dataclass
class Polygon:
    """An exterior ring and its holes (each without the repeated closing vertex)."""

    rings: list[list[Point]]
    loops: list[Loop] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.loops:
            self.loops = [Loop([p.vector for p in ring]) for ring in self.rings]

    def contains(self, p: Vector) -> bool:
        """Inside the exterior ring (its boundary included) and not inside a hole."""
        if not self.loops[0].contains(p):
            return False
        return not any(hole.interior_contains(p) for hole in self.loops[1:])


@dataclass
class Collection:
    """A MultiPoint, MultiLineString, MultiPolygon or GeometryCollection."""

    kind: str
    parts: list[Shape]


Shape = Union[Point, Line, Polygon, Collection]


# -- legacy query shapes --------------------------------------------------------------------


@dataclass
class Box:
    """``$box``: two corners, planar; its boundary is inside."""

    low: tuple[float, float]
    high: tuple[float, float]


@dataclass
class Circle:
    """``$center``: a centre and a radius, planar."""

    centre: tuple[float, float]
    radius: float


@dataclass
class Cap:
    """``$centerSphere`` (radius in radians) on the sphere."""

    centre: Point
    radius: float


@dataclass
class FlatPolygon:
    """``$polygon``: planar vertices."""

    points: list[tuple[float, float]]


# -- points -------------------------------------------------------------------------------


def _flat_point(value: Any, *, extra: bool) -> Point:
    if isinstance(value, Mapping):
        items = list(value.values())
    elif isinstance(value, list):
        items = list(value)
    else:
        raise GeoError("Point must be an array or object")
    if len(items) < 1 or not _numeric(items[0]):
        raise GeoError("Point must only contain numeric elements")
    if len(items) < 2 or not _numeric(items[1]):
        raise GeoError("Point must only contain numeric elements")
    if not extra and len(items) > 2:
        raise GeoError("Point must only contain two numeric elements")
    x, y = float(numeric_value(items[0])), float(numeric_value(items[1]))
    if not (math.isfinite(x) and math.isfinite(y)):
        raise GeoError("Point coordinates must be finite numbers")
    return Point(x, y, legacy=True)


def _numeric(value: Any) -> bool:
    return is_number(value)


def _sphere_check(point: Point) -> Point:
    if not point.on_sphere:
        raise GeoError(
            f"longitude/latitude is out of bounds, lng: {number_text(point.x)}"
            f" lat: {number_text(point.y)}"
        )
    return point


def parse_legacy_point(value: Any, *, stored: bool = True) -> Point:
    """A legacy coordinate pair (``[x, y]``, ``{x: .., y: ..}``)."""
    return _flat_point(value, extra=stored)


def _coordinate(value: Any) -> Point:
    if not isinstance(value, list):
        raise GeoError("GeoJSON coordinates must be an array")
    point = _flat_point(value, extra=True)
    return _sphere_check(Point(point.x, point.y))


def _coordinates(value: Any) -> list[Point]:
    if not isinstance(value, list):
        raise GeoError("GeoJSON coordinates must be an array of coordinates")
    return [_coordinate(v) for v in value]


def _deduplicated(points: list[Point]) -> list[Point]:
    out: list[Point] = []
    for point in points:
        if not out or (out[-1].x, out[-1].y) != (point.x, point.y):
            out.append(point)
    return out


# -- GeoJSON ------------------------------------------------------------------------------


def _crs(obj: Mapping[str, Any], *, polygon: bool) -> None:
    if "crs" not in obj:
        return
    crs = obj["crs"]
    if not isinstance(crs, Mapping):
        raise GeoError("GeoJSON CRS must be an object")
    if crs.get("type") != "name":
        raise GeoError('GeoJSON CRS must have field "type": "name"')
    properties = crs.get("properties")
    if not isinstance(properties, Mapping):
        raise GeoError('CRS must have field "properties" which is an object')
    name = properties.get("name")
    if not isinstance(name, str):
        raise GeoError('In CRS, "properties.name" must be a string')
    if name in _CRS_NAMES:
        return
    if name == _STRICT_WINDING:
        if not polygon:
            raise GeoError("Strict winding order is only supported by polygon")
        raise CommandError(
            238,
            "polygons with a strict winding order (big polygons) are not implemented by the"
            " simulator",
        )
    raise GeoError(f"Unknown CRS name: {name}")


def _line(value: Any) -> Line:
    points = _deduplicated(_coordinates(value))
    if len(points) < 2:
        raise GeoError(f"GeoJSON LineString must have at least 2 vertices: {render(value)}")
    return Line(points)


def _polygon(value: Any) -> Polygon:
    if not isinstance(value, list):
        raise GeoError("Polygon coordinates must be an array")
    rings: list[list[Point]] = []
    loops: list[Loop] = []
    for ring_value in value:
        points = _coordinates(ring_value)
        if not points:
            raise GeoError(f"Loop has no vertices: {render(ring_value)}")
        if (points[0].x, points[0].y) != (points[-1].x, points[-1].y):
            raise GeoError(f"Loop is not closed: {render(ring_value)}")
        ring = _deduplicated(points)[:-1]
        if len({(p.x, p.y) for p in ring}) < 3:
            raise GeoError(f"Loop must have at least 3 different vertices: {render(ring_value)}")
        loop = Loop([p.vector for p in ring])
        if len({(p.x, p.y) for p in ring}) != len(ring):
            raise GeoError(f"Loop is not valid: {render(ring_value)} Duplicate vertices")
        if loop.self_intersects():
            raise GeoError(f"Loop is not valid: {render(ring_value)} Edges cross")
        if loops and not all(loops[0].contains(v) for v in loop.vertices):
            raise GeoError(
                "Secondary loops not contained by first exterior loop - secondary loops must be"
                f" holes: {render(ring_value)} first loop: {render(value[0])}"
            )
        rings.append(ring)
        loops.append(loop)
    if not rings:
        raise GeoError("Polygon has no loops.")
    for i in range(1, len(loops)):
        for j in range(i + 1, len(loops)):
            if any(loops[i].crosses(a, b) for a, b in loops[j].edges):
                raise GeoError(f"Polygon isn't valid: Loops cross {render(value)}")
            if any(loops[i].interior_contains(v) for v in loops[j].vertices) or any(
                loops[j].interior_contains(v) for v in loops[i].vertices
            ):
                raise GeoError(f"Polygon interior loops cannot be nested: {render(value)}")
    return Polygon(rings, loops)


_TYPES = (
    "Point",
    "LineString",
    "Polygon",
    "MultiPoint",
    "MultiLineString",
    "MultiPolygon",
    "GeometryCollection",
)


def geojson_type(obj: Mapping[str, Any]) -> Optional[str]:
    """The GeoJSON type of an object, None when it has no known one."""
    kind = obj.get("type")
    return kind if isinstance(kind, str) and kind in _TYPES else None


def parse_geojson(obj: Mapping[str, Any]) -> Shape:
    """A GeoJSON object (module doc); GeoError for one the server refuses."""
    kind = geojson_type(obj)
    if kind is None:
        raise GeoError(f"unknown GeoJSON type: {render(obj)}")
    if kind == "GeometryCollection":
        geometries = obj.get("geometries")
        if not isinstance(geometries, list):
            raise GeoError("GeometryCollection geometries must be an array")
        if not geometries:
            raise GeoError("GeometryCollection geometries must have at least 1 element")
        parts: list[Shape] = []
        for index, geometry in enumerate(geometries):
            if not isinstance(geometry, Mapping):
                raise GeoError(f'Element {index} of "geometries" is not an object')
            inner = geojson_type(geometry)
            if inner is None:
                raise GeoError(f"Unknown GeoJSON type: {render(geometry)}")
            if inner == "GeometryCollection":
                raise GeoError(f"GeometryCollections cannot be nested: {render(geometry)}")
            parts.append(parse_geojson(geometry))
        return Collection(kind, parts)
    _crs(obj, polygon=kind == "Polygon")
    coordinates = obj.get("coordinates")
    if kind == "Point":
        point = _flat_point(coordinates, extra=True) if coordinates is not None else None
        if point is None:
            raise GeoError("Point must be an array or object")
        return _sphere_check(Point(point.x, point.y))
    if kind == "LineString":
        return _line(coordinates)
    if kind == "Polygon":
        return _polygon(coordinates)
    if kind == "MultiPoint":
        points: list[Shape] = list(_coordinates(coordinates))
        if not points:
            raise GeoError("MultiPoint coordinates must have at least 1 element")
        return Collection(kind, points)
    if not isinstance(coordinates, list):
        raise GeoError(f"{kind} coordinates must be an array")
    if kind == "MultiLineString":
        lines: list[Shape] = [_line(v) for v in coordinates]
        if not lines:
            raise GeoError("MultiLineString coordinates must have at least 1 element")
        return Collection(kind, lines)
    polygons: list[Shape] = [_polygon(v) for v in coordinates]
    if not polygons:
        raise GeoError("MultiPolygon coordinates must have at least 1 element")
    return Collection(kind, polygons)


def parse_stored(value: Any) -> Shape:
    """A stored value as a geometry: a legacy pair (an array, or an object whose first
    value is a number) or a GeoJSON object (GeometryContainer::parseFromStorage)."""
    if isinstance(value, list) or (
        isinstance(value, Mapping) and value and _numeric(next(iter(value.values())))
    ):
        return _flat_point(value, extra=True)
    if isinstance(value, Mapping):
        return parse_geojson(value)
    raise GeoError("geo element must be an array or object")
