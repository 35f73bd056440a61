"""``install_as_pymongo()``: ``import pymongo`` and ``import gridfs`` give mongocore.

PyMySQL's ``install_as_MySQLdb()`` convention: a program that calls
:func:`install_as_pymongo` before anything imports pymongo runs libraries written for
pymongo (an ODM, a framework's session store) on mongocore, unmodified. From then on
``import pymongo`` gives a package standing for pymongo, ``import pymongo.collection``
(and every public module of pymongo's synchronous API, and the private ones in
:data:`MODULES`) gives mongocore's module of that name, and ``import gridfs`` gives
:mod:`mongocore.gridfs`. ``bson`` stays pymongo's own package: it does not import
pymongo, and mongocore uses it.

It is a finder on ``sys.meta_path``, consulted before the others: each module loads
when first imported, as pymongo's would. The package's ``version``,
``version_tuple`` and ``__version__`` are the pymongo API level mongocore implements
(:data:`mongocore._version.PYMONGO_VERSION`), which libraries compare against;
``mongocore.__version__`` stays mongocore's own.

What a program gets is mongocore's behaviour, seeds included: ``retryWrites``
defaults to false, reads are retried until they succeed (within
serverSelectionTimeoutMS), and a server inside the latency window is chosen uniformly
at random (docs/from-pymongo.md).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
from collections.abc import Sequence
from typing import Any, Optional

import mongocore
from mongocore._version import PYMONGO_VERSION
from mongocore.errors import ConfigurationError

__all__ = ["MODULES", "install_as_pymongo"]

#: Each module name a program may import -> mongocore's module that stands for it: the
#: one place a module is added. A package's entry (``gridfs``) covers its submodules
#: (``gridfs.grid_file`` is ``mongocore.gridfs.grid_file``). ``pymongo`` itself is a
#: package made for the purpose (:func:`_pymongo_package`).
MODULES: dict[str, str] = {
    "pymongo": "",
    "pymongo.change_stream": "mongocore.change_stream",
    "pymongo.client_options": "mongocore.client_options",
    "pymongo.client_session": "mongocore.client_session",
    "pymongo.collation": "mongocore.collation",
    "pymongo.collection": "mongocore.collection",
    "pymongo.command_cursor": "mongocore.command_cursor",
    "pymongo.common": "mongocore.common",
    "pymongo.cursor": "mongocore.cursor",
    "pymongo.database": "mongocore.database",
    "pymongo.driver_info": "mongocore.driver_info",
    "pymongo.errors": "mongocore.errors",
    "pymongo.event_loggers": "mongocore.event_loggers",
    "pymongo.mongo_client": "mongocore.mongo_client",
    "pymongo.monitoring": "mongocore.monitoring",
    "pymongo.operations": "mongocore.operations",
    "pymongo.pool": "mongocore.pool",
    "pymongo.read_concern": "mongocore.read_concern",
    "pymongo.read_preferences": "mongocore.read_preferences",
    "pymongo.results": "mongocore.results",
    "pymongo.server_api": "mongocore.server_api",
    "pymongo.server_description": "mongocore.server_description",
    "pymongo.topology_description": "mongocore.topology_description",
    "pymongo.typings": "mongocore.typings",
    "pymongo.uri_parser": "mongocore.uri_parser",
    "pymongo.write_concern": "mongocore.write_concern",
    # Private modules libraries import: MongoEngine's _check_name.
    "pymongo.database_shared": "mongocore.database",
    # pymongo's GridFS package (loaded, like the others, only when imported).
    "gridfs": "mongocore.gridfs",
}

#: Modules of pymongo that mongocore leaves out, and why (the ImportError says it).
LEFT_OUT = {
    "pymongo.encryption": "client-side field level encryption is not provided",
    "pymongo.encryption_options": "client-side field level encryption is not provided",
    "pymongo.auth_oidc": "MONGODB-OIDC authentication is not provided",
    "pymongo.asynchronous": "mongocore is synchronous: it has no asyncio API",
}

#: Names of pymongo's package that mongocore leaves out, and why.
_LEFT_OUT_NAMES = {
    "AsyncMongoClient": "mongocore is synchronous: it has no asyncio API",
    "timeout": "there is no block-scoped deadline: give timeoutMS to the client, or"
    " timeout_ms= to a call",
}

_PACKAGES = ("pymongo", "gridfs")
_LOCK = threading.Lock()


def _target(fullname: str) -> Optional[str]:
    """mongocore's module for ``fullname``; None when the name is none of pymongo's or
    gridfs's. ModuleNotFoundError, with the reason, for one mongocore does not offer."""
    target = MODULES.get(fullname)
    if target is not None:
        return target
    package, _, rest = fullname.partition(".")
    if package not in _PACKAGES:
        return None
    if package == "gridfs":
        return f"{MODULES['gridfs']}.{rest}"
    top = ".".join(fullname.split(".")[:2])
    reason = LEFT_OUT.get(top) or (
        "it is none of pymongo's public modules (mongocore offers those of pymongo's"
        " synchronous API, docs/from-pymongo.md, Module layout)"
    )
    raise ModuleNotFoundError(
        f"No module named {fullname!r}: mongocore, installed as pymongo, has no such module:"
        f" {reason}",
        name=fullname,
    )


def _pymongo_package() -> types.ModuleType:
    """The package ``import pymongo`` gives: mongocore's top-level names, with pymongo's
    version, and its modules as attributes (each loaded on first use)."""
    package = types.ModuleType("pymongo", "mongocore, installed as pymongo (install_as_pymongo).")
    version_tuple = tuple(int(part) for part in PYMONGO_VERSION.split("."))

    def get_version_string() -> str:
        return PYMONGO_VERSION

    def __getattr__(name: str) -> Any:  # the package's attribute hook (PEP 562)
        if name in _LEFT_OUT_NAMES:
            raise AttributeError(f"pymongo (mongocore) has no {name!r}: {_LEFT_OUT_NAMES[name]}")
        if f"pymongo.{name}" in MODULES:
            return importlib.import_module(f"pymongo.{name}")
        value = getattr(mongocore, name)
        setattr(package, name, value)
        return value

    def __dir__() -> list[str]:
        modules = [n.split(".")[1] for n in MODULES if n.startswith("pymongo.")]
        return sorted(set(vars(package)) | set(dir(mongocore)) | set(modules))

    package.__dict__.update(
        __path__=[],  # a package: its submodules are found by the finder alone
        __all__=[n for n in mongocore.__all__ if n not in ("Client", "DRIVER_NAME")],
        __version__=PYMONGO_VERSION,
        version=PYMONGO_VERSION,
        version_tuple=version_tuple,
        get_version_string=get_version_string,
        __getattr__=__getattr__,
        __dir__=__dir__,
    )
    return package


class _Loader(importlib.abc.Loader):
    """Hands the import system mongocore's module, unchanged."""

    def __init__(self, target: str) -> None:
        self._target = target
        self._own_spec: Optional[importlib.machinery.ModuleSpec] = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if not self._target:
            return _pymongo_package()
        module = importlib.import_module(self._target)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # The import system gave the module the pymongo name's spec; it keeps its own.
        if self._own_spec is not None:
            module.__spec__ = self._own_spec


class _Finder(importlib.abc.MetaPathFinder):
    """Finds pymongo's and gridfs's module names, and nothing else."""

    def find_spec(
        self,
        fullname: str,
        path: Optional[Sequence[str]],
        target: Optional[types.ModuleType] = None,
    ) -> Optional[importlib.machinery.ModuleSpec]:
        module = _target(fullname)
        if module is None:
            return None
        if module and importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: mongocore, installed as pymongo, would give"
                f" {module}, which this version of mongocore does not have",
                name=fullname,
            )
        is_package = not module or _is_package(module)
        return importlib.util.spec_from_loader(fullname, _Loader(module), is_package=is_package)


def _is_package(module: str) -> bool:
    spec = importlib.util.find_spec(module)
    return spec is not None and spec.submodule_search_locations is not None


def _holders(names: set[str]) -> list[str]:
    """The modules that hold pymongo's modules or objects: those that imported it."""
    holders = []
    for module_name, module in list(sys.modules.items()):
        if module is None or module_name.split(".")[0] in (*_PACKAGES, "bson", "mongocore"):
            continue
        for value in list(getattr(module, "__dict__", {}).values()):
            origin = (
                value.__name__
                if isinstance(value, types.ModuleType)
                else getattr(value, "__module__", None)
            )
            if isinstance(origin, str) and origin.split(".")[0] in names:
                holders.append(module_name)
                break
    return sorted(holders)


def _too_late(imported: list[str]) -> ConfigurationError:
    packages = sorted({name.split(".")[0] for name in imported})
    holders = _holders(set(packages))
    parts = []
    for package in packages:
        modules = sum(1 for name in imported if name.startswith(package + "."))
        parts.append(f"{package} (with {modules} of its modules)" if modules else package)
    shown = ", ".join(parts)
    by = (
        f"; imported by {', '.join(holders[:10])}" + (" and others" if len(holders) > 10 else "")
        if holders
        else "; no loaded module holds it (it was imported and let go)"
    )
    return ConfigurationError(
        f"install_as_pymongo() must be called before anything imports pymongo or gridfs, but"
        f" these are imported already: {shown}{by}. Nothing was installed. Call"
        " mongocore.install_as_pymongo() first: at the top of the program's entry point,"
        " before importing the libraries that use pymongo (or in a conftest.py or"
        " sitecustomize.py, which run before them)."
    )


def install_as_pymongo() -> None:
    """Make ``import pymongo`` and ``import gridfs`` give mongocore's modules, in this
    process, from now on. Call it before anything imports pymongo or gridfs: if they
    are imported already, it raises ConfigurationError naming the modules that
    imported them, and installs nothing. Calling it again does nothing."""
    with _LOCK:
        if any(isinstance(finder, _Finder) for finder in sys.meta_path):
            return
        imported = sorted(name for name in sys.modules if name.split(".")[0] in _PACKAGES)
        if imported:
            raise _too_late(imported)
        sys.meta_path.insert(0, _Finder())
