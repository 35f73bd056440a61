"""The official in_window suite, asserting the seed's uniform choice inside the window.

The files expect the newer "power of two choices" by operationCount; the seed picks
uniformly at random among the suitable servers in the latency window. The runner
asserts the seed's outcome, as listed in specs/deviations.toml: with a fixed seed,
the observed frequencies of ``iterations`` selections (read, mode nearest) are 1/k
for each of the k servers in the latency window and 0 for every other server.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import pytest

from mongocore.core.address import Address, parse_address
from mongocore.core.selection.read_preference import NEAREST
from mongocore.core.selection.selectors import in_latency_window, select_server, select_servers
from tests.spec import specdata
from tests.spec.deviations import deviation
from tests.spec.format_keys import check_keys
from tests.spec.selection_support import addresses, topology_description

SUITE = "server-selection/tests/in_window"
SEED = 20161121  # fixed: the seed's version date; any fixed value keeps the run deterministic
# Used instead of a tolerance of 0, which upstream meant for frequencies of exactly 0 or 1.
STANDARD_DEVIATIONS = 4
# The format's keys (the suite's README, "Selection Within Latency Window YAML Tests").
FILE_KEYS = (
    "description",
    "topology_description",
    "mocked_topology_state",
    "iterations",
    "outcome",
)


@pytest.mark.parametrize("path", specdata.json_files(SUITE))
def test_in_window(path: Path, request: pytest.FixtureRequest) -> None:
    test_id = request.node.callspec.id
    test = specdata.load(path)
    check_keys(path.name, test, FILE_KEYS)
    check_keys("outcome", test["outcome"], ("tolerance", "expected_frequencies"))
    for state in test["mocked_topology_state"]:
        # operation_count is what the seed's rule ignores (the [[deviation]] entry).
        check_keys("mocked_topology_state", state, ("address", "operation_count"))
    entry = deviation(SUITE, test, test, test_id)
    assert entry is not None, (
        f"{SUITE}/{test_id} asserts the seed's uniform choice, which deviates from the "
        "file: a [[deviation]] rule of specs/deviations.toml must select it"
    )
    description = topology_description(test)
    all_servers = addresses(description.servers.values())
    # Every address the file mentions is one of the topology's servers.
    mentioned = {parse_address(a) for a in test["outcome"]["expected_frequencies"]}
    assert mentioned <= all_servers

    window = addresses(
        in_latency_window(
            select_servers(description, NEAREST), description.settings.local_threshold
        )
    )
    assert window, "every in_window file has servers in the latency window"

    iterations = int(test["iterations"])
    rng = random.Random(SEED)
    counts: Counter[Address] = Counter()
    for _ in range(iterations):
        chosen = select_server(description, NEAREST, rng)
        assert chosen is not None
        counts[chosen.address] += 1

    expected_share = 1.0 / len(window)
    tolerance = float(test["outcome"]["tolerance"])
    if tolerance == 0:
        tolerance = STANDARD_DEVIATIONS * math.sqrt(
            expected_share * (1 - expected_share) / iterations
        )
    for address in all_servers:
        observed = counts[address] / iterations
        if address in window:
            assert abs(observed - expected_share) <= tolerance, (
                f"{address}: selected {observed:.3f} of the time, expected "
                f"{expected_share:.3f} +/- {tolerance:.3f} (uniform over {len(window)} servers)"
            )
        else:
            assert observed == 0, f"{address} is outside the latency window but was selected"
