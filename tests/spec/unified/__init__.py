"""A runner for the unified test format (mongodb/specifications,
source/unified-test-format), run against mongocore's Client and the simulated
deployments of ``mongocore.sim``.

Modules: :mod:`.cases` (loading files, runOnRequirements), :mod:`.deployments` (the
simulated topologies), :mod:`.matching` ("Evaluating Matches"), :mod:`.events`
(observed events and expectedEvent), :mod:`.entities` (the entity map),
:mod:`.operations` (entity operations on mongocore's API), :mod:`.runner` (executing
tests and special operations) and :mod:`.seed` (the seeds' outcomes for tests listed
as deviations). The pytest modules ``test_*.py`` generate one test per test case.
"""
