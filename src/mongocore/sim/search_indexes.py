"""Atlas Search index management on a community server: refused.

A MongoDB 7.0 community mongod (and mongos) has the search index commands
(createSearchIndexes, updateSearchIndex, dropSearchIndex) and the
``$listSearchIndexes`` stage, but no search process to run them, and refuses each
with SearchNotEnabled (31082). The simulator is such a server, so it answers the same
refusal: a driver's command is still received, and its shape can be checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongocore.sim.codes import CommandError

if TYPE_CHECKING:
    from mongocore.sim.commands import CommandContext

__all__ = ["SEARCH_NOT_ENABLED", "refuse_search", "uses_search_index_stage"]

SEARCH_NOT_ENABLED = 31082
_MESSAGE = (
    "Using Atlas Search Database Commands and the $listSearchIndexes aggregation stage"
    " requires additional configuration. Please connect to Atlas or an AtlasCLI local"
    " deployment to enable. For more information on how to connect, see"
    " https://dochub.mongodb.org/core/atlas-cli-deploy-local-reqs"
)


def refuse_search(ctx: CommandContext) -> dict[str, Any]:
    """The answer to createSearchIndexes, updateSearchIndex and dropSearchIndex."""
    raise CommandError(SEARCH_NOT_ENABLED, _MESSAGE)


def uses_search_index_stage(pipeline: Any) -> bool:
    """Does the pipeline list search indexes ($listSearchIndexes)?"""
    return isinstance(pipeline, list) and any(
        isinstance(stage, dict) and "$listSearchIndexes" in stage for stage in pipeline
    )
