"""Server-side JavaScript for the simulated mongod: the function of a ``$where`` filter,
and a map-reduce's map, reduce and finalize functions (:class:`MapReduceScript`).

A server compiles a ``$where`` string into a function (``function () { ... }`` as
written; an expression on one line becomes ``return <expression>``; other code becomes
the body of a function) and calls it with ``this`` (and the global ``obj``) bound to
each document; a truthy result matches. Its scope has the shell's ``sleep(ms)``, which
a killOp, a closed connection or the operation's ``maxTimeMS`` interrupts.

The function runs in a child process (javascript_worker.py, with the dukpy engine):
the engine has no time limit of its own and keeps the interpreter lock while it runs,
so only a process can be stopped from outside. The simulator does the sleeping, in
the command's thread and without the deployment's lock, so other commands and members
keep answering; it kills the child when the operation is interrupted. Errors are the
server's: JSInterpreterFailure (139) for a syntax error or an exception, and
MaxTimeMSExpired (50) once ``maxTimeMS`` has passed. A script that computes for longer
than :data:`JAVASCRIPT_TIME_LIMIT` seconds (its sleeps not counted) without a
``maxTimeMS`` is killed with JSInterpreterFailure, where a server would let it run.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any, Optional, Protocol

from bson import json_util

from mongocore.sim.codes import CommandError

__all__ = [
    "JAVASCRIPT_TIME_LIMIT",
    "Interruption",
    "MapReduceScript",
    "function_source",
    "where_matches",
]

#: Seconds a script may compute (sleeps excluded) when the operation has no maxTimeMS.
JAVASCRIPT_TIME_LIMIT = 60.0
# How often a wait looks at what only polling can tell (a client that went away).
_POLL_INTERVAL = 0.05
_WORKER = Path(__file__).with_name("javascript_worker.py")
_FUNCTION_START = re.compile(r"function\s*[\w$]*\s*\(")
_RETURN = re.compile(r"(?<![\w$])return(?![\w$])")
_worker_ids = itertools.count(1)


class Interruption(Protocol):
    """What can stop the operation running a script."""

    def check(self) -> None:
        """Raise the operation's error (or CloseConnection) if it must stop now."""

    def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds; may return early when something changed."""


def function_source(code: str) -> str:
    """The JavaScript function a server makes of a ``$where`` string."""
    text = code.strip()
    if _FUNCTION_START.match(text):
        return text
    single_statement = ";" not in text or text.index(";") == len(text) - 1
    if "\n" not in text and not _RETURN.search(text) and single_statement:
        text = f"return {text}"
    # The newline ends a trailing // comment before the closing brace.
    return f"function () {{ {text}\n}}"


def where_matches(
    code: str,
    documents: Iterable[Mapping[str, Any]],
    interruption: Interruption,
    *,
    deadline: Optional[float] = None,
    first_only: bool = False,
    time_limit: Optional[float] = None,
) -> list[int]:
    """The positions of the documents the ``$where`` function matches.

    ``deadline`` is the operation's maxTimeMS as a ``time.monotonic()`` instant;
    ``first_only`` stops at the first match (an update or delete of one document).
    """
    limit = JAVASCRIPT_TIME_LIMIT if time_limit is None else time_limit
    matched: list[int] = []
    with _Worker(interruption, deadline, limit) as worker:
        worker.start(function_source(code))
        for position, document in enumerate(documents):
            text = json_util.dumps(document, json_options=json_util.RELAXED_JSON_OPTIONS)
            if worker.matches(text):
                matched.append(position)
                if first_only:
                    break
    return matched


class MapReduceScript:
    """A map-reduce's functions, compiled once in a child process (javascript_worker.py)
    with the command's ``scope`` as globals: :meth:`map` calls the map function with
    ``this`` bound to a document and returns what it emitted, :meth:`reduce` and
    :meth:`finalize` call theirs. Values cross as canonical extended JSON, so a
    JavaScript number comes back a double, as from a server's engine. Errors,
    interruptions and time limits are those of ``$where`` (module doc). Use it as a
    context manager: leaving it ends the child."""

    def __init__(
        self,
        map_code: str,
        reduce_code: str,
        finalize_code: Optional[str],
        scope: Mapping[str, Any],
        interruption: Interruption,
        *,
        deadline: Optional[float] = None,
        time_limit: Optional[float] = None,
    ) -> None:
        limit = JAVASCRIPT_TIME_LIMIT if time_limit is None else time_limit
        self._worker = _Worker(interruption, deadline, limit)
        self._spec = {
            "map": map_code,
            "reduce": reduce_code,
            "finalize": finalize_code,
            "scope": _ejson(dict(scope)),
        }

    def __enter__(self) -> MapReduceScript:
        self._worker.__enter__()
        try:
            self._worker.request({"mapReduce": self._spec}, "ready")
        except BaseException:
            self._worker.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._worker.__exit__(*exc)

    def map(self, document: Mapping[str, Any]) -> list[tuple[Any, Any]]:
        """The ``(key, value)`` pairs the map function emitted for ``document``."""
        pairs = _from_ejson(self._worker.request({"map": _ejson(document)}, "emits"))
        return [(pair[0], pair[1]) for pair in pairs]

    def reduce(self, key: Any, values: list[Any]) -> Any:
        """What the reduce function returns for ``key`` and ``values``."""
        return _from_ejson(self._worker.request({"reduce": _ejson([key, values])}, "value"))[0]

    def finalize(self, key: Any, value: Any) -> Any:
        """What the finalize function returns for ``key`` and its reduced ``value``."""
        return _from_ejson(self._worker.request({"finalize": _ejson([key, value])}, "value"))[0]


def _ejson(value: Any) -> str:
    return json_util.dumps(value, json_options=json_util.CANONICAL_JSON_OPTIONS)


def _from_ejson(text: Any) -> Any:
    if not isinstance(text, str):
        raise _script_error("JavaScript execution failed: unexpected answer")
    return json_util.loads(text)


def _script_error(message: str) -> CommandError:
    return CommandError(139, message)


class _Worker:
    """One child process running one function, driven in lockstep."""

    def __init__(self, interruption: Interruption, deadline: Optional[float], limit: float):
        self._interruption = interruption
        self._deadline = deadline
        self._limit = limit
        self._computed = 0.0  # seconds the child has computed, sleeps excluded
        self._messages: queue.Queue[Optional[dict[str, Any]]] = queue.Queue()
        self._process: Optional[subprocess.Popen[bytes]] = None
        self._reader: Optional[threading.Thread] = None

    def __enter__(self) -> _Worker:
        # -I: the child ignores the environment and the user's site directory; it
        # gets an environment of its own with nothing of the simulator's in it.
        environment = {key: os.environ[key] for key in ("SYSTEMROOT",) if key in os.environ}
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", str(_WORKER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=environment,
            )
        except OSError as exc:
            raise _script_error(f"JavaScript execution failed: no engine process ({exc})") from exc
        stdout = self._process.stdout
        assert stdout is not None
        self._reader = threading.Thread(
            target=self._read,
            args=(stdout,),
            name=f"mongocore-sim-javascript-{next(_worker_ids)}",
            daemon=True,
        )
        self._reader.start()
        return self

    def __exit__(self, *exc: object) -> None:
        process = self._process
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
        if self._reader is not None:
            self._reader.join()
        if process is not None and process.stdout is not None:
            process.stdout.close()

    def _read(self, stdout: IO[bytes]) -> None:
        try:
            for line in stdout:
                try:
                    message = json.loads(line)
                except ValueError:
                    break
                self._messages.put(message if isinstance(message, dict) else None)
        except (OSError, ValueError):
            pass
        self._messages.put(None)

    def start(self, source: str) -> None:
        self._send({"function": source})
        self._answer("ready")

    def matches(self, document_text: str) -> bool:
        self._send({"document": document_text})
        return bool(self._answer("match"))

    def request(self, message: Mapping[str, Any], key: str) -> Any:
        """Send ``message`` and wait for the answer holding ``key``."""
        self._send(message)
        return self._answer(key)

    def _send(self, message: Mapping[str, Any]) -> None:
        process = self._process
        assert process is not None and process.stdin is not None
        try:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
        except OSError:
            # The child died; reading its answer reports how.
            pass

    def _answer(self, key: str) -> Any:
        """The child's answer, doing the sleeps it asks for meanwhile."""
        while True:
            message = self._next_message()
            if message is None:
                raise _script_error("JavaScript execution failed: the engine stopped")
            if "sleep" in message:
                self._sleep(message["sleep"])
                self._send({"slept": True})
                continue
            if "error" in message:
                raise _script_error(str(message["error"]))
            if "fatal" in message:
                raise _script_error(str(message["fatal"]))
            if key in message:
                return message[key]
            raise _script_error("JavaScript execution failed: unexpected answer")

    def _next_message(self) -> Optional[dict[str, Any]]:
        """Wait for the child while it computes, within the time limits."""
        while True:
            self._interruption.check()
            now = time.monotonic()
            self._check_deadline(now)
            if self._computed >= self._limit:
                raise _script_error(
                    f"JavaScript execution terminated: the script ran for more than"
                    f" {self._limit:g} seconds"
                )
            wait = min(_POLL_INTERVAL, self._limit - self._computed)
            if self._deadline is not None:
                wait = min(wait, max(self._deadline - now, 0.0))
            try:
                return self._messages.get(timeout=wait)
            except queue.Empty:
                pass
            finally:
                self._computed += time.monotonic() - now

    def _sleep(self, ms: Any) -> None:
        """The script's sleep(ms): a wait that an interruption or maxTimeMS ends."""
        try:
            seconds = max(float(ms), 0.0) / 1000.0
        except (TypeError, ValueError):
            seconds = 0.0
        end = time.monotonic() + seconds
        while True:
            self._interruption.check()
            now = time.monotonic()
            self._check_deadline(now)
            remaining = end - now
            if remaining <= 0:
                return
            if self._deadline is not None:
                remaining = min(remaining, self._deadline - now)
            self._interruption.wait(min(remaining, _POLL_INTERVAL))

    def _check_deadline(self, now: float) -> None:
        if self._deadline is not None and now >= self._deadline:
            raise CommandError(50, "operation exceeded time limit")
