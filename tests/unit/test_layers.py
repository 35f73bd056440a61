"""The layers show in the folders, and imports only point down.

``mongocore.core`` (pure: descriptions, selection, the retry policy, the wire codec,
options) imports nothing from the I/O shell (``mongocore.io``), the API
(``mongocore.api`` and the pymongo-named modules at the root) or the command line;
the shell imports nothing from the API; no module imports the simulator or the
command line except those above them. Imports made only for type checking are not
counted: they do not run. And no runtime import cycle exists between modules.

The core is pure in fact, not only in its imports of mongocore: none of its modules
imports a module of threads, clocks, randomness, sockets or processes (``threading``,
``time``, ``random``, ...), nor reads the date or makes an ObjectId (which reads the
clock and a random source): locks, clocks and random sources are the shell's, which
passes them in.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import mongocore

PACKAGE = Path(mongocore.__file__).parent

#: The layer of each top-level part of the package; a module may import only from
#: its own layer or lower ones. errors, driver_info and server_api are leaves every layer
#: uses; so is _deferred_dataclass (classes completed on first use, under a lock).
LAYERS = {
    "_version": 0,
    "_deferred_dataclass": 0,
    "errors": 0,
    "driver_info": 0,
    "server_api": 0,
    "core": 0,
    "io": 1,
    "api": 2,
    "read_concern": 2,
    "client_session": 2,
    "write_concern": 2,
    "read_preferences": 2,
    "monitoring": 2,
    # pymongo's module names: the API layer's re-exports and pymongo-shaped helpers.
    "change_stream": 2,
    "client_options": 2,
    "collation": 2,
    "collection": 2,
    "command_cursor": 2,
    "common": 2,
    "drop_in": 2,
    "cursor": 2,
    "database": 2,
    "event_loggers": 2,
    "gridfs": 2,
    "mongo_client": 2,
    "operations": 2,
    "pool": 2,
    "results": 2,
    "server_description": 2,
    "topology_description": 2,
    "typings": 2,
    "uri_parser": 2,
    "sim": 3,
    "cli": 4,
    "pytest_plugin": 4,
    "__main__": 5,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["mongocore", *parts])


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS[parts[1]] if len(parts) > 1 else max(LAYERS.values()) + 1


def runtime_imports(path: Path) -> Iterator[str]:
    """The mongocore modules ``path`` imports when it runs."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and getattr(block.test, "id", None) == "TYPE_CHECKING"
        for node in ast.walk(block)
    }
    for node in ast.walk(tree):
        if id(node) in type_only or not isinstance(node, ast.ImportFrom):
            continue
        if node.module and (node.module == "mongocore" or node.module.startswith("mongocore.")):
            # ``from package import submodule`` depends on the submodule; a package's
            # own __init__ runs before any of its submodules anyway, so it is no edge.
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                yield name if is_module(name) else node.module


def is_module(name: str) -> bool:
    relative = Path(*name.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").exists() or (PACKAGE / relative).is_dir()


def import_graph() -> dict[str, set[str]]:
    return {module_name(path): set(runtime_imports(path)) for path in sorted(PACKAGE.rglob("*.py"))}


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {
        p.name.removesuffix(".py")
        for p in PACKAGE.iterdir()
        if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    assert parts - {"__init__"} <= set(LAYERS), sorted(parts - set(LAYERS))


def test_imports_point_down() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        for target in targets
        if layer(target) > layer(module)
    ]
    assert upward == []


def test_the_pure_core_imports_no_shell_api_or_simulator() -> None:
    for module, targets in import_graph().items():
        if module.startswith("mongocore.core."):
            assert all(layer(t) == 0 for t in targets), (module, sorted(targets))


#: Standard modules the pure core must not import: threads and their locks, clocks,
#: random sources, sockets, processes.
IMPURE_MODULES = frozenset(
    {
        "_thread",
        "asyncio",
        "concurrent",
        "multiprocessing",
        "queue",
        "random",
        "secrets",
        "select",
        "selectors",
        "socket",
        "ssl",
        "subprocess",
        "threading",
        "time",
        "uuid",
    }
)
#: Calls that read the clock whatever the module: datetime.now(), date.today(), ...
CLOCK_READS = frozenset({"now", "utcnow", "today", "fromtimestamp", "utcfromtimestamp"})


def standard_imports(node: ast.AST) -> list[str]:
    """The absolute modules an ``import`` or ``from ... import`` node names (none for others)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def impurities(path: Path) -> Iterator[str]:
    """What in ``path`` reads a clock or a random source or holds thread state."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        for name in standard_imports(node):
            if name.split(".")[0] in IMPURE_MODULES:
                yield f"line {node.lineno}: imports {name}"
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in CLOCK_READS:
                yield f"line {node.lineno}: calls .{func.attr}()"
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name == "ObjectId" and not node.args and not node.keywords:
                yield f"line {node.lineno}: makes a new ObjectId"


def test_the_pure_core_holds_no_threads_clocks_or_random_state() -> None:
    found = {
        module_name(path): list(impurities(path))
        for path in sorted((PACKAGE / "core").rglob("*.py"))
    }
    assert {module: lines for module, lines in found.items() if lines} == {}


def test_the_purity_check_sees_a_lock_a_clock_and_a_random_draw(tmp_path: Path) -> None:
    """The broken variant: each of these must be caught."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import threading\n"
        "from time import monotonic\n"
        "import random as r\n"
        "import datetime\n"
        "from bson import ObjectId\n"
        "LOCK = threading.Lock()\n"
        "NOW = datetime.datetime.now()\n"
        "OID = ObjectId()\n"
        "KEPT = ObjectId(b'x' * 12)\n",
        encoding="utf-8",
    )
    assert list(impurities(bad)) == [
        "line 1: imports threading",
        "line 2: imports time",
        "line 3: imports random",
        "line 7: calls .now()",
        "line 8: makes a new ObjectId",
    ]


def time_imports(path: Path) -> Iterator[str]:
    """Where ``path`` imports :mod:`time`, the clock the shell reads only through io/clock.py."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if "time" in standard_imports(node):
            yield f"line {node.lineno}: imports time"


def test_the_shell_reads_time_only_through_its_clock_module() -> None:
    """One seam for time: every monotonic(), time(), sleep() of io/ goes through io/clock.py."""
    found = {
        module_name(path): list(time_imports(path))
        for path in sorted((PACKAGE / "io").rglob("*.py"))
        if path.name != "clock.py"
    }
    assert {module: lines for module, lines in found.items() if lines} == {}


def test_the_clock_check_sees_an_import_of_time(tmp_path: Path) -> None:
    """The broken variant: both spellings of importing time must be caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("import time\nfrom time import monotonic\nimport datetime\n", encoding="utf-8")
    assert list(time_imports(bad)) == ["line 1: imports time", "line 2: imports time"]


def test_no_import_cycles() -> None:
    graph = import_graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_the_checks_see_an_upward_import(tmp_path: Path) -> None:
    """The broken variant: a core module importing the client must be caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("from mongocore.api.client import Client\n", encoding="utf-8")
    assert list(runtime_imports(bad)) == ["mongocore.api.client"]
    assert layer("mongocore.api.client") > layer("mongocore.core.address")
    hidden = tmp_path / "hidden.py"
    hidden.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from mongocore.api.client import Client\n",
        encoding="utf-8",
    )
    assert list(runtime_imports(hidden)) == []
