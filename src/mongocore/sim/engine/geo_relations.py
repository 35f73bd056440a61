"""How a stored geometry relates to a query's region or point, as the server's
GeometryContainer answers ``$geoWithin``, ``$geoIntersects`` and the distance of
``$near``, ``$nearSphere`` and ``$geoNear``.

- Spherical regions (a GeoJSON Polygon or MultiPolygon, a ``$centerSphere`` cap)
  hold points, lines and polygons, GeoJSON or legacy pairs that are valid
  longitude/latitude; a boundary point is inside.
- Flat regions (``$box``, ``$center``, ``$polygon``) hold points only: legacy pairs,
  and GeoJSON points read as planar pairs (a SPHERE point projects to FLAT); lines
  and polygons are never within them, as on a server.
- ``$geoIntersects`` is spherical: two geometries intersect when they share a point.
- Distances are radians on the sphere (the caller turns them into meters or keeps
  radians) or planar units; a polygon that contains the point is at distance 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Optional, Union

from mongocore.sim.engine.geometry import (
    Box,
    Cap,
    Circle,
    Collection,
    FlatPolygon,
    Line,
    Point,
    Polygon,
    Shape,
)
from mongocore.sim.engine.spherical import (
    Vector,
    arc_distance,
    arc_max_distance,
    arcs_intersect,
    distance,
)

__all__ = ["Region", "flat_distance", "intersects", "sphere_distance", "within"]

Region = Union[Polygon, Collection, Cap, Box, Circle, FlatPolygon]

_EPSILON = 1e-9


def _primitives(shape: Shape) -> Iterator[Union[Point, Line, Polygon]]:
    if isinstance(shape, Collection):
        for part in shape.parts:
            yield from _primitives(part)
    else:
        yield shape


def _sphere_vertices(shape: Shape) -> Optional[list[Vector]]:
    """Every vertex of ``shape`` on the sphere, None if a legacy pair is not lng/lat."""
    out: list[Vector] = []
    for part in _primitives(shape):
        points = (
            [part]
            if isinstance(part, Point)
            else part.points
            if isinstance(part, Line)
            else [p for ring in part.rings for p in ring]
        )
        for point in points:
            if not point.on_sphere:
                return None
            out.append(point.vector)
    return out


def _edges(part: Union[Line, Polygon]) -> list[tuple[Vector, Vector]]:
    if isinstance(part, Line):
        vectors = part.vectors
        return list(zip(vectors, vectors[1:]))
    return [edge for loop in part.loops for edge in loop.edges]


# -- within -------------------------------------------------------------------------------


def within(region: Region, shape: Shape) -> bool:
    """True when ``shape`` lies entirely within ``region`` (module doc)."""
    if isinstance(region, (Box, Circle, FlatPolygon)):
        return _flat_within(region, shape)
    if _sphere_vertices(shape) is None:
        return False
    return all(_sphere_within(region, part) for part in _primitives(shape))


def _sphere_within(
    region: Union[Polygon, Collection, Cap], part: Union[Point, Line, Polygon]
) -> bool:
    if isinstance(region, Cap):
        if not region.centre.on_sphere:
            return False
        centre = region.centre.vector
        if isinstance(part, Point):
            return distance(centre, part.vector) <= region.radius + _EPSILON
        return all(
            arc_max_distance(centre, a, b) <= region.radius + _EPSILON for a, b in _edges(part)
        )
    polygons = [p for p in _primitives(region) if isinstance(p, Polygon)]
    return any(_polygon_holds(polygon, part) for polygon in polygons)


def _proper_crossing(a: Vector, b: Vector, c: Vector, d: Vector) -> bool:
    """The arcs a-b and c-d cross at a point that is none of their end points."""
    if not arcs_intersect(a, b, c, d):
        return False
    ends = (a, b, c, d)
    touching = [
        arc_distance(p, c, d) < _EPSILON if p in (a, b) else arc_distance(p, a, b) < _EPSILON
        for p in ends
    ]
    return not any(touching)


def _polygon_holds(polygon: Polygon, part: Union[Point, Line, Polygon]) -> bool:
    if isinstance(part, Point):
        return polygon.contains(part.vector)
    vertices = (
        part.vectors
        if isinstance(part, Line)
        else [v for loop in part.loops[:1] for v in loop.vertices]
    )
    if not all(polygon.contains(v) for v in vertices):
        return False
    boundary = [edge for loop in polygon.loops for edge in loop.edges]
    edges = _edges(part) if isinstance(part, Line) else part.loops[0].edges
    for a, b in edges:
        if any(_proper_crossing(a, b, c, d) for c, d in boundary):
            return False
    if isinstance(part, Polygon):
        # A hole of the region inside the stored polygon leaves part of it outside.
        for hole in polygon.loops[1:]:
            if any(part.contains(v) and not part.loops[0].on_boundary(v) for v in hole.vertices):
                return False
    return True


def _flat_within(region: Union[Box, Circle, FlatPolygon], shape: Shape) -> bool:
    if not isinstance(shape, Point):
        if isinstance(shape, Collection) and shape.kind == "MultiPoint":
            return all(_flat_within(region, p) for p in shape.parts)
        return False
    x, y = shape.x, shape.y
    if isinstance(region, Box):
        return region.low[0] <= x <= region.high[0] and region.low[1] <= y <= region.high[1]
    if isinstance(region, Circle):
        return math.hypot(x - region.centre[0], y - region.centre[1]) <= region.radius
    return _flat_polygon_contains(region.points, (x, y))


def _flat_polygon_contains(points: list[tuple[float, float]], p: tuple[float, float]) -> bool:
    x, y = p
    count = len(points)
    for i in range(count):
        (x1, y1), (x2, y2) = points[i], points[(i + 1) % count]
        cross = (x2 - x1) * (y - y1) - (y2 - y1) * (x - x1)
        if (
            abs(cross) < 1e-12
            and min(x1, x2) <= x <= max(x1, x2)
            and min(y1, y2) <= y <= max(y1, y2)
        ):
            return True  # on an edge
    inside = False
    j = count - 1
    for i in range(count):
        xi, yi = points[i]
        xj, yj = points[j]
        if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi:
            inside = not inside
        j = i
    return inside


# -- intersects ---------------------------------------------------------------------------


def intersects(query: Shape, shape: Shape) -> bool:
    """True when the two geometries share a point (spherical)."""
    if _sphere_vertices(shape) is None or _sphere_vertices(query) is None:
        return False
    return any(_primitive_intersects(a, b) for a in _primitives(query) for b in _primitives(shape))


def _primitive_intersects(a: Union[Point, Line, Polygon], b: Union[Point, Line, Polygon]) -> bool:
    if isinstance(b, Point) and not isinstance(a, Point):
        a, b = b, a
    if isinstance(a, Point):
        p = a.vector
        if isinstance(b, Point):
            return distance(p, b.vector) < _EPSILON
        if isinstance(b, Line):
            return any(arc_distance(p, x, y) < _EPSILON for x, y in _edges(b))
        return b.contains(p)
    if isinstance(a, Polygon) and isinstance(b, Line):
        a, b = b, a
    if isinstance(a, Line) and isinstance(b, Line):
        return any(arcs_intersect(p, q, r, s) for p, q in _edges(a) for r, s in _edges(b))
    if isinstance(a, Line):
        assert isinstance(b, Polygon)
        if any(b.contains(v) for v in a.vectors):
            return True
        return any(arcs_intersect(p, q, r, s) for p, q in _edges(a) for r, s in _edges(b))
    assert isinstance(a, Polygon) and isinstance(b, Polygon)
    if any(b.contains(v) for v in a.loops[0].vertices):
        return True
    if any(a.contains(v) for v in b.loops[0].vertices):
        return True
    return any(arcs_intersect(p, q, r, s) for p, q in _edges(a) for r, s in _edges(b))


# -- distances ----------------------------------------------------------------------------


def sphere_distance(origin: Point, shape: Shape) -> Optional[float]:
    """The distance in radians from ``origin`` to the closest point of ``shape`` (None
    when a legacy pair of it is not a longitude/latitude)."""
    if _sphere_vertices(shape) is None:
        return None
    p = origin.vector
    best = math.inf
    for part in _primitives(shape):
        if isinstance(part, Point):
            best = min(best, distance(p, part.vector))
        elif isinstance(part, Polygon) and part.contains(p):
            return 0.0
        else:
            best = min(best, *(arc_distance(p, a, b) for a, b in _edges(part)))
    return best


def flat_distance(origin: Point, shape: Shape) -> Optional[float]:
    """The planar distance between two points (None for anything but a point)."""
    if not isinstance(shape, Point):
        return None
    return math.hypot(shape.x - origin.x, shape.y - origin.y)
