"""Map-reduce (sim/engine/map_reduce.py with sim/javascript.py's MapReduceScript): the
manual's examples, the output actions, and a 7.0 server's parse errors."""

from __future__ import annotations

import datetime
from typing import Any, Optional

import pytest
from bson import Code, Int64, ObjectId

from mongocore.sim.codes import CommandError
from mongocore.sim.engine import map_reduce
from mongocore.sim.javascript import MapReduceScript

pytest.importorskip("dukpy")


class _NeverInterrupted:
    def check(self) -> None:
        pass

    def wait(self, timeout: float) -> None:
        pass


# The manual's "Map-Reduce Examples": orders, the total price per customer.
ORDERS = [
    {"_id": 1, "cust_id": "Ant O. Knee", "price": 25, "items": [{"sku": "oranges", "qty": 5}]},
    {"_id": 2, "cust_id": "Ant O. Knee", "price": 70, "items": [{"sku": "oranges", "qty": 8}]},
    {"_id": 3, "cust_id": "Busby Bee", "price": 50, "items": [{"sku": "pears", "qty": 10}]},
    {"_id": 4, "cust_id": "Busby Bee", "price": 25, "items": [{"sku": "oranges", "qty": 10}]},
    {"_id": 5, "cust_id": "Cam Elot", "price": 50, "items": [{"sku": "chocolates", "qty": 5}]},
]
MAP_PRICE = "function() { emit(this.cust_id, this.price); }"
REDUCE_SUM = "function(key, values) { return Array.sum(values); }"
REDUCE_LOOP = """function(key, values) {
    var total = 0;
    for (var i = 0; i < values.length; i++) { total += values[i]; }
    return total;
}"""


def script(
    map_code: str, reduce_code: str, finalize: Optional[str] = None, **scope: Any
) -> MapReduceScript:
    return MapReduceScript(map_code, reduce_code, finalize, scope, _NeverInterrupted())


@pytest.mark.parametrize("reduce_code", [REDUCE_LOOP, REDUCE_SUM])
def test_total_price_per_customer(reduce_code: str) -> None:
    with script(MAP_PRICE, reduce_code) as functions:
        results = map_reduce.run(ORDERS, functions)
    assert results == [
        {"_id": "Ant O. Knee", "value": 95.0},
        {"_id": "Busby Bee", "value": 75.0},
        {"_id": "Cam Elot", "value": 50},  # one value: not reduced
    ]
    # A JavaScript number comes back a double, as from a server's engine; a key
    # emitted once keeps its value as the map function gave it.
    assert isinstance(results[0]["value"], float)


def test_finalize_and_scope() -> None:
    map_code = """function() {
        for (var i = 0; i < this.items.length; i++) {
            emit(this.items[i].sku, {count: 1, qty: this.items[i].qty});
        }
    }"""
    reduce_code = """function(key, values) {
        var out = {count: 0, qty: 0};
        values.forEach(function(v) { out.count += v.count; out.qty += v.qty; });
        return out;
    }"""
    finalize = (
        "function(key, value) { value.avg = value.qty / value.count * factor; return value; }"
    )
    with script(map_code, reduce_code, finalize, factor=2) as functions:
        results = map_reduce.run(ORDERS, functions, finalize=True)
    assert results == [
        {"_id": "chocolates", "value": {"count": 1, "qty": 5, "avg": 10.0}},
        {"_id": "oranges", "value": {"count": 3.0, "qty": 23.0, "avg": 46 / 3}},
        {"_id": "pears", "value": {"count": 1, "qty": 10, "avg": 20.0}},
    ]


def test_keys_group_by_bson_value_and_sort_in_bson_order() -> None:
    docs = [{"k": 1}, {"k": 1.0}, {"k": Int64(1)}, {"k": "a"}, {"k": None}, {"k": [1, 2]}]
    with script("function() { emit(this.k, 1); }", REDUCE_LOOP) as functions:
        results = map_reduce.run(docs, functions)
    # 1, 1.0 and NumberLong(1) are one key; null sorts before numbers, then strings,
    # then arrays (objects of the key's type).
    assert [r["_id"] for r in results] == [None, 1.0, "a", [1.0, 2.0]]
    assert results[1]["value"] == 3.0


def test_bson_types_cross_into_javascript_and_back() -> None:
    oid = ObjectId()
    when = datetime.datetime(2020, 3, 1, 12, 30)
    doc = {"_id": oid, "when": when, "n": Int64(2**40)}
    map_code = """function() {
        emit(this._id, {t: this.when.getTime(), d: this.when, n: this.n + 1, s: this._id.str});
    }"""
    with script(map_code, REDUCE_LOOP) as functions:
        (result,) = map_reduce.run([doc], functions)
    assert result["_id"] == oid
    assert result["value"] == {
        "t": float(int(when.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)),
        "d": when,
        "n": float(2**40 + 1),
        "s": str(oid),
    }


def test_emit_and_script_errors_are_js_interpreter_failures() -> None:
    one_argument = script("function() { emit(this.a); }", REDUCE_LOOP)
    with one_argument as functions, pytest.raises(CommandError) as info:
        map_reduce.run([{"a": 1}], functions)
    assert info.value.code == 139
    assert "emit takes 2 args" in info.value.errmsg
    with pytest.raises(CommandError) as info, script("function( {", REDUCE_LOOP):
        pass
    assert info.value.code == 139
    failing = script(MAP_PRICE, "function(k, v) { throw new Error('boom'); }")
    with failing as functions, pytest.raises(CommandError, match="boom"):
        map_reduce.run(ORDERS, functions)


def test_output_actions() -> None:
    stored = {"Ant O. Knee": {"_id": "Ant O. Knee", "value": 5.0}}
    results = [{"_id": "Ant O. Knee", "value": 95.0}, {"_id": "Zed", "value": 1.0}]
    with script(MAP_PRICE, REDUCE_LOOP) as functions:
        for action in ("replace", "merge"):
            output = map_reduce.Output(inline=False, action=action, collection="out")
            assert map_reduce.output_writes(output, stored.get, results, functions) == results
        output = map_reduce.Output(inline=False, action="reduce", collection="out")
        writes = map_reduce.output_writes(output, stored.get, results, functions)
    assert writes == [{"_id": "Ant O. Knee", "value": 100.0}, {"_id": "Zed", "value": 1.0}]


def test_reduce_output_passes_the_stored_value_first() -> None:
    stored = {1: {"_id": 1, "value": "old"}}
    output = map_reduce.Output(inline=False, action="reduce", collection="out")
    with script(MAP_PRICE, "function(k, v) { return v.join('+'); }") as functions:
        writes = map_reduce.output_writes(
            output, stored.get, [{"_id": 1, "value": "new"}], functions
        )
    assert writes == [{"_id": 1, "value": "old+new"}]


def _command(**fields: Any) -> dict[str, Any]:
    cmd: dict[str, Any] = {"mapReduce": "orders", "map": MAP_PRICE, "reduce": REDUCE_SUM}
    cmd["out"] = {"inline": 1}
    cmd.update(fields)
    return {k: v for k, v in cmd.items() if v is not None}


def test_parse() -> None:
    spec = map_reduce.parse(
        _command(out={"reduce": "totals", "db": "other"}, query={"price": {"$gt": 1}}, limit=2)
    )
    assert spec.out == map_reduce.Output(
        inline=False, action="reduce", collection="totals", db="other"
    )
    assert (spec.query, spec.limit, spec.finalize) == ({"price": {"$gt": 1}}, 2, None)
    assert map_reduce.parse(_command(out="totals")).out.action == "replace"
    assert map_reduce.parse(_command(map=Code(MAP_PRICE))).map == MAP_PRICE
    assert map_reduce.reply(spec, []) == {
        "result": {"db": "other", "collection": "totals"},
        "ok": 1.0,
    }
    assert map_reduce.reply(map_reduce.parse(_command(out="t")), []) == {"result": "t", "ok": 1.0}
    inline = map_reduce.parse(_command())
    assert map_reduce.reply(inline, [{"_id": 1, "value": 2}]) == {
        "results": [{"_id": 1, "value": 2}],
        "ok": 1.0,
    }


@pytest.mark.parametrize(
    ("fields", "code", "message"),
    [
        ({"bogus": 1}, 40415, "BSON field 'MapReduce.bogus' is an unknown field."),
        ({"out": None}, 40414, "BSON field 'MapReduce.out' is missing but a required field"),
        ({"map": 5}, 2, "'map' must be of string or code type"),
        ({"reduce": Code("function(){}", {"a": 1})}, 2, "'reduce' must be of string or code type"),
        ({"out": 5}, 2, "'out' must be either a string or an object"),
        ({"out": {"inline": 1, "db": "x"}}, 72, "'inline' must be specified alone"),
        ({"out": {"inline": 2}}, 2, "'inline' takes only numeric '1'"),
        ({"out": {"db": "x"}}, 2, "'out' requires 'replace', 'merge' or 'reduce'"),
        ({"out": {"merge": 1}}, 2, "'merge' supports only string consisting of output"),
        ({"out": {"merge": "a", "db": "admin"}}, 115, "cannot target internal database"),
        ({"out": {"merge": "a", "nonAtomic": False}}, 2, "nonAtomic field value must be true"),
        ({"out": {"merge": "a", "other": 1}}, 2, "'out' supports only output type"),
        ({"query": [1]}, 14, "BSON field 'MapReduce.query' is the wrong type 'array'"),
        ({"limit": "2"}, 14, "BSON field 'MapReduce.limit' is the wrong type 'string'"),
        ({"limit": -1}, 15958, "the limit must be positive"),
    ],
)
def test_parse_errors(fields: dict[str, Any], code: int, message: str) -> None:
    cmd = _command(**fields)
    if "out" in fields and fields["out"] is None:
        cmd.pop("out", None)
    with pytest.raises(CommandError) as info:
        map_reduce.parse(cmd)
    assert info.value.code == code
    assert info.value.errmsg.startswith(message)


def test_a_key_emitted_once_is_not_reduced() -> None:
    with script(MAP_PRICE, "function(k, v) { return 'reduced'; }") as functions:
        results = map_reduce.run(ORDERS, functions)
    assert [r["value"] for r in results] == ["reduced", "reduced", 50]
