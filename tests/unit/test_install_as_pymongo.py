"""``install_as_pymongo()``: ``import pymongo`` and ``import gridfs`` give mongocore.

Each check runs in a fresh interpreter (this one has imported pymongo itself), as a
program would: install first, then import as a library written for pymongo does.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Optional

import pytest

from mongocore._version import PYMONGO_VERSION, __version__
from mongocore.drop_in import LEFT_OUT, MODULES, _Finder


def run(code: str, *, cwd: Optional[Path] = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )


def ok(code: str, *, cwd: Optional[Path] = None) -> str:
    result = run(code, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_pymongo_and_its_modules_are_mongocores() -> None:
    ok(
        """
        import sys
        import mongocore
        mongocore.install_as_pymongo()
        import pymongo
        import pymongo.collection
        from pymongo import MongoClient, ReadPreference, uri_parser
        from pymongo.collection import Collection, ReturnDocument
        from pymongo.errors import InvalidName, OperationFailure
        from pymongo.database import _check_name
        from pymongo.database_shared import _check_name as shared_check_name
        from pymongo.common import _UUID_REPRESENTATIONS, validate_read_preference
        import mongocore.collection, mongocore.errors, mongocore.uri_parser
        assert MongoClient is mongocore.MongoClient
        assert pymongo.MongoClient is MongoClient and pymongo.ASCENDING == 1
        assert Collection is mongocore.collection.Collection
        assert pymongo.collection is mongocore.collection
        assert sys.modules["pymongo.collection"] is mongocore.collection
        assert uri_parser is mongocore.uri_parser
        assert InvalidName is mongocore.errors.InvalidName
        assert shared_check_name is _check_name
        # Modules keep their own names and specs.
        assert pymongo.collection.__name__ == "mongocore.collection"
        assert pymongo.collection.__spec__.name == "mongocore.collection"
        # A module reached as an attribute, without an import statement.
        assert pymongo.results.InsertOneResult is mongocore.results.InsertOneResult
        # bson stays pymongo's real package.
        import bson
        assert "site-packages" in bson.__file__ and not bson.__name__.startswith("mongocore")
        # The client works (no server: it only starts, and closes).
        MongoClient("mongodb://localhost:1", serverSelectionTimeoutMS=1).close()
        """
    )


def test_every_module_of_the_table_imports_as_its_mongocore_module() -> None:
    names = [name for name, target in MODULES.items() if target and not name.startswith("gridfs")]
    ok(
        f"""
        import importlib, mongocore
        mongocore.install_as_pymongo()
        for name in {names!r}:
            module = importlib.import_module(name)
            target = {dict(MODULES)!r}[name]
            assert module is importlib.import_module(target), name
        """
    )


def test_the_version_is_pymongos_api_level_and_mongocores_stays_its_own() -> None:
    out = ok(
        """
        import mongocore
        mongocore.install_as_pymongo()
        import pymongo
        print(pymongo.version, pymongo.__version__, pymongo.version_tuple,
              pymongo.get_version_string(), mongocore.__version__)
        assert pymongo.version_tuple >= (4, 20)
        """
    )
    assert out.split()[:2] == [PYMONGO_VERSION, PYMONGO_VERSION]
    assert out.split()[-1] == __version__ != PYMONGO_VERSION


def test_what_mongocore_leaves_out_says_why() -> None:
    out = ok(
        f"""
        import mongocore
        mongocore.install_as_pymongo()
        import pymongo
        for name in {sorted(LEFT_OUT)!r} + ["pymongo.pool_options", "pymongo.synchronous.pool"]:
            try:
                __import__(name)
            except ModuleNotFoundError as exc:
                print(name, "|", exc)
            else:
                raise AssertionError(name)
        try:
            pymongo.AsyncMongoClient
        except AttributeError as exc:
            print("AsyncMongoClient |", exc)
        """
    )
    lines = dict(line.split(" | ", 1) for line in out.splitlines())
    assert "encryption is not provided" in lines["pymongo.encryption"]
    assert "asyncio" in lines["pymongo.asynchronous"]
    assert "none of pymongo's public modules" in lines["pymongo.pool_options"]
    assert "asyncio" in lines["AsyncMongoClient"]


def test_gridfs_is_mongocores_when_it_exists() -> None:
    out = ok(
        """
        import importlib.util, mongocore
        mongocore.install_as_pymongo()
        try:
            import gridfs
        except ModuleNotFoundError as exc:
            print("missing |", exc)
        else:
            import mongocore.gridfs
            assert gridfs is mongocore.gridfs
            print("present | ok")
        """
    )
    if importlib.util.find_spec("mongocore.gridfs") is None:
        assert out.startswith("missing | ") and "mongocore.gridfs" in out
    else:
        assert out.strip() == "present | ok"


def test_calling_it_twice_is_harmless() -> None:
    ok(
        """
        import sys, mongocore
        mongocore.install_as_pymongo()
        finders = list(sys.meta_path)
        import pymongo
        mongocore.install_as_pymongo()
        assert sys.meta_path == finders
        """
    )


def test_called_too_late_it_names_the_importers_and_installs_nothing(tmp_path: Path) -> None:
    (tmp_path / "some_library.py").write_text("import pymongo\n")
    (tmp_path / "other_library.py").write_text("from pymongo.errors import OperationFailure\n")
    result = run(
        """
        import sys
        import some_library, other_library
        import mongocore
        finders = list(sys.meta_path)
        try:
            mongocore.install_as_pymongo()
        except mongocore.errors.ConfigurationError as exc:
            print(exc)
        else:
            raise AssertionError("installed after pymongo")
        assert sys.meta_path == finders  # nothing installed
        import pymongo
        assert pymongo.__name__ == "pymongo" and "site-packages" in pymongo.__file__
        """,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    message = result.stdout
    assert "imported already: pymongo (with " in message  # the modules imported already
    assert "imported by other_library, some_library" in message
    assert "Nothing was installed" in message
    assert "before importing the libraries that use pymongo" in message


def test_called_too_late_after_gridfs_alone() -> None:
    result = run(
        """
        import sys
        sys.modules["gridfs"] = type(sys)("gridfs")  # as a package of that name would be
        import mongocore
        try:
            mongocore.install_as_pymongo()
        except mongocore.errors.ConfigurationError as exc:
            print(exc)
        """
    )
    assert "these are imported already: gridfs" in result.stdout


@pytest.mark.parametrize("name", ["json", "bson", "mongocore.api", "pymongoish"])
def test_other_modules_are_left_to_the_other_finders(name: str) -> None:
    assert _Finder().find_spec(name, None) is None
