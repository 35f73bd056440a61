"""Geometry on the sphere, as a 2dsphere query computes it (MongoDB manual,
"Geospatial Queries", "Calculate Distance Using Spherical Geometry").

Points are unit vectors; edges are the shorter great-circle arc between their
vertices, as S2 (the server's library) takes them. Distances are angles in radians;
the geo module multiplies them by the radius the server uses for meters,
:data:`EARTH_RADIUS_METERS` (``kRadiusOfEarthInMeters``, 6378.1 km).

A polygon loop is tested in the gnomonic projection centred on the loop's centroid:
that projection maps great circles to straight lines, so a point is inside the
spherical loop exactly when its projection is inside the projected (planar) loop.
This holds for every loop within the open hemisphere around its centroid, which
covers every polygon an application stores; a loop that is not (a band around the
globe, a polygon bigger than a hemisphere) is refused with NotImplemented (238)
rather than tested wrongly.

No dependency: the functions are a few vector products each (docs/dependencies.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Optional

from mongocore.sim.codes import CommandError

__all__ = [
    "EARTH_RADIUS_METERS",
    "Loop",
    "Vector",
    "arc_distance",
    "arc_max_distance",
    "arcs_intersect",
    "distance",
    "to_vector",
]

#: The radius of the earth the server uses to turn radians into meters.
EARTH_RADIUS_METERS = 6378.1 * 1000

Vector = tuple[float, float, float]

# Points closer than this (radians, about 1 cm on the earth) are one point: the
# tolerance of S2's predicates, which a point on an edge or a vertex needs.
_EPSILON = 1e-9


def to_vector(lng: float, lat: float) -> Vector:
    """The unit vector of a longitude/latitude pair in degrees."""
    phi, lam = math.radians(lat), math.radians(lng)
    return (math.cos(phi) * math.cos(lam), math.cos(phi) * math.sin(lam), math.sin(phi))


def _dot(a: Vector, b: Vector) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a: Vector, b: Vector) -> Vector:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _norm(a: Vector) -> float:
    return math.sqrt(_dot(a, a))


def _unit(a: Vector) -> Optional[Vector]:
    length = _norm(a)
    if length < 1e-300:
        return None
    return (a[0] / length, a[1] / length, a[2] / length)


def distance(a: Vector, b: Vector) -> float:
    """The great-circle distance between two points, in radians."""
    return math.atan2(_norm(_cross(a, b)), _dot(a, b))


def arc_distance(p: Vector, a: Vector, b: Vector) -> float:
    """The distance from ``p`` to the arc from ``a`` to ``b``, in radians."""
    normal = _unit(_cross(a, b))
    if normal is None:  # a degenerate arc: one point
        return distance(p, a)
    # The closest point of the whole great circle; it is on the arc when it lies
    # between a and b (on the same side of both end planes).
    along = (
        p[0] - normal[0] * _dot(p, normal),
        p[1] - normal[1] * _dot(p, normal),
        p[2] - normal[2] * _dot(p, normal),
    )
    foot = _unit(along)
    if (
        foot is not None
        and _dot(_cross(a, foot), normal) >= 0
        and _dot(_cross(foot, b), normal) >= 0
    ):
        return distance(p, foot)
    return min(distance(p, a), distance(p, b))


def _orientation(a: Vector, b: Vector, c: Vector) -> float:
    return _dot(_cross(a, b), c)


def arcs_intersect(a: Vector, b: Vector, c: Vector, d: Vector) -> bool:
    """True when the arc a-b and the arc c-d share a point (touching included)."""
    if min(arc_distance(c, a, b), arc_distance(d, a, b)) < _EPSILON:
        return True
    if min(arc_distance(a, c, d), arc_distance(b, c, d)) < _EPSILON:
        return True
    ab, cd = _cross(a, b), _cross(c, d)
    line = _unit(_cross(ab, cd))
    if line is None:  # the same great circle and no shared point
        return False
    for candidate in (line, (-line[0], -line[1], -line[2])):
        if arc_distance(candidate, a, b) < _EPSILON and arc_distance(candidate, c, d) < _EPSILON:
            return True
    return False


def arc_max_distance(p: Vector, a: Vector, b: Vector) -> float:
    """The distance from ``p`` to the farthest point of the arc a-b: that point is the
    one closest to ``p``'s antipode."""
    return math.pi - arc_distance((-p[0], -p[1], -p[2]), a, b)


class Loop:
    """A closed ring of vertices (the last one not repeated), taken as the smaller of
    the two regions it bounds, as the server's S2Loop::Normalize takes it."""

    def __init__(self, vertices: Sequence[Vector]) -> None:
        self.vertices = list(vertices)
        total = (
            sum(v[0] for v in vertices),
            sum(v[1] for v in vertices),
            sum(v[2] for v in vertices),
        )
        centre = _unit(total)
        if centre is None or any(_dot(v, centre) <= 1e-6 for v in vertices):
            raise CommandError(
                238,
                "polygons that do not fit within a hemisphere are not implemented by the simulator",
            )
        self.centre = centre
        # A basis of the plane tangent at the centre, for the gnomonic projection.
        helper: Vector = (0.0, 0.0, 1.0) if abs(centre[2]) < 0.9 else (1.0, 0.0, 0.0)
        east = _unit(_cross(helper, centre))
        assert east is not None
        self._east = east
        self._north = _cross(centre, east)
        self._plane = [self._project(v) for v in self.vertices]

    def _project(self, v: Vector) -> tuple[float, float]:
        scale = _dot(v, self.centre)
        return (_dot(v, self._east) / scale, _dot(v, self._north) / scale)

    @property
    def edges(self) -> list[tuple[Vector, Vector]]:
        count = len(self.vertices)
        return [(self.vertices[i], self.vertices[(i + 1) % count]) for i in range(count)]

    def on_boundary(self, p: Vector) -> bool:
        return any(arc_distance(p, a, b) < _EPSILON for a, b in self.edges)

    def contains(self, p: Vector) -> bool:
        """True when ``p`` is inside the loop or on its boundary."""
        if _dot(p, self.centre) <= 0:
            return False
        if self.on_boundary(p):
            return True
        x, y = self._project(p)
        inside = False
        points = self._plane
        j = len(points) - 1
        for i, (xi, yi) in enumerate(points):
            xj, yj = points[j]
            if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi:
                inside = not inside
            j = i
        return inside

    def interior_contains(self, p: Vector) -> bool:
        """True when ``p`` is strictly inside (not on the boundary)."""
        return self.contains(p) and not self.on_boundary(p)

    def crosses(self, a: Vector, b: Vector) -> bool:
        """True when the arc a-b meets the loop's boundary."""
        return any(arcs_intersect(a, b, c, d) for c, d in self.edges)

    def self_intersects(self) -> bool:
        """True when two edges that do not share a vertex meet (S2Loop::IsValid)."""
        edges = self.edges
        count = len(edges)
        for i in range(count):
            for j in range(i + 1, count):
                if j == i + 1 or (i == 0 and j == count - 1):
                    continue
                if arcs_intersect(*edges[i], *edges[j]):
                    return True
        return False
