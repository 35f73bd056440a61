"""The plugin's settings and the deployments of one test session (one per xdist
worker: each worker is a process of its own, with deployments of its own).

Settings: ``--mongodb-uri``, else the ``MONGOCORE_TEST_URI`` environment variable,
else the ``mongodb_uri`` ini option, points every fixture at that deployment instead
of the simulator; the ``mongodb_*`` ini options give the simulated deployments'
shape (shapes.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Optional

import pytest

from mongocore.pytest_plugin.handle import MongoDBDeployment
from mongocore.pytest_plugin.real import Real, redacted
from mongocore.pytest_plugin.shapes import INI_OPTIONS, KINDS, Shape
from mongocore.pytest_plugin.simulated import Simulated

__all__ = ["REAL_SHAPE", "URI_ENV", "Deployments", "Settings"]

#: The environment variable that points the fixtures at a real deployment.
URI_ENV = "MONGOCORE_TEST_URI"


#: Why a test that asks for a shape of its own is skipped on a real deployment.
REAL_SHAPE = (
    "asks for a simulated deployment of its own shape, and the fixtures are pointed at a"
    " real deployment (--mongodb-uri)"
)


class Settings:
    """What the command line, the environment and the ini file ask for."""

    def __init__(self, uri: Optional[str], defaults: Mapping[str, Any]) -> None:
        self.uri = uri or None
        #: The ini's shape options (only those set), for every kind.
        self.defaults = dict(defaults)

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        uri = (
            config.getoption("mongodb_uri")
            or os.environ.get(URI_ENV)
            or config.getini("mongodb_uri")
        )
        defaults: dict[str, Any] = {}
        for ini, (option, _) in INI_OPTIONS.items():
            value = config.getini(ini)
            if value not in ("", None):
                defaults[option] = value
        settings = cls(str(uri) if uri else None, defaults)
        for kind in KINDS:  # a bad ini value is a usage error, before any test runs
            try:
                settings.shape(kind)
            except ValueError as exc:
                raise pytest.UsageError(f"mongocore plugin: ini option: {exc}") from None
        return settings

    def shape(self, kind: str, options: Optional[Mapping[str, Any]] = None) -> Shape:
        """The ini's shape for ``kind``, with ``options`` (a marker's, the factory's)."""
        shape = Shape(kind).with_options(self.defaults, strict=False)
        return shape.with_options(options, strict=True) if options else shape


class Deployments:
    """The session's deployments: the shared ones (a fixture each, started on first
    use and kept), each test's own ones, and the real deployment of ``--mongodb-uri``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.real: Optional[Real] = Real(settings.uri) if settings.uri else None
        self._real_handle: Optional[MongoDBDeployment] = None
        self._shared: dict[str, MongoDBDeployment] = {}
        self._owned: list[Simulated] = []

    # -- the real deployment -----------------------------------------------------------

    def real_handle(self, kind: Optional[str]) -> MongoDBDeployment:
        """The real deployment's handle; a skip when it is not of ``kind``."""
        assert self.real is not None
        if self._real_handle is None:
            self.real.connect()
            self._real_handle = MongoDBDeployment(self.real.kind, self.real)
        if kind is not None and self.real.kind != kind:
            pytest.skip(
                f"--mongodb-uri {redacted(self.real.uri)} is a {_words(self.real.kind)};"
                f" this test asks for a {_words(kind)}"
            )
        return self._real_handle

    # -- the simulator -----------------------------------------------------------------

    def shared(self, kind: str) -> MongoDBDeployment:
        """The session's deployment of ``kind`` (the ini's shape), started on first use."""
        if self.real is not None:
            return self.real_handle(kind)
        handle = self._shared.get(kind)
        if handle is None:
            handle = MongoDBDeployment(kind, self._start(self.settings.shape(kind)))
            self._shared[kind] = handle
        return handle

    def shared_in_use(self) -> list[MongoDBDeployment]:
        return list(self._shared.values())

    def own(self, kind: str, options: Optional[Mapping[str, Any]] = None) -> MongoDBDeployment:
        """A new simulated deployment of ``kind``, for one test (``release`` stops it)."""
        if self.real is not None:
            if options:
                pytest.skip(
                    f"{REAL_SHAPE}: {Shape(kind).with_options(options, strict=True).describe()}"
                )
            return self.real_handle(kind)
        try:
            shape = self.settings.shape(kind, options)
        except ValueError as exc:
            problem = str(exc)
        else:
            return MongoDBDeployment(kind, self._start(shape))
        pytest.fail(f"mongocore plugin: {problem}", pytrace=False)

    def release(self, handle: MongoDBDeployment) -> None:
        backend = handle._backend
        if isinstance(backend, Simulated) and backend in self._owned:
            self._owned.remove(backend)
            backend.stop()

    def _start(self, shape: Shape) -> Simulated:
        simulated = Simulated(shape)
        try:
            simulated.start()
        except ImportError as exc:
            problem = str(exc)
        else:
            self._owned.append(simulated)
            return simulated
        pytest.fail(problem, pytrace=False)

    def forget(self, handle: MongoDBDeployment) -> None:
        """A shared deployment that could not be put back: stopped, and built anew by
        the next test that asks for its kind."""
        for kind, shared in list(self._shared.items()):
            if shared is handle:
                del self._shared[kind]
                self.release(handle)

    def close(self) -> None:
        """Stop every simulated deployment (threads joined); drop what the tests left
        on a real deployment and close its client."""
        errors: list[BaseException] = []
        for simulated in reversed(self._owned):
            try:
                simulated.stop()
            except Exception as exc:  # stop the others all the same
                errors.append(exc)
        self._owned.clear()
        self._shared.clear()
        if self.real is not None and self._real_handle is not None:
            self.real.drop_data()
        if errors:
            raise errors[0]


def _words(kind: str) -> str:
    return kind.replace("_", " ")
