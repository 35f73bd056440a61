"""Keep pymongo's driver out of reach of an import-only port (``-p mongocore_no_pymongo``,
or imported first).

Importing this module installs an import hook: code under the folder that
``MONGOCORE_PORT_ROOT`` names (the ported copy of a library and of its tests) that
imports ``pymongo`` or ``gridfs``, or any of their modules, gets an ImportError naming
the importing file, so a line the port missed cannot fall back to pymongo silently.
pymongo's ``bson`` stays importable, and so does pymongo for code outside the port
(another library the suite uses, such as mongomock, is not the port's to change).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Optional

_ROOT = os.path.realpath(os.environ["MONGOCORE_PORT_ROOT"]) + os.sep
_REFUSED = ("pymongo", "gridfs")


def _importer() -> Optional[str]:
    """The file of the first frame outside the import machinery."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<frozen") and "importlib" not in name:
            return os.path.realpath(name)
        frame = frame.f_back  # type: ignore[assignment]
    return None


class NoPymongoInThePort:
    def find_spec(
        self,
        name: str,
        path: Optional[Sequence[str]] = None,
        target: Optional[ModuleType] = None,
    ) -> Optional[ModuleSpec]:
        if name.split(".", maxsplit=1)[0] in _REFUSED:
            importer = _importer()
            if importer is not None and importer.startswith(_ROOT):
                raise ImportError(
                    f"{importer} imports {name}: the import-only port must not use pymongo"
                )
        return None


sys.meta_path.insert(0, NoPymongoInThePort())
