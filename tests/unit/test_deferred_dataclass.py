"""Deferred dataclasses behave as standard ones once they have an instance, and every
one the package defines completes without error."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import sys
import threading
from typing import Any, Optional

import pytest

import mongocore
from mongocore import _deferred_dataclass as deferred_dataclass
from mongocore._deferred_dataclass import dataclass, field, fields, materialize, replace


def _define() -> tuple[Any, Any]:
    """Fresh classes per test, so that none starts out already completed."""

    @dataclass(frozen=True)
    class Point:
        x: int
        y: int = 0
        tags: tuple[str, ...] = field(default_factory=tuple)
        secret: Optional[str] = field(default=None, repr=False)

    @dataclass(frozen=True)
    class Point3(Point):
        z: int = 0

    return Point, Point3


def test_nothing_is_processed_before_the_first_instance() -> None:
    point, _ = _define()
    assert not dataclasses.is_dataclass(point)
    instance = point(1)
    assert dataclasses.is_dataclass(point)
    assert dataclasses.is_dataclass(instance)


def test_a_completed_class_is_a_standard_frozen_dataclass() -> None:
    point, _ = _define()
    p = point(1, 2)
    assert (p.x, p.y, p.tags, p.secret) == (1, 2, (), None)
    assert p == point(1, 2) and hash(p) == hash(point(1, 2)) and p != point(2, 1)
    assert repr(p).endswith("Point(x=1, y=2, tags=())")  # secret: repr=False
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 3
    assert replace(p, y=5) == point(1, 5)
    assert [f.name for f in fields(p)] == ["x", "y", "tags", "secret"]
    with pytest.raises(TypeError):
        point()


def test_fields_completes_a_class_without_an_instance() -> None:
    point, _ = _define()
    assert [f.name for f in fields(point)] == ["x", "y", "tags", "secret"]
    assert dataclasses.is_dataclass(point)


def test_a_subclass_completes_its_bases_first() -> None:
    point, point3 = _define()
    p = point3(1, 2, z=3)
    assert (p.x, p.y, p.z) == (1, 2, 3)
    assert [f.name for f in dataclasses.fields(point3)] == ["x", "y", "tags", "secret", "z"]
    assert "__dataclass_fields__" in vars(point)  # completed with its subclass
    assert point(4).x == 4


def test_threads_racing_to_the_first_instance_complete_the_class_once() -> None:
    point, _ = _define()
    start = threading.Barrier(8)
    made: list[object] = []

    def make() -> None:
        start.wait()
        made.append(point(1))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 8
    # Processed twice, the factory field would have lost its factory.
    assert dataclasses.fields(point)[2].default_factory is tuple
    assert all(m == point(1) for m in made)


def test_slots_and_init_false_are_refused() -> None:
    with pytest.raises(TypeError):
        dataclass(slots=True)
    with pytest.raises(TypeError):
        dataclass(init=False)


def test_every_deferred_dataclass_of_the_package_completes() -> None:
    """Processing errors (a field without a default after one with) show here, not
    in the first program that builds an instance."""
    for info in pkgutil.walk_packages(mongocore.__path__, "mongocore."):
        if info.name.startswith(("mongocore.sim", "mongocore.cli", "mongocore.__main__")):
            continue  # optional extras, with dependencies of their own
        importlib.import_module(info.name)
    # Every class declared with the deferred decorator keeps its __new__ guard, whether
    # an earlier test completed it already or not: the check does not depend on order.
    declared = [
        value
        for module in list(sys.modules.values())
        if getattr(module, "__name__", "").startswith("mongocore.")
        for value in vars(module).values()
        if isinstance(value, type)
        and getattr(value.__dict__.get("__new__"), "_deferred", False)
        and value.__module__ == module.__name__
    ]
    assert len(declared) > 10  # the scan found the package's deferred dataclasses
    for cls in declared:
        materialize(cls)
        assert dataclasses.is_dataclass(cls), cls
    assert not [c for c in deferred_dataclass._PENDING if c.__module__.startswith("mongocore")]


def test_an_instance_made_while_another_thread_completes_the_class_waits() -> None:
    """The broken variant: completing a class removes its __init__ stub before
    dataclasses writes the real one; a second thread instantiating in that window
    found object.__init__ and failed with "object.__new__() takes exactly one
    argument". Here the first thread is held inside dataclasses.dataclass while the
    second instantiates: the second must wait, then get a proper instance."""
    std = dataclasses

    @dataclass(frozen=True)
    class Racy:
        a: int
        b: str = "x"

    started, release = threading.Event(), threading.Event()
    real = std.dataclass

    def slow_dataclass(cls: Any = None, /, **options: Any) -> Any:
        started.set()
        assert release.wait(timeout=30)
        return real(cls, **options)

    results: dict[str, Any] = {}

    def make(name: str, value: int) -> None:
        try:
            results[name] = Racy(value)
        except BaseException as exc:
            results[name] = exc

    std.dataclass = slow_dataclass  # type: ignore[assignment]
    try:
        first = threading.Thread(target=make, args=("first", 1))
        first.start()
        assert started.wait(timeout=30)
        second = threading.Thread(target=make, args=("second", 2))
        second.start()
        second.join(timeout=2)  # with the bug, it fails at once
        early = results.get("second")
        release.set()
        first.join(timeout=30)
        second.join(timeout=30)
    finally:
        std.dataclass = real  # type: ignore[assignment]
        release.set()
    assert not isinstance(early, BaseException), early
    assert results["first"] == Racy(1) and results["second"] == Racy(2)
    assert results["second"].b == "x"
