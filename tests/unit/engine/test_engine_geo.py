"""The engine's geo: GeoJSON validation, the 2dsphere and 2d index kinds, the geo query
operators and the $geoNear stage, against the MongoDB manual's examples (their
documents, queries and printed answers) and the server's errors."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import parse_collation
from mongocore.sim.engine import crud
from mongocore.sim.engine.context import MatchContext
from mongocore.sim.engine.indexes import IndexSpec, index_listing
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.render import render_document
from mongocore.sim.engine.search import collection_operators, geo_near_parser
from mongocore.sim.engine.stages import PipelineContext, parse_pipeline
from mongocore.sim.engine.store import Collection

# The manual's "places" (Geospatial Queries, "Examples" and $geoNear).
PLACES = [
    {
        "_id": 1,
        "name": "Central Park",
        "location": {"type": "Point", "coordinates": [-73.97, 40.77]},
        "category": "Parks",
    },
    {
        "_id": 2,
        "name": "Sara D. Roosevelt Park",
        "location": {"type": "Point", "coordinates": [-73.9928, 40.7193]},
        "category": "Parks",
    },
    {
        "_id": 3,
        "name": "Polo Grounds",
        "location": {"type": "Point", "coordinates": [-73.9375, 40.8303]},
        "category": "Stadiums",
    },
]


class Setup:
    def __init__(self, docs: Iterable[Mapping[str, Any]] = (), *indexes: Mapping[str, Any]) -> None:
        self.coll = Collection("test.places")
        self.stamps = itertools.count(1)
        for index in indexes:
            self.index(index)
        for doc in docs:
            self.insert(doc)
        self.context = MatchContext(
            operators=collection_operators(self.coll.indexes.values, "test.places")
        )

    def index(self, key: Mapping[str, Any], **options: Any) -> None:
        name = "_".join(f"{k}_{v}" for k, v in key.items())
        self.coll.create_index(IndexSpec.from_document({"key": dict(key), "name": name, **options}))

    def insert(self, doc: Mapping[str, Any]) -> None:
        crud.insert(self.coll, doc, next(self.stamps))

    def find(self, flt: Any, **options: Any) -> list[Document]:
        return crud.find(self.coll, flt, context=self.context, **options)

    def ids(self, flt: Any, **options: Any) -> list[Any]:
        return [doc["_id"] for doc in self.find(flt, **options)]

    def pipeline_context(self, **options: Any) -> PipelineContext:
        """What the command layer gives a pipeline on this collection: the $geoNear
        provider and the collection's query operators."""
        return PipelineContext(
            db="test",
            coll="places",
            providers={"$geoNear": geo_near_parser(self.coll.indexes.values, "test.places")},
            operators=collection_operators(self.coll.indexes.values, "test.places"),
            **options,
        )

    def aggregate(self, pipeline: list[Any], **options: Any) -> list[Document]:
        parsed = parse_pipeline(pipeline, self.pipeline_context(**options))
        return parsed(doc for _, doc in self.coll.scan())

    def geo_near(self, options: Mapping[str, Any]) -> list[Document]:
        return self.aggregate([{"$geoNear": dict(options)}])


def error(call: Any, *args: Any, **kwargs: Any) -> CommandError:
    with pytest.raises(CommandError) as caught:
        call(*args, **kwargs)
    return caught.value


def haversine_meters(a: list[float], b: list[float]) -> float:
    """An independent oracle: the haversine formula on the server's radius."""
    lng1, lat1, lng2, lat2 = map(math.radians, (*a, *b))
    h = (
        math.sin((lat2 - lat1) / 2) ** 2
        + math.cos(lat1) * math.cos(lat2) * math.sin((lng2 - lng1) / 2) ** 2
    )
    return 2 * 6378100 * math.asin(math.sqrt(h))


POINT = {"type": "Point", "coordinates": [-73.9667, 40.78]}


# -- $near, $nearSphere and their index ---------------------------------------------------------


def test_near_with_min_and_max_distance_is_the_manuals_answer() -> None:
    s = Setup(PLACES, {"location": "2dsphere"})
    near = {"$geometry": POINT, "$minDistance": 1000, "$maxDistance": 5000}
    # The manual: "at least 1000 meters from and at most 5000 meters from the specified
    # point, ordered from nearest to farthest": Central Park.
    assert s.ids({"location": {"$near": near}}) == [1]


def test_near_orders_by_distance_and_reports_it() -> None:
    s = Setup(reversed(PLACES), {"location": "2dsphere"})
    docs = s.find(
        {"location": {"$nearSphere": {"$geometry": POINT}}},
        projection={"name": 1, "d": {"$meta": "geoNearDistance"}},
    )
    assert [d["_id"] for d in docs] == [1, 3, 2]
    for doc in docs:
        place = next(p for p in PLACES if p["_id"] == doc["_id"])
        expected = haversine_meters(POINT["coordinates"], place["location"]["coordinates"])
        assert doc["d"] == pytest.approx(expected, rel=1e-9)
        assert list(doc) == ["_id", "name", "d"]


def test_near_needs_the_index_of_its_kind() -> None:
    s = Setup(PLACES)
    e = error(s.find, {"location": {"$near": {"$geometry": POINT}}})
    assert e.code == 291 and "unable to find index for $geoNear query" in e.errmsg
    legacy = Setup([{"_id": 1, "loc": [0, 0]}], {"loc": "2d"})
    e = error(
        legacy.find, {"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [0, 0]}}}}
    )
    assert e.code == 291  # a GeoJSON point needs a 2dsphere index
    assert legacy.ids({"loc": {"$near": [1, 1]}}) == [1]


def test_legacy_near_is_planar_with_a_2d_index() -> None:
    docs = [{"_id": i, "loc": loc} for i, loc in enumerate([[5, 5], [1, 1], [3, 0], [10, 10]])]
    s = Setup(docs, {"loc": "2d"})
    assert s.ids({"loc": {"$near": [0, 0]}}) == [1, 2, 0, 3]
    assert s.ids({"loc": {"$near": [0, 0], "$maxDistance": 3}}) == [1, 2]
    found = s.find({"loc": {"$near": [0, 0]}}, projection={"d": {"$meta": "geoNearDistance"}})
    assert [d["d"] for d in found] == [math.sqrt(2), 3.0, math.sqrt(50), math.sqrt(200)]


def test_legacy_near_sphere_is_in_radians() -> None:
    s = Setup([{"_id": 1, "loc": [0, 10]}, {"_id": 2, "loc": [0, 1]}], {"loc": "2d"})
    found = s.find({"loc": {"$nearSphere": [0, 0]}}, projection={"d": {"$meta": "geoNearDistance"}})
    assert [(d["_id"], d["d"]) for d in found] == [
        (2, pytest.approx(math.radians(1))),
        (1, pytest.approx(math.radians(10))),
    ]
    assert s.ids({"loc": {"$nearSphere": [0, 0], "$maxDistance": math.radians(5)}}) == [2]


def test_near_measures_to_the_nearest_point_of_a_geometry() -> None:
    line = {"type": "LineString", "coordinates": [[0, -1], [0, 1]]}
    square = {"type": "Polygon", "coordinates": [[[2, -1], [4, -1], [4, 1], [2, 1], [2, -1]]]}
    s = Setup([{"_id": "line", "g": line}, {"_id": "square", "g": square}], {"g": "2dsphere"})
    found = s.find(
        {"g": {"$near": {"$geometry": {"type": "Point", "coordinates": [3, 0]}}}},
        projection={"d": {"$meta": "geoNearDistance"}},
    )
    assert [(d["_id"], d["d"]) for d in found] == [
        ("square", 0.0),
        ("line", pytest.approx(haversine_meters([3, 0], [0, 0]))),
    ]


def test_where_a_near_query_may_stand() -> None:
    s = Setup(PLACES, {"location": "2dsphere"})
    near = {"location": {"$near": {"$geometry": POINT}}}
    assert s.ids({"$and": [near, {"category": "Parks"}]}) == [1, 2]
    assert error(s.find, {"$or": [near, {"a": 1}]}).errmsg == "geoNear must be top-level expr"
    e = error(s.find, {"$and": [near, {"location": {"$nearSphere": {"$geometry": POINT}}}]})
    assert (e.code, e.errmsg) == (2, "Too many geoNear expressions")
    assert error(s.find, {"location": {"$maxDistance": 5}}).code == 2


# -- $geoWithin, $within, $geoIntersects ---------------------------------------------------


LEGACY = [
    {"_id": 1, "loc": [1, 1]},
    {"_id": 2, "loc": [50, 50]},
    {"_id": 3, "loc": [120, 20]},
    {"_id": 4, "loc": {"lng": 3, "lat": 5}},
    {"_id": 5, "loc": {"type": "Point", "coordinates": [99, 1]}},
    {"_id": 6, "loc": {"type": "LineString", "coordinates": [[1, 1], [2, 2]]}},
]


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ({"$box": [[0, 0], [100, 100]]}, [1, 2, 4, 5]),
        ({"$box": [[100, 100], [0, 0]]}, [1, 2, 4, 5]),
        ({"$box": [[1, 1], [3, 5]]}, [1, 4]),  # the boundary is inside
        ({"$polygon": [[0, 0], [3, 6], [6, 0]]}, [1, 4]),
        ({"$center": [[0, 0], 2]}, [1]),
        ({"$center": [[50, 45], 5]}, [2]),
        ({"$centerSphere": [[1, 1], 0.01]}, [1]),
        ({"$centerSphere": [[1, 1], 0.03]}, [1, 6]),  # the whole line is within 0.03
    ],
)
def test_geo_within_legacy_shapes(shape: dict[str, Any], expected: list[int]) -> None:
    s = Setup(LEGACY)
    assert s.ids({"loc": {"$geoWithin": shape}}) == expected
    assert s.ids({"loc": {"$within": shape}}) == expected  # the legacy name


def test_center_sphere_is_the_manuals_ten_miles() -> None:
    # The manual: $centerSphere [[-88, 30], 10 / 3963.2] (ten miles, in radians).
    near, far = [-88.1, 30.05], [-88.3, 30.1]
    assert haversine_meters([-88, 30], near) < 16093 < haversine_meters([-88, 30], far)
    s = Setup([{"_id": "near", "loc": near}, {"_id": "far", "loc": far}])
    assert s.ids({"loc": {"$geoWithin": {"$centerSphere": [[-88, 30], 10 / 3963.2]}}}) == ["near"]


SQUARE_WITH_HOLE = {
    "type": "Polygon",
    "coordinates": [
        [[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]],
        [[4, 4], [6, 4], [6, 6], [4, 6], [4, 4]],
    ],
}


def test_geo_within_a_polygon_with_a_hole() -> None:
    docs = [
        {"_id": "in", "g": {"type": "Point", "coordinates": [2, 2]}},
        {"_id": "hole", "g": {"type": "Point", "coordinates": [5, 5]}},
        {"_id": "out", "g": {"type": "Point", "coordinates": [12, 5]}},
        {"_id": "legacy", "g": [8, 8]},
        {"_id": "line in", "g": {"type": "LineString", "coordinates": [[1, 1], [3, 1]]}},
        {"_id": "line across", "g": {"type": "LineString", "coordinates": [[1, 1], [12, 1]]}},
        {"_id": "line over hole", "g": {"type": "LineString", "coordinates": [[3, 5], [7, 5]]}},
        {"_id": "many", "g": [{"type": "Point", "coordinates": [20, 20]}, [1, 2]]},
    ]
    s = Setup(docs, {"g": "2dsphere"})
    assert s.ids({"g": {"$geoWithin": {"$geometry": SQUARE_WITH_HOLE}}}) == [
        "in",
        "legacy",
        "line in",
        "many",
    ]


def test_geo_intersects() -> None:
    # The manual's $geoIntersects polygon.
    polygon = {"type": "Polygon", "coordinates": [[[0, 0], [3, 6], [6, 1], [0, 0]]]}
    docs = [
        {"_id": "inside", "g": {"type": "Point", "coordinates": [3, 2]}},
        {"_id": "vertex", "g": {"type": "Point", "coordinates": [3, 6]}},
        {"_id": "crossing", "g": {"type": "LineString", "coordinates": [[-1, 3], [10, 3]]}},
        {"_id": "apart", "g": {"type": "LineString", "coordinates": [[10, 10], [11, 11]]}},
        {
            "_id": "overlap",
            "g": {"type": "Polygon", "coordinates": [[[5, 0], [9, 0], [9, 4], [5, 0]]]},
        },
        {"_id": "far", "g": {"type": "Point", "coordinates": [50, 50]}},
    ]
    s = Setup(docs)
    assert s.ids({"g": {"$geoIntersects": {"$geometry": polygon}}}) == [
        "inside",
        "vertex",
        "crossing",
        "overlap",
    ]


def test_geo_within_refuses_a_geometry_without_area() -> None:
    s = Setup(PLACES)
    e = error(s.find, {"location": {"$geoWithin": {"$geometry": POINT}}})
    assert e.code == 2 and "$geoWithin not supported with provided geometry" in e.errmsg
    e = error(s.find, {"location": {"$geoWithin": {"$center": [[0, 0], -1]}}})
    assert (e.code, e.errmsg) == (2, "radius must be a non-negative number")
    e = error(s.find, {"location": {"$geoWithin": {"$polygon": [[0, 0], [1, 1]]}}})
    assert e.errmsg == "Polygon must have at least 3 points"


# -- GeoJSON validation: "Can't extract geo keys" ------------------------------------------


VALID = [
    {"type": "Point", "coordinates": [40, 5]},
    {"type": "Point", "coordinates": [40, 5, 100]},  # an altitude is allowed
    {"type": "LineString", "coordinates": [[40, 5], [41, 6]]},
    SQUARE_WITH_HOLE,
    {"type": "MultiPoint", "coordinates": [[-73.9580, 40.8003], [-73.9498, 40.7968]]},
    {
        "type": "MultiLineString",
        "coordinates": [
            [[-73.96943, 40.78519], [-73.96082, 40.78095]],
            [[-73.9, 40.7], [-73.8, 40.8]],
        ],
    },
    {
        "type": "MultiPolygon",
        "coordinates": [
            [[[-73.958, 40.8003], [-73.9498, 40.7968], [-73.9737, 40.7648], [-73.958, 40.8003]]],
            [[[-73.958, 40.8003], [-73.9498, 40.7968], [-73.9737, 40.7648], [-73.958, 40.8003]]],
        ],
    },
    {
        "type": "GeometryCollection",
        "geometries": [
            {"type": "Point", "coordinates": [-73.9580, 40.8003]},
            {"type": "LineString", "coordinates": [[-73.96943, 40.78519], [-73.96082, 40.78095]]},
        ],
    },
    [-73.97, 40.77],  # a legacy pair within the sphere's bounds
]


@pytest.mark.parametrize("geometry", VALID, ids=lambda g: str(g)[:40])
def test_valid_geometries_are_stored(geometry: Any) -> None:
    s = Setup([], {"g": "2dsphere"})
    s.insert({"_id": 1, "g": geometry})
    assert s.ids({"g": {"$geoWithin": {"$centerSphere": [[0, 0], math.pi]}}}) == [1]


INVALID = [
    (
        {"type": "Point", "coordinates": [200, 0]},
        "longitude/latitude is out of bounds, lng: 200 lat: 0",
    ),
    (
        {"type": "Point", "coordinates": [0, 91]},
        "longitude/latitude is out of bounds, lng: 0 lat: 91",
    ),
    ({"type": "Point", "coordinates": ["a", 1]}, "Point must only contain numeric elements"),
    ({"type": "Point"}, "Point must be an array or object"),
    (
        {"type": "Punkt", "coordinates": [1, 1]},
        'unknown GeoJSON type: { type: "Punkt", coordinates: [ 1, 1 ] }',
    ),
    (
        {"type": "LineString", "coordinates": [[1, 1]]},
        "GeoJSON LineString must have at least 2 vertices: [ [ 1, 1 ] ]",
    ),
    (
        {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0]]]},
        "Loop is not closed: [ [ 0, 0 ], [ 1, 1 ], [ 1, 0 ] ]",
    ),
    (
        {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [0, 0]]]},
        "Loop must have at least 3 different vertices: [ [ 0, 0 ], [ 1, 1 ], [ 0, 0 ] ]",
    ),
    (
        {"type": "Polygon", "coordinates": [[[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]]]},
        "Loop is not valid: [ [ 0, 0 ], [ 2, 2 ], [ 2, 0 ], [ 0, 2 ], [ 0, 0 ] ] Edges cross",
    ),
    (
        {
            "type": "Polygon",
            "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]], [[5, 5], [6, 5], [6, 6], [5, 5]]],
        },
        "Secondary loops not contained by first exterior loop - secondary loops must be holes:"
        " [ [ 5, 5 ], [ 6, 5 ], [ 6, 6 ], [ 5, 5 ] ] first loop: [ [ 0, 0 ], [ 1, 0 ], [ 1, 1 ],"
        " [ 0, 0 ] ]",
    ),
    (
        {"type": "MultiPoint", "coordinates": []},
        "MultiPoint coordinates must have at least 1 element",
    ),
    (
        {
            "type": "GeometryCollection",
            "geometries": [{"type": "GeometryCollection", "geometries": []}],
        },
        'GeometryCollections cannot be nested: { type: "GeometryCollection", geometries: [] }',
    ),
    ([200, 0], "longitude/latitude is out of bounds, lng: 200 lat: 0"),
    ("here", "geo element must be an array or object"),
]


@pytest.mark.parametrize(("geometry", "reason"), INVALID, ids=lambda g: str(g)[:40])
def test_invalid_geometries_cannot_be_stored(geometry: Any, reason: str) -> None:
    s = Setup([], {"g": "2dsphere"})
    doc = {"_id": 1, "g": geometry}
    e = error(s.insert, doc)
    assert e.code == 16755
    assert e.errmsg == f"Can't extract geo keys: {render_document(doc)}  {reason}"
    assert len(s.coll) == 0  # nothing was stored


def test_invalid_geometries_fail_an_index_build_and_an_update() -> None:
    bad = {"_id": 2, "g": {"type": "Point", "coordinates": [500, 0]}}
    s = Setup([{"_id": 1, "g": [1, 1]}, bad])
    assert error(s.index, {"g": "2dsphere"}).code == 16755
    assert s.coll.indexes == {}
    s = Setup([{"_id": 1, "g": [1, 1]}], {"g": "2dsphere"})
    with pytest.raises(CommandError) as caught:
        crud.update(s.coll, {"_id": 1}, {"$set": {"g": "nowhere"}}, lambda: next(s.stamps))
    assert caught.value.code == 16755
    s.insert({"_id": 3, "other": 1})  # no geo field: not indexed, and accepted
    s.insert({"_id": 4, "g": None})


def test_a_query_geometry_is_checked_too() -> None:
    s = Setup(PLACES)
    bad = {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0]]]}
    e = error(s.find, {"location": {"$geoWithin": {"$geometry": bad}}})
    assert (e.code, e.errmsg) == (2, "Loop is not closed: [ [ 0, 0 ], [ 1, 1 ], [ 1, 0 ] ]")


# -- listIndexes shapes and the 2d index --------------------------------------------------------


def test_index_listing_shapes() -> None:
    assert index_listing({"v": 2, "key": {"loc": "2dsphere"}, "name": "loc_2dsphere"}) == {
        "v": 2,
        "key": {"loc": "2dsphere"},
        "name": "loc_2dsphere",
        "2dsphereIndexVersion": 3,
    }
    assert (
        index_listing({"v": 2, "key": {"loc": "2dsphere"}, "name": "x", "2dsphereIndexVersion": 2})[
            "2dsphereIndexVersion"
        ]
        == 2
    )
    flat = {"v": 2, "key": {"loc": "2d"}, "name": "loc_2d", "bits": 20, "min": -500, "max": 500}
    assert index_listing(flat) == flat
    assert index_listing({"v": 2, "key": {"a": 1}, "name": "a_1"}) == {
        "v": 2,
        "key": {"a": 1},
        "name": "a_1",
    }


def test_2d_index_options_and_bounds() -> None:
    s = Setup()
    assert error(s.index, {"loc": "2d"}, bits=40).code == 13028
    assert error(s.index, {"loc": "2d"}, min=10, max=10).code == 13022
    assert error(s.index, {"a": 1, "loc": "2d"}).code == 16801
    assert error(s.index, {"loc": "2dsphere"}, **{"2dsphereIndexVersion": 4}).code == 67
    s.index({"loc": "2d"}, min=-500, max=500)
    s.insert({"_id": 1, "loc": [400, -400]})
    s.insert({"_id": 2, "loc": "not a point"})  # a 2d index does not index it
    e = error(s.insert, {"_id": 3, "loc": [500, 0]})
    assert e.code == 13027 and e.errmsg.startswith("point not in interval of [ -500, 500 )")
    assert error(s.insert, {"_id": 4, "loc": [1, "x"]}).code == 13026
    assert error(s.insert, {"_id": 5, "loc": [[1, 2], 7]}).code == 16804


# -- the $geoNear stage -------------------------------------------------------------------------


def test_geo_near_stage_is_the_manuals_answer() -> None:
    s = Setup(PLACES, {"location": "2dsphere"})
    out = s.geo_near(
        {
            "near": {"type": "Point", "coordinates": [-73.99279, 40.719296]},
            "distanceField": "dist.calculated",
            "maxDistance": 2,
            "query": {"category": "Parks"},
            "includeLocs": "dist.location",
            "spherical": True,
        }
    )
    assert out == [
        {
            **PLACES[1],
            "dist": {"calculated": 0.9539931676365992, "location": PLACES[1]["location"]},
        }
    ]


def test_geo_near_stage_options() -> None:
    s = Setup(PLACES, {"location": "2dsphere"}, {"category": 1})
    near = {"type": "Point", "coordinates": [-73.99279, 40.719296]}
    out = s.geo_near(
        {"near": near, "distanceField": "d", "minDistance": 2, "distanceMultiplier": 0.001}
    )
    assert [d["_id"] for d in out] == [1, 3]
    assert out[0]["d"] == pytest.approx(
        haversine_meters(near["coordinates"], PLACES[0]["location"]["coordinates"]) / 1000
    )
    stadiums = s.geo_near({"near": near, "distanceField": "d", "query": {"category": "Stadiums"}})
    assert [d["_id"] for d in stadiums] == [3]
    radians = s.geo_near({"near": [-73.99279, 40.719296], "distanceField": "d", "spherical": True})
    assert [d["_id"] for d in radians] == [2, 1, 3]
    assert radians[1]["d"] == pytest.approx(out[0]["d"] * 1000 / 6378100)


def test_geo_near_stage_errors() -> None:
    s = Setup(PLACES)
    near = {"type": "Point", "coordinates": [0, 0]}
    e = error(s.geo_near, {"near": near, "distanceField": "d"})
    assert (e.code, e.errmsg) == (
        27,
        "$geoNear requires a 2d or 2dsphere index, but none were found",
    )
    s.index({"location": "2dsphere"})
    s.index({"other": "2dsphere"})
    assert error(s.geo_near, {"near": near, "distanceField": "d"}).code == 27
    by_distance = sorted(
        PLACES, key=lambda p: haversine_meters([0, 0], p["location"]["coordinates"])
    )
    found = s.geo_near({"near": near, "distanceField": "d", "key": "location"})
    assert [d["_id"] for d in found] == [p["_id"] for p in by_distance]
    assert error(s.geo_near, {"distanceField": "d"}).code == 16605
    assert error(s.geo_near, {"near": near}).code == 16606
    assert error(s.geo_near, {"near": near, "distanceField": "d", "limit": 1}).code == 50858
    assert error(s.geo_near, {"near": near, "distanceField": "d", "key": 1}).code == 14
    e = error(s.geo_near, {"near": near, "distanceField": "d", "key": "nowhere"})
    assert e.code == 291


def test_geo_near_stage_in_a_pipeline() -> None:
    s = Setup(PLACES, {"location": "2dsphere"})
    near = {"type": "Point", "coordinates": [-73.99279, 40.719296]}
    # Its query compiles with the command's let and collation, as $match's does.
    out = s.aggregate(
        [
            {
                "$geoNear": {
                    "near": near,
                    "distanceField": "d",
                    "query": {"$expr": {"$eq": ["$category", "$$kind"]}},
                }
            },
            {"$project": {"_id": 1}},
        ],
        variables={"kind": "Parks"},
    )
    assert out == [{"_id": 2}, {"_id": 1}]
    parks = s.aggregate(
        [{"$geoNear": {"near": near, "distanceField": "d", "query": {"category": "parks"}}}],
        collation=parse_collation({"locale": "en", "strength": 2}),
    )
    assert [d["_id"] for d in parks] == [2, 1]
    e = error(s.aggregate, [{"$match": {}}, {"$geoNear": {"near": near, "distanceField": "d"}}])
    assert e.code == 40602
    # Without the provider (a pipeline the command layer did not give one) it is refused.
    e = error(
        lambda: parse_pipeline(
            [{"$geoNear": {"near": near, "distanceField": "d"}}], PipelineContext()
        )
    )
    assert e.code == 238


def test_writes_take_a_near_querys_matches_nearest_first() -> None:
    s = Setup(reversed(PLACES), {"location": "2dsphere"})
    near = {"location": {"$near": {"$geometry": POINT}}}
    stamps = lambda: next(s.stamps)  # noqa: E731
    crud.update(s.coll, near, {"$set": {"nearest": True}}, stamps, context=s.context)
    assert [d["_id"] for d in s.find({"nearest": True})] == [1]
    assert crud.delete(s.coll, near, stamps, limit=1, context=s.context) == 1
    assert sorted(d["_id"] for d in s.find({})) == [2, 3]
    doc, _ = crud.find_and_modify(s.coll, near, stamps, remove=True, context=s.context)
    assert doc is not None and doc["_id"] == 3
