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

  globalThis.sleep = function (ms) { host('sleep', Number(ms) || 0); };
  globalThis.ObjectId = ObjectId;
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


if __name__ == "__main__":
    sys.exit(main())
