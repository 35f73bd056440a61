"""The pure rules of resuming a change stream (mongocore.core.change_streams): Change
Streams spec, "Resumable Error", "Updating the Cached Resume Token", "startAtOperationTime"
and "Resume Process"."""

from __future__ import annotations

from typing import Any

import pytest
from bson import Timestamp
from hypothesis import given
from hypothesis import strategies as st

from mongocore.core.change_streams import (
    RESUMABLE_CHANGE_STREAM_ERROR,
    RESUMABLE_CODES_BEFORE_LABELS,
    START_OPTIONS,
    MissingResumeToken,
    ResumeState,
    get_more_fields,
    is_resumable,
    kills_old_cursor,
)
from mongocore.errors import (
    ConfigurationError,
    CursorNotFound,
    InvalidOperation,
    NetworkError,
    NetworkTimeout,
    NotPrimaryError,
    OperationFailure,
    ServerSelectionTimeoutError,
)

LABELS = 9  # wire version of MongoDB 4.4: the server labels resumable errors
BEFORE_LABELS = 8
TOKEN_A = {"_data": "82A"}
TOKEN_B = {"_data": "82B"}
PBRT = {"_data": "82C"}
TIME = Timestamp(1700000000, 3)


def server_error(code: int, labels: tuple[str, ...] = ()) -> OperationFailure:
    return OperationFailure("failed", code, {"ok": 0, "code": code, "errorLabels": list(labels)})


# --- Resumable Error -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        NetworkError("connection closed"),
        NetworkTimeout("timed out"),
        ServerSelectionTimeoutError("no server"),
    ],
)
@pytest.mark.parametrize("wire_version", [BEFORE_LABELS, LABELS, 21])
def test_errors_that_are_not_server_errors_are_resumable(
    error: Exception, wire_version: int
) -> None:
    assert is_resumable(error, wire_version)


@pytest.mark.parametrize("wire_version", [BEFORE_LABELS, LABELS, 21])
def test_cursor_not_found_is_resumable_without_a_label(wire_version: int) -> None:
    assert is_resumable(CursorNotFound("gone", 43, {"code": 43}), wire_version)
    assert is_resumable(server_error(43), wire_version)


def test_from_4_4_the_label_decides() -> None:
    assert is_resumable(server_error(50, (RESUMABLE_CHANGE_STREAM_ERROR,)), LABELS)
    # A code of the old list without the label is not resumable any more...
    assert not is_resumable(server_error(6), LABELS)
    assert not is_resumable(NotPrimaryError("not primary", 10107, {"code": 10107}), 21)
    # ... and an unlisted code with it is.
    assert is_resumable(server_error(280, (RESUMABLE_CHANGE_STREAM_ERROR,)), 21)
    assert not is_resumable(server_error(216), 21)  # ElectionInProgress, unlabeled


@pytest.mark.parametrize("code", sorted(RESUMABLE_CODES_BEFORE_LABELS))
def test_before_4_4_the_codes_decide(code: int) -> None:
    assert is_resumable(server_error(code), BEFORE_LABELS)
    assert not is_resumable(server_error(code), LABELS)


def test_before_4_4_other_codes_are_not_resumable_even_labeled() -> None:
    assert not is_resumable(server_error(216), BEFORE_LABELS)
    assert not is_resumable(server_error(280, (RESUMABLE_CHANGE_STREAM_ERROR,)), BEFORE_LABELS)


@pytest.mark.parametrize(
    "error", [InvalidOperation("closed client"), ConfigurationError("bad"), ValueError("x")]
)
def test_errors_of_the_driver_itself_are_not_resumable(error: Exception) -> None:
    assert not is_resumable(error, 21)


def test_the_old_cursor_is_killed_after_server_errors_only() -> None:
    assert kills_old_cursor(server_error(6, (RESUMABLE_CHANGE_STREAM_ERROR,)))
    assert not kills_old_cursor(server_error(43))  # the server has no such cursor
    assert not kills_old_cursor(NetworkError("connection closed"))


# --- Updating the Cached Resume Token ---------------------------------------------------------


def test_a_stream_started_with_start_after_caches_it_over_resume_after() -> None:
    state = ResumeState.started(
        resume_after=TOKEN_A, start_after=TOKEN_B, start_at_operation_time=None
    )
    assert state.resume_token == TOKEN_B
    assert state.start_after
    state = ResumeState.started(
        resume_after=TOKEN_A, start_after=None, start_at_operation_time=None
    )
    assert state.resume_token == TOKEN_A
    assert not state.start_after
    state = ResumeState.started(resume_after=None, start_after=None, start_at_operation_time=TIME)
    assert state.resume_token is None
    assert state.operation_time == TIME


def test_the_cached_token_is_a_copy() -> None:
    given_token: dict[str, Any] = {"_data": "82A"}
    state = ResumeState.started(
        resume_after=given_token, start_after=None, start_at_operation_time=None
    )
    given_token["_data"] = "changed"
    assert state.resume_token == TOKEN_A


def test_an_empty_batch_caches_its_post_batch_resume_token() -> None:
    state = ResumeState(resume_token=TOKEN_A)
    assert state.after_batch(batch_empty=True, post_batch_resume_token=PBRT).resume_token == PBRT
    # A batch with documents waits for its documents to be returned.
    assert (
        state.after_batch(batch_empty=False, post_batch_resume_token=PBRT).resume_token == TOKEN_A
    )
    assert state.after_batch(batch_empty=True, post_batch_resume_token=None).resume_token == TOKEN_A


def test_a_returned_document_caches_its_id_or_the_batch_token_when_last() -> None:
    state = ResumeState(resume_token=None, operation_time=TIME, start_after=True)
    document = {"_id": TOKEN_A, "operationType": "insert"}
    middle = state.after_document(document, last_in_batch=False, post_batch_resume_token=PBRT)
    assert middle.resume_token == TOKEN_A
    last = state.after_document(document, last_in_batch=True, post_batch_resume_token=PBRT)
    assert last.resume_token == PBRT
    without = state.after_document(document, last_in_batch=True, post_batch_resume_token=None)
    assert without.resume_token == TOKEN_A
    # Once a document was returned, startAfter is done with and the time is not needed.
    assert not middle.start_after and middle.operation_time is None


def test_a_document_without_id_cannot_be_resumed_after() -> None:
    """The message begins with pymongo's sentence, then says what removed the token."""
    with pytest.raises(MissingResumeToken) as info:
        ResumeState().after_document({"x": 1}, last_in_batch=True, post_batch_resume_token=PBRT)
    assert str(info.value) == (
        "Cannot provide resume functionality when the resume token is missing:"
        " the change document has no _id (a pipeline stage removed it)"
    )


def test_every_cached_token_is_a_deep_copy() -> None:
    """A resume token is opaque and may nest documents: changing the user's token, the
    reply's postBatchResumeToken or a returned document afterwards must not change
    where a resume starts."""
    given: dict[str, Any] = {"_data": {"clusterTime": 1}}
    started = ResumeState.started(
        resume_after=given, start_after=None, start_at_operation_time=None
    )
    given["_data"]["clusterTime"] = 2
    assert started.resume_token == {"_data": {"clusterTime": 1}}
    batch_token: dict[str, Any] = {"_data": {"clusterTime": 3}}
    after_batch = started.after_batch(batch_empty=True, post_batch_resume_token=batch_token)
    batch_token["_data"]["clusterTime"] = 4
    assert after_batch.resume_token == {"_data": {"clusterTime": 3}}
    document: dict[str, Any] = {"_id": {"_data": {"clusterTime": 5}}, "operationType": "insert"}
    returned = started.after_document(document, last_in_batch=False, post_batch_resume_token=None)
    document["_id"]["_data"]["clusterTime"] = 6
    assert returned.resume_token == {"_data": {"clusterTime": 5}}


# --- startAtOperationTime ----------------------------------------------------------------------


def after_aggregate(state: ResumeState, **changes: Any) -> ResumeState:
    arguments: dict[str, Any] = {
        "stage": {},
        "first_batch_empty": True,
        "post_batch_resume_token": None,
        "operation_time": TIME,
        "max_wire_version": 21,
    }
    arguments.update(changes)
    return state.after_aggregate(**arguments)


def test_the_operation_time_is_saved_only_when_every_condition_holds() -> None:
    assert after_aggregate(ResumeState()).operation_time == TIME
    assert after_aggregate(ResumeState(), stage={"resumeAfter": TOKEN_A}).operation_time is None
    assert after_aggregate(ResumeState(), stage={"startAfter": TOKEN_A}).operation_time is None
    earlier = Timestamp(1, 1)
    assert (
        after_aggregate(
            ResumeState(operation_time=earlier), stage={"startAtOperationTime": earlier}
        ).operation_time
        == earlier
    )
    assert after_aggregate(ResumeState(), max_wire_version=6).operation_time is None
    assert after_aggregate(ResumeState(), max_wire_version=7).operation_time == TIME  # 4.0
    assert after_aggregate(ResumeState(), first_batch_empty=False).operation_time is None
    with_token = after_aggregate(ResumeState(), post_batch_resume_token=PBRT)
    assert with_token.operation_time is None and with_token.resume_token == PBRT


# --- Resume Process ----------------------------------------------------------------------------


ORIGINAL = {"fullDocument": "updateLookup", "startAtOperationTime": TIME, "resumeAfter": TOKEN_B}


def test_resuming_with_a_token_sets_resume_after_and_drops_the_other_starts() -> None:
    stage = ResumeState(resume_token=TOKEN_A, operation_time=TIME).resume_stage(ORIGINAL, 21)
    assert stage == {"fullDocument": "updateLookup", "resumeAfter": TOKEN_A}


def test_resuming_before_any_document_of_a_start_after_stream_sets_start_after() -> None:
    original = {"startAfter": TOKEN_B}
    state = ResumeState.started(
        resume_after=None, start_after=TOKEN_B, start_at_operation_time=None
    )
    state = state.after_batch(batch_empty=True, post_batch_resume_token=PBRT)
    assert state.resume_stage(original, 21) == {"startAfter": PBRT}
    state = state.after_document(
        {"_id": TOKEN_A}, last_in_batch=False, post_batch_resume_token=None
    )
    assert state.resume_stage(original, 21) == {"resumeAfter": TOKEN_A}


def test_resuming_without_a_token_starts_at_the_operation_time_from_wire_version_7() -> None:
    state = ResumeState(operation_time=TIME)
    assert state.resume_stage({"fullDocument": "default"}, 7) == {
        "fullDocument": "default",
        "startAtOperationTime": TIME,
    }
    assert state.resume_stage({"fullDocument": "default"}, 6) == {"fullDocument": "default"}


def test_resuming_with_nothing_cached_sends_the_original_options() -> None:
    original = {"fullDocument": "required", "allChangesForCluster": True}
    assert ResumeState().resume_stage(original, 21) == original


options = st.dictionaries(
    st.sampled_from(["fullDocument", "allChangesForCluster", *START_OPTIONS]),
    st.sampled_from([TOKEN_A, TIME, "x", True]),
)
states = st.builds(
    ResumeState,
    resume_token=st.sampled_from([None, TOKEN_A, PBRT]),
    operation_time=st.sampled_from([None, TIME]),
    start_after=st.booleans(),
)


@given(states, options, st.integers(min_value=0, max_value=25))
def test_a_resume_names_at_most_one_start_and_keeps_every_other_option(
    state: ResumeState, original: dict[str, Any], wire_version: int
) -> None:
    stage = state.resume_stage(original, wire_version)
    assert len([key for key in START_OPTIONS if key in stage]) <= 1
    assert {k: v for k, v in stage.items() if k not in START_OPTIONS} == {
        k: v for k, v in original.items() if k not in START_OPTIONS
    }
    if state.resume_token is not None:
        assert state.resume_token in stage.values()


# --- getMore ---------------------------------------------------------------------------------


def test_get_more_carries_max_await_time_and_from_4_4_the_comment() -> None:
    assert get_more_fields(None, None, 21) == {}
    assert get_more_fields(250, {"k": "v"}, LABELS) == {"maxTimeMS": 250, "comment": {"k": "v"}}
    assert get_more_fields(250, "c", BEFORE_LABELS) == {"maxTimeMS": 250}
    assert get_more_fields(None, "c", 21) == {"comment": "c"}
