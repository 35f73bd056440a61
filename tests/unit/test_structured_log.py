"""The base of every component's logger (mongocore.io.structured_log): its default
logger and max document length, the level checks, and the record it emits."""

from __future__ import annotations

import logging

from mongocore.io import structured_log
from mongocore.io.structured_log import StructuredLogger
from tests.log_capture import capture


class _ExampleLogger(StructuredLogger):
    LOGGER_NAME = "mongocore.test-structured-log"

    def said(self, message: str, level: int = logging.DEBUG) -> None:
        if self._enabled(level):
            self._emit(f"said {message}", {**self._data(message), "n": 1}, level)


def test_defaults_come_from_the_component_and_the_setting() -> None:
    previous = structured_log.set_max_document_length(12)
    try:
        example = _ExampleLogger("topology-1")
    finally:
        structured_log.set_max_document_length(previous)
    assert example.logger is logging.getLogger(_ExampleLogger.LOGGER_NAME)
    assert example.max_document_length == 12
    assert example.topology_id == "topology-1"
    assert _ExampleLogger(max_document_length=3).max_document_length == 3


def test_emits_the_text_with_its_structured_form_at_the_level() -> None:
    with capture(_ExampleLogger.LOGGER_NAME, logging.INFO, propagate=False) as records:
        example = _ExampleLogger("t")
        example.said("quiet")
        example.said("loud", logging.INFO)
    assert [r.getMessage() for r in records.records] == ["said loud"]
    assert records.records[0].levelno == logging.INFO
    # The record names where the message was built, not the base class.
    assert records.records[0].funcName == "said"
    assert records.records[0].module == "test_structured_log"
    assert records.data == [{"message": "loud", "topologyId": "t", "n": 1}]
    assert getattr(records.records[0], structured_log.DATA_ATTRIBUTE) == records.data[0]


def test_enabled_logger_answers_none_below_the_level() -> None:
    with capture(_ExampleLogger.LOGGER_NAME, logging.INFO, propagate=False) as records:
        assert _ExampleLogger.enabled_logger(level=logging.INFO) is records.logger
        # DEBUG is the default level asked about.
        assert _ExampleLogger.enabled_logger() is None
        other = logging.getLogger("mongocore.test-structured-log.other")
        assert _ExampleLogger.enabled_logger(other, logging.INFO) is other
