"""The child process that runs a ``$where`` function for the simulator (sim/javascript.py).

Run as a script (``python -I javascript_worker.py``), never imported by the simulator:
it needs only the standard library and the embedded JavaScript engine (dukpy, a
QuickJS build), so that a script that never ends can be stopped by killing this
process, which no in-process engine without a time limit allows.

It speaks newline-delimited JSON over its standard input and output, one request, then
one answer, in turn:

- ``{"function": source}`` -> ``{"ready": true}`` or ``{"error": message}``
- ``{"document": text}`` (extended JSON) -> ``{"match": bool}`` or ``{"error": message}``;
  while the function runs, each ``sleep(ms)`` asks ``{"sleep": ms}`` and waits for
  ``{"slept": true}`` (the simulator does the sleeping, interruptibly).

For a map-reduce (sim/engine/map_reduce.py) the first request is
``{"mapReduce": {"map": source, "reduce": source, "finalize": source or null,
"scope": text}}`` instead, answered ``{"ready": true}``; then, in any order:

- ``{"map": text}`` (a document) -> ``{"emits": text}`` (a list of ``[key, value]``);
- ``{"reduce": text}`` (``[key, [values]]``) -> ``{"value": text}``;
- ``{"finalize": text}`` (``[key, value]``) -> ``{"value": text}``.

Those texts are canonical extended JSON both ways, so that what a script returns keeps
its BSON types: a JavaScript number is a double (as a server's engine returns it), a
64-bit integer a NumberLong, and a value the script has no type for (Binary,
Timestamp, ...) goes back as it came.

End of input ends the process. A JavaScript error (syntax or exception) is answered
with its message; the process then ends.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Optional

# The global scope the function sees: the shell's sleep and ObjectId, documents revived
# from extended JSON into JavaScript values, and none of the engine's host helpers
# (module loading, the environment).
_PRELUDE = r"""
(function () {
  var host = globalThis.call_python;
  var where = null;

  function ObjectId(hex) {
    if (!(this instanceof ObjectId)) { return new ObjectId(hex); }
    this.str = String(hex);
  }
  ObjectId.prototype.toString = function () { return 'ObjectId("' + this.str + '")'; };
  ObjectId.prototype.toJSON = function () { return this.str; };
  ObjectId.prototype.valueOf = function () { return this.str; };
  ObjectId.prototype.equals = function (other) {
    return other instanceof ObjectId && other.str === this.str;
  };
  ObjectId.prototype.getTimestamp = function () {
    return new Date(parseInt(this.str.slice(0, 8), 16) * 1000);
  };

  // The shell's NumberLong and NumberDecimal: numbers as objects that keep their
  // digits, so that a 64-bit integer or a decimal goes back with its BSON type.
  function NumberLong(value) {
    if (!(this instanceof NumberLong)) { return new NumberLong(value); }
    this.str = String(value === undefined ? 0 : value);
  }
  NumberLong.prototype.valueOf = function () { return Number(this.str); };
  NumberLong.prototype.toNumber = function () { return Number(this.str); };
  NumberLong.prototype.toString = function () { return 'NumberLong(' + this.str + ')'; };
  function NumberDecimal(value) {
    if (!(this instanceof NumberDecimal)) { return new NumberDecimal(value); }
    this.str = String(value === undefined ? 0 : value);
  }
  NumberDecimal.prototype.valueOf = function () { return Number(this.str); };
  NumberDecimal.prototype.toString = function () { return 'NumberDecimal("' + this.str + '")'; };

  function jsFlags(options) {
    var flags = '';
    for (var i = 0; i < options.length; i++) {
      if ('gimsuy'.indexOf(options[i]) >= 0 && flags.indexOf(options[i]) < 0) {
        flags += options[i];
      }
    }
    return flags;
  }

  // JSON.parse revives inner values first: a {"$date": {"$numberLong": ...}} sees
  // the number already.
  function revive(key, value) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) { return value; }
    var keys = Object.keys(value);
    if (keys.length !== 1) { return value; }
    var inner = value[keys[0]];
    switch (keys[0]) {
      case '$oid': return new ObjectId(inner);
      case '$date': return new Date(inner);
      case '$numberInt':
      case '$numberLong':
      case '$numberDouble':
      case '$numberDecimal': return Number(inner);
      case '$symbol': return String(inner);
      case '$regularExpression':
        try { return new RegExp(inner.pattern, jsFlags(inner.options || '')); }
        catch (e) { return value; }
      default: return value;
    }
  }

  // A map-reduce's documents keep their 64-bit integers and decimals as objects.
  function reviveTyped(key, value) {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      var keys = Object.keys(value);
      if (keys.length === 1 && keys[0] === '$numberLong') {
        return new NumberLong(value.$numberLong);
      }
      if (keys.length === 1 && keys[0] === '$numberDecimal') {
        return new NumberDecimal(value.$numberDecimal);
      }
    }
    return revive(key, value);
  }

  function numberText(x) {
    if (x === 0 && 1 / x < 0) { return '-0.0'; }
    return String(x);
  }

  // A JavaScript value as canonical extended JSON (what the server's engine makes of
  // it when it converts it back to BSON).
  function toEJSON(v) {
    if (v === null) { return null; }
    if (v === undefined) { return {$undefined: true}; }
    switch (typeof v) {
      case 'number': return {$numberDouble: numberText(v)};
      case 'string': return v;
      case 'boolean': return v;
      case 'function': return {$code: String(v)};
      default: break;
    }
    if (v instanceof Date) {
      var t = v.getTime();
      return {$date: {$numberLong: String(isNaN(t) ? -9223372036854775808 : t)}};
    }
    if (v instanceof ObjectId) { return {$oid: v.str}; }
    if (v instanceof NumberLong) { return {$numberLong: v.str}; }
    if (v instanceof NumberDecimal) { return {$numberDecimal: v.str}; }
    if (v instanceof RegExp) {
      return {$regularExpression: {pattern: v.source, options: v.flags.split('').sort().join('')}};
    }
    if (Array.isArray(v)) {
      var items = [];
      for (var i = 0; i < v.length; i++) { items.push(toEJSON(v[i])); }
      return items;
    }
    var out = {};
    var names = Object.keys(v);
    for (var j = 0; j < names.length; j++) {
      var item = v[names[j]];
      if (typeof item !== 'undefined') { out[names[j]] = toEJSON(item); }
    }
    return out;
  }

  var mr = null;
  var emitted = null;
  function compileFunction(source, what) {
    var f = (0, eval)('(' + source + '\n)');
    if (typeof f !== 'function') { throw new TypeError(what + ' is not a function'); }
    return f;
  }

  globalThis.sleep = function (ms) { host('sleep', Number(ms) || 0); };
  globalThis.ObjectId = ObjectId;
  // The helpers a server's JavaScript has on Array (the manual's reduce functions use
  // Array.sum).
  Array.sum = function (values) {
    var total = 0;
    for (var i = 0; i < values.length; i++) { total += values[i]; }
    return total;
  };
  Array.avg = function (values) {
    return values.length === 0 ? null : Array.sum(values) / values.length;
  };
  globalThis.NumberLong = NumberLong;
  globalThis.NumberDecimal = NumberDecimal;
  globalThis.emit = function (key, value) {
    if (arguments.length !== 2) { throw new Error('emit takes 2 args'); }
    if (emitted === null) { throw new Error('emit is only available to a map function'); }
    emitted.push([key === undefined ? null : key, value]);
  };
  Object.defineProperty(globalThis, '__mongocore_mr', {
    value: {
      compile: function (text) {
        var spec = JSON.parse(text);
        var scope = JSON.parse(spec.scope, reviveTyped);
        Object.keys(scope).forEach(function (name) { globalThis[name] = scope[name]; });
        mr = {
          map: compileFunction(spec.map, 'map'),
          reduce: compileFunction(spec.reduce, 'reduce'),
          finalize: spec.finalize === null ? null : compileFunction(spec.finalize, 'finalize')
        };
        return true;
      },
      map: function (text) {
        var doc = JSON.parse(text, reviveTyped);
        emitted = [];
        try { mr.map.call(doc); } finally { var pairs = emitted; emitted = null; }
        return JSON.stringify(toEJSON(pairs));
      },
      reduce: function (text) {
        var args = JSON.parse(text, reviveTyped);
        return JSON.stringify(toEJSON([mr.reduce.call(null, args[0], args[1])]));
      },
      finalize: function (text) {
        var args = JSON.parse(text, reviveTyped);
        return JSON.stringify(toEJSON([mr.finalize.call(null, args[0], args[1])]));
      }
    }
  });
  Object.defineProperty(globalThis, '__mongocore_where', {
    value: {
      compile: function (source) {
        where = (0, eval)('(' + source + '\n)');
        if (typeof where !== 'function') { throw new TypeError('$where is not a function'); }
        return true;
      },
      match: function (text) {
        var doc = JSON.parse(text, revive);
        globalThis.obj = doc;
        return !!where.call(doc);
      }
    }
  });
  delete globalThis.call_python;
  delete globalThis.require;
  delete globalThis.process;
})();
"""


_ENGINE_HOST_CALLS = ("dukpy.load_module", "dukpy.normalize_module")


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _receive() -> Optional[dict[str, Any]]:
    line = sys.stdin.readline()
    if not line:
        return None
    message = json.loads(line)
    return message if isinstance(message, dict) else None


def _sleep(ms: Any) -> None:
    _send({"sleep": ms})
    if _receive() is None:
        # The simulator went away (it kills this process when it interrupts a sleep):
        # end at once, not through an exception the script could catch.
        os._exit(0)


def _refuse(*_args: Any) -> None:
    raise RuntimeError("not available to server-side JavaScript")


def _error_text(exc: BaseException) -> str:
    # The engine appends a stack ("    at <eval> ..."); the first line names the error.
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def main() -> int:
    try:
        # Imported here so that a missing engine is answered, not a crash.
        import dukpy  # noqa: PLC0415
    except ImportError as exc:
        _send({"fatal": f"the JavaScript engine (dukpy) is not installed: {exc}"})
        return 1
    interpreter = dukpy.JSInterpreter()
    interpreter.export_function("sleep", _sleep)
    # The engine's own host calls stay reachable through its call_python (which it
    # defines again before each evaluation): module loading reads files, so refuse it.
    for name in _ENGINE_HOST_CALLS:
        interpreter.export_function(name, _refuse)
    interpreter.evaljs(_PRELUDE)
    request = _receive()
    if request is not None and isinstance(request.get("mapReduce"), dict):
        return _map_reduce(interpreter, request["mapReduce"], dukpy.JSRuntimeError)
    if request is None or not isinstance(request.get("function"), str):
        return 0
    try:
        interpreter.evaljs(f"__mongocore_where.compile({json.dumps(request['function'])})")
    except dukpy.JSRuntimeError as exc:
        _send({"error": _error_text(exc)})
        return 0
    _send({"ready": True})
    while True:
        request = _receive()
        if request is None or not isinstance(request.get("document"), str):
            return 0
        try:
            matched = interpreter.evaljs(
                f"__mongocore_where.match({json.dumps(request['document'])})"
            )
        except dukpy.JSRuntimeError as exc:
            _send({"error": _error_text(exc)})
            return 0
        _send({"match": bool(matched)})


def _map_reduce(interpreter: Any, spec: dict[str, Any], script_error: type[Exception]) -> int:
    """Serve a map-reduce's map, reduce and finalize requests (module doc)."""
    try:
        interpreter.evaljs(f"__mongocore_mr.compile({json.dumps(json.dumps(spec))})")
    except script_error as exc:
        _send({"error": _error_text(exc)})
        return 0
    _send({"ready": True})
    while True:
        request = _receive()
        if request is None:
            return 0
        phase = next((p for p in ("map", "reduce", "finalize") if p in request), None)
        if phase is None or not isinstance(request[phase], str):
            return 0
        try:
            text = interpreter.evaljs(f"__mongocore_mr.{phase}({json.dumps(request[phase])})")
        except script_error as exc:
            _send({"error": _error_text(exc)})
            return 0
        _send({"emits" if phase == "map" else "value": text})


if __name__ == "__main__":
    sys.exit(main())
