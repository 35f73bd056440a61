"""Collection options of a simulated mongod: the default collation and the validator
(``create`` and ``collMod``; MongoDB manual, "Schema Validation", "Collation").

The options live with the deployment's data (``DataStore.catalog``), so every member
sees them. :meth:`CollectionOptions.check_document` enforces the validator on a write
as a 7.0 server does: ``validationLevel`` "strict" checks every insert and update,
"moderate" skips updates of documents that already failed it, "off" nothing;
``validationAction`` "error" refuses with DocumentValidationFailure (121) and
``errInfo {failingDocumentId, details}``, "warn" accepts (a server only logs);
``bypassDocumentValidation`` skips the check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation, parse_collation
from mongocore.sim.engine.capped import CappedOptions, capped_options, modified_capped
from mongocore.sim.engine.timeseries import (
    TimeseriesOptions,
    modified_expiry,
    timeseries_options,
)
from mongocore.sim.validation import check_validator, failure_details

__all__ = ["PRE_AND_POST_IMAGES", "CollectionOptions", "create_options", "modified_options"]

PRE_AND_POST_IMAGES = "changeStreamPreAndPostImages"
_LEVELS = ("off", "strict", "moderate")
_ACTIONS = ("error", "warn")
# create options that change nothing the simulator models, accepted as a server does.
_IGNORED_CREATE = frozenset(
    {
        "create", "$db", "lsid", "txnNumber", "writeConcern", "comment", "$clusterTime",
        "$readPreference", "apiVersion", "apiStrict", "apiDeprecationErrors", "maxTimeMS",
        "autocommit", "startTransaction", "storageEngine", "indexOptionDefaults",
        # A causally consistent session's afterClusterTime, waited for before any
        # command runs (as for every command a session sends).
        "readConcern",
    }
)  # fmt: skip
_REFUSED_CREATE = frozenset({"clusteredIndex", "encryptedFields", "viewOn", "pipeline"})
# Read by the capped and time-series rules (sim/engine/capped.py, timeseries.py).
_KIND_FIELDS = frozenset({"capped", "size", "max", "timeseries", "expireAfterSeconds"})


@dataclass(frozen=True)
class CollectionOptions:
    collation: Optional[Collation] = None
    validator: Optional[dict[str, Any]] = None
    validation_level: str = "strict"
    validation_action: str = "error"
    extra: dict[str, Any] = field(default_factory=dict)
    #: A capped collection's bounds (sim/engine/capped.py).
    capped: Optional[CappedOptions] = None
    #: A time-series collection's options (sim/engine/timeseries.py).
    timeseries: Optional[TimeseriesOptions] = None

    def to_document(self) -> dict[str, Any]:
        """The ``options`` of the collection's listCollections entry."""
        doc: dict[str, Any] = {}
        if self.capped is not None:
            doc.update(self.capped.to_document())
        if self.timeseries is not None:
            doc.update(self.timeseries.to_document())
        if self.validator is not None:
            doc["validator"] = self.validator
            doc["validationLevel"] = self.validation_level
            doc["validationAction"] = self.validation_action
        if self.collation is not None:
            doc["collation"] = self.collation.spec()
        doc.update(self.extra)
        return doc

    def check_document(
        self,
        doc: Mapping[str, Any],
        pre_image: Optional[Mapping[str, Any]] = None,
        *,
        bypass: bool = False,
    ) -> None:
        """Refuse ``doc`` (a new document or an update's post-image) if it fails the validator."""
        if self.validator is None or bypass or self.validation_level == "off":
            return
        details = failure_details(self.validator, doc)
        if details is None or self.validation_action == "warn":
            return
        if (
            self.validation_level == "moderate"
            and pre_image is not None
            and failure_details(self.validator, pre_image) is not None
        ):
            return  # moderate: a document that already failed may stay invalid
        raise CommandError(
            121,
            "Document failed validation",
            extra={"errInfo": {"failingDocumentId": doc.get("_id"), "details": details}},
        )


def _validation_fields(cmd: Mapping[str, Any], options: CollectionOptions) -> CollectionOptions:
    if "validator" in cmd:
        validator = cmd["validator"]
        check_validator(validator)
        options = replace(options, validator=dict(validator) or None)
    if "validationLevel" in cmd:
        level = cmd["validationLevel"]
        if level not in _LEVELS:
            raise CommandError(
                2, f"Enumeration value '{level}' for field 'validationLevel' is not a valid value."
            )
        options = replace(options, validation_level=str(level))
    if "validationAction" in cmd:
        action = cmd["validationAction"]
        if action not in _ACTIONS:
            raise CommandError(
                2,
                f"Enumeration value '{action}' for field 'validationAction' is not a valid value.",
            )
        options = replace(options, validation_action=str(action))
    if PRE_AND_POST_IMAGES in cmd:
        extra = {k: v for k, v in options.extra.items() if k != PRE_AND_POST_IMAGES}
        if _images_enabled(cmd[PRE_AND_POST_IMAGES]):
            extra[PRE_AND_POST_IMAGES] = {"enabled": True}
        options = replace(options, extra=extra)
    return options


def _images_enabled(value: Any) -> bool:
    """``changeStreamPreAndPostImages: {enabled: <bool>}`` (change streams record the
    images of the collection's writes while it is enabled)."""
    if not isinstance(value, Mapping):
        raise CommandError(
            14,
            f"BSON field '{PRE_AND_POST_IMAGES}' is the wrong type '{type(value).__name__}',"
            " expected type 'object'",
        )
    for name in value:
        if name != "enabled":
            raise CommandError(
                40415, f"BSON field '{PRE_AND_POST_IMAGES}.{name}' is an unknown field."
            )
    if "enabled" not in value:
        raise CommandError(
            40414, f"BSON field '{PRE_AND_POST_IMAGES}.enabled' is missing but a required field"
        )
    if not isinstance(value["enabled"], bool):
        raise CommandError(
            14,
            f"BSON field '{PRE_AND_POST_IMAGES}.enabled' is the wrong type, expected type 'bool'",
        )
    return bool(value["enabled"])


def create_options(cmd: Mapping[str, Any]) -> CollectionOptions:
    """The options of a ``create`` command, refusing those the simulator cannot honour."""
    for name in cmd:
        if name in _REFUSED_CREATE and cmd[name] not in (None, False):
            raise CommandError(238, f"the create option '{name}' is not supported by the simulator")
    timeseries = timeseries_options(cmd)
    if timeseries is None and cmd.get("expireAfterSeconds") is not None:
        # Outside a time-series collection it needs a clustered one, which the
        # simulator does not have.
        raise CommandError(
            238, "the create option 'expireAfterSeconds' is not supported by the simulator"
        )
    options = CollectionOptions(capped=capped_options(cmd), timeseries=timeseries)
    if cmd.get("collation") is not None:
        options = replace(options, collation=parse_collation(cmd["collation"]))
    options = _validation_fields(cmd, options)
    known = {"collation", "validator", "validationLevel", "validationAction", PRE_AND_POST_IMAGES}
    extra = {
        k: v
        for k, v in cmd.items()
        if k not in known | _IGNORED_CREATE | _REFUSED_CREATE | _KIND_FIELDS
    }
    if extra:
        raise CommandError(40415, f"BSON field 'create.{next(iter(extra))}' is an unknown field.")
    return options


_COLL_MOD_FIELDS = frozenset(
    {"validator", "validationLevel", "validationAction", PRE_AND_POST_IMAGES}
)
_COLL_MOD_REFUSED = frozenset({"index", "viewOn", "pipeline", "timeseries", "clusteredIndex"})
_COLL_MOD_CAPPED = frozenset({"cappedSize", "cappedMax"})


def modified_options(cmd: Mapping[str, Any], options: CollectionOptions) -> CollectionOptions:
    """The options after a ``collMod``."""
    for name in cmd:
        if name in _COLL_MOD_REFUSED:
            raise CommandError(
                238, f"the collMod option '{name}' is not supported by the simulator"
            )
    if "expireAfterSeconds" in cmd:
        if options.timeseries is None:
            # Outside a time-series collection it needs a clustered one.
            raise CommandError(
                238, "the collMod option 'expireAfterSeconds' is not supported by the simulator"
            )
        options = replace(
            options, timeseries=modified_expiry(options.timeseries, cmd["expireAfterSeconds"])
        )
    unknown = [
        name
        for name in cmd
        if name not in _COLL_MOD_FIELDS | _COLL_MOD_CAPPED | {"expireAfterSeconds"}
        and name not in _IGNORED_CREATE
        and name != "collMod"
    ]
    if unknown:
        raise CommandError(40415, f"BSON field 'collMod.{unknown[0]}' is an unknown field.")
    if any(name in cmd for name in _COLL_MOD_CAPPED):
        options = replace(options, capped=modified_capped(cmd, options.capped))
    return _validation_fields(cmd, options)
