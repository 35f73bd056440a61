"""A pytest plugin (``-p mongocore_as_pymongo``) that installs mongocore as pymongo.

tests/thirdparty/harness.py puts this folder on the PYTHONPATH of a third-party
suite's pytest and names this module with ``-p``: pytest imports it while it reads its
command line, before any conftest or test module, so ``mongocore.install_as_pymongo()``
runs before anything imports pymongo, as its contract requires. The suite itself is
not changed. A pymongo already imported by then (by another plugin) is an error that
install_as_pymongo reports itself.
"""

from __future__ import annotations

import mongocore

mongocore.install_as_pymongo()  # type: ignore[attr-defined,unused-ignore]
