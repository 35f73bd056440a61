"""Dataclasses whose processing waits for their first instance.

``dataclasses.dataclass`` writes and compiles each class's ``__init__``, ``__eq__``,
``__repr__``, ``__hash__`` and (frozen) ``__setattr__`` when the class statement
runs, and importing :mod:`dataclasses` loads :mod:`inspect` and what it needs: in
all, most of what ``import mongocore`` used to cost, for classes of which many
(the event types above all) are never instantiated in a given program.

:func:`dataclass` here takes the same options and defers exactly that work: the
class statement only records the options, and the first instance (or
:func:`materialize`) hands the class to ``dataclasses.dataclass``, which completes
it in place. From then on it *is* a standard dataclass: :func:`dataclasses.fields`,
:func:`dataclasses.replace`, ``FrozenInstanceError`` all behave as usual. Type
checkers see the standard decorators (the names are aliases for them when type
checking).

The module is a leaf beside :mod:`mongocore.errors` that every layer uses, and not part
of the pure core: completing a class on first use is a fact of the interpreter, not of
any specification, and two threads may make a class's first instance at once, so the
completion takes a lock. The core's own modules hold no lock (tests/unit/test_layers.py
checks it).

Only what the package needs is supported: options of ``dataclasses.dataclass``
that keep the class object (``slots=True``, which builds a new class, is refused),
and ``field()`` with ``default``, ``default_factory``, ``repr`` and ``compare``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

__all__ = ["dataclass", "field", "fields", "materialize", "replace"]

# The classes waiting for processing: class -> its dataclass() options.
_PENDING: dict[type, dict[str, Any]] = {}
# Two threads may build the first instance of a class at once; processing a class
# twice would be wrong (its default_factory fields would lose their factories).
_LOCK = threading.RLock()


class _FieldSpec:
    """What ``field(...)`` said, until the class is processed."""

    __slots__ = ("options",)

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options


def materialize(cls: type) -> type:
    """Complete ``cls`` (and the deferred dataclasses it inherits from) now."""
    if not _PENDING:
        return cls
    with _LOCK:
        for klass in reversed(cls.__mro__):
            # A class leaves _PENDING only once complete: a thread that sees it there
            # (the fast path above included) comes here and waits on the lock.
            options = _PENDING.get(klass)
            if options is None:
                continue
            import dataclasses  # noqa: PLC0415 - the deferred import is the point

            for name, value in list(vars(klass).items()):
                if isinstance(value, _FieldSpec):
                    setattr(klass, name, dataclasses.field(**value.options))
            # The stub goes first, so that dataclasses writes __init__ as for any class.
            # Until it has, another thread's new instance waits in the __new__ guard
            # below: without it, that thread would find no __init__ at all and fail
            # with object.__new__'s TypeError.
            if getattr(vars(klass).get("__init__"), "_deferred", False):
                delattr(klass, "__init__")
            dataclasses.dataclass(klass, **options)
            klass._deferred_complete = True  # type: ignore[attr-defined]
            del _PENDING[klass]
    return cls


def _guarded_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    """``__new__`` of a deferred dataclass: until the class is complete, wait for (or
    do) its completion, so that the ``__init__`` Python looks up next is the
    dataclass's. It stays in place afterwards (CPython cannot take a __new__ set on a
    class back: object.__new__ would then refuse the arguments)."""
    if not cls.__dict__.get("_deferred_complete"):
        materialize(cls)
    return object.__new__(cls)


_guarded_new._deferred = True  # type: ignore[attr-defined]


def _stub_init(cls: type) -> Callable[..., None]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        materialize(cls)
        cls.__init__(self, *args, **kwargs)  # type: ignore[misc]

    __init__._deferred = True  # type: ignore[attr-defined]
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _dataclass(cls: Any = None, /, **options: Any) -> Any:
    if options.get("slots"):
        raise TypeError("deferred dataclasses cannot use slots=True")
    if options.get("init") is False:
        raise TypeError("deferred dataclasses are completed by their first __init__")

    def wrap(klass: type) -> type:
        _PENDING[klass] = options
        klass.__init__ = _stub_init(klass)  # type: ignore[misc]
        if "__new__" not in vars(klass):
            klass.__new__ = _guarded_new  # type: ignore[assignment, method-assign]
        return klass

    return wrap if cls is None else wrap(cls)


def _field(**options: Any) -> Any:
    return _FieldSpec(options)


def _fields(class_or_instance: Any) -> Any:
    import dataclasses  # noqa: PLC0415

    materialize(
        class_or_instance if isinstance(class_or_instance, type) else type(class_or_instance)
    )
    return dataclasses.fields(class_or_instance)


def _replace(obj: Any, /, **changes: Any) -> Any:
    import dataclasses  # noqa: PLC0415

    return dataclasses.replace(obj, **changes)


if TYPE_CHECKING:
    from dataclasses import dataclass, field, fields, replace
else:
    dataclass = _dataclass
    field = _field
    fields = _fields
    replace = _replace
