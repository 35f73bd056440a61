"""The import-only port of a library written for pymongo: a copy in which every
``pymongo`` and ``gridfs`` import line is rewritten to mongocore's, and nothing else.

docs/odm.md gives the rewrite as a table. The copy keeps every line where it was, so a
traceback into the port points at the library's own line numbers.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

_FROM = re.compile(r"^(\s*)from (pymongo|gridfs)((?:\.\w+)*) import ", re.MULTILINE)
_IMPORT = re.compile(r"^(\s*)import (pymongo|gridfs)((?:\.\w+)*)\s*$", re.MULTILINE)
#: An import line of pymongo or gridfs of any shape, to check that none is left.
_ANY = re.compile(r"^\s*(import|from)\s+(pymongo|gridfs)\b")


def port_source(source: str) -> str:
    """Rewrite a module's pymongo and gridfs import lines to mongocore's, keeping the
    names the module binds (``import pymongo`` binds ``pymongo``) and its line numbers."""

    def target(package: str, submodules: str) -> str:
        return ("mongocore" if package == "pymongo" else "mongocore.gridfs") + submodules

    def from_line(match: re.Match[str]) -> str:
        indent, package, submodules = match.groups()
        return f"{indent}from {target(package, submodules)} import "

    def import_line(match: re.Match[str]) -> str:
        indent, package, submodules = match.groups()
        if not submodules:
            return f"{indent}import {target(package, '')} as {package}"
        # "import pymongo.errors" binds pymongo, with pymongo.errors loaded.
        loaded, bound = target(package, submodules), target(package, "")
        return f"{indent}import {loaded}; import {bound} as {package}"

    return _IMPORT.sub(import_line, _FROM.sub(from_line, source))


@dataclass
class Port:
    root: Path
    files: list[Path]
    rewritten: list[Path]
    #: "file:line: text" of every pymongo/gridfs import line the rewrite did not change.
    leftovers: list[str]


def make_port(source: Path, dest: Path) -> Port:
    """Copy the library's checkout (its package and its tests) to ``dest`` and port
    every Python file of it."""
    shutil.copytree(
        source, dest, ignore=shutil.ignore_patterns("__pycache__", ".git", ".github", "docs")
    )
    files = sorted(dest.rglob("*.py"))
    rewritten, leftovers = [], []
    for path in files:
        text = path.read_text()
        ported = port_source(text)
        if ported != text:
            rewritten.append(path)
            path.write_text(ported)
        leftovers += [
            f"{path.relative_to(dest)}:{n}: {line.strip()}"
            for n, line in enumerate(ported.splitlines(), 1)
            if _ANY.match(line)
        ]
    return Port(dest, files, rewritten, leftovers)
