"""mongocore's pytest plugin (mongocore.pytest_plugin), run by pytester on suites of
its own: every fixture gives a working deployment, a shared deployment is put back
between tests, no thread outlives a test or the session, --mongodb-uri (its
environment variable, its ini option) points the fixtures at another deployment and
makes the fault controls unavailable, and a conftest that calls
mongocore.install_as_pymongo() can use the plugin in the same process.

Each inner suite has the thread-leak check of tests/conftest.py in its conftest: the
plugin's resets must keep out of such a check's window.
"""

from __future__ import annotations

import re
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mongocore import MongoClient
from mongocore.sim import ReplicaSet
from tests.thirdparty.suites import thirdparty_dir

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

#: The inner suites' conftest: the project's thread-leak check, verbatim in effect.
LEAK_CHECK = """
import threading
import pytest


@pytest.fixture(autouse=True)
def no_thread_leak():
    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate()
              if t not in before and t.is_alive() and t.name.startswith("mongocore")]
    for t in leaked:
        t.join(timeout=10)
    still = sorted(t.name for t in leaked if t.is_alive())
    assert not still, f"threads left running after the test: {still}"
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(LEAK_CHECK)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The inner suite, in this process, with its own options only."""
    return pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def mongocore_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("mongocore")}


def test_every_fixture_gives_a_deployment_a_client_can_use(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        """
        import pytest
        from mongocore import MongoClient

        def use(deployment):
            client = MongoClient(deployment.uri, serverSelectionTimeoutMS=20000)
            try:
                client.app.items.insert_one({"kind": deployment.kind})
                assert client.app.items.find_one({}, {"_id": 0}) == {"kind": deployment.kind}
            finally:
                client.close()

        def test_standalone(mongodb_standalone):
            assert mongodb_standalone.simulated and mongodb_standalone.kind == "standalone"
            use(mongodb_standalone)

        def test_replica_set(mongodb_replica_set):
            assert mongodb_replica_set.kind == "replica_set"
            use(mongodb_replica_set)

        def test_sharded_cluster(mongodb_sharded_cluster):
            assert mongodb_sharded_cluster.kind == "sharded_cluster"
            use(mongodb_sharded_cluster)

        def test_load_balanced(mongodb_load_balanced):
            assert mongodb_load_balanced.kind == "load_balanced"
            use(mongodb_load_balanced)

        @pytest.mark.parametrize("name", ["mongodb_standalone_per_test",
                                          "mongodb_replica_set_per_test",
                                          "mongodb_sharded_cluster_per_test",
                                          "mongodb_load_balanced_per_test"])
        def test_per_test(request, name):
            use(request.getfixturevalue(name))

        def test_factory(mongodb_deployments):
            for make in (mongodb_deployments.standalone, mongodb_deployments.replica_set,
                         mongodb_deployments.sharded_cluster, mongodb_deployments.load_balanced):
                use(make())
        """
    )
    before = mongocore_threads()
    result = run(suite, "-v")
    result.assert_outcomes(passed=9)
    # The session's deployments stopped with the session, every thread joined.
    assert mongocore_threads() - before == set()


def test_a_shared_deployment_is_put_back_between_tests(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        """
        from mongocore import MongoClient

        SEEN = {}

        def test_breaks_everything(mongodb_replica_set):
            rs = mongodb_replica_set
            SEEN["uri"] = rs.uri
            client = MongoClient(rs.uri, serverSelectionTimeoutMS=20000)
            try:
                client.app.items.insert_one({"_id": 1})
                client.admin.scratch.insert_one({"_id": 1})
                client.admin.command("createUser", "someone", pwd="pw", roles=[])
                client.admin.command("fsync", lock=True)
                client.admin.command("fsyncUnlock")  # one lock of two undone
                client.admin.command("fsync", lock=True)
            finally:
                client.close()
            first = rs.primary
            rs.members[1].lag = 5.0
            rs.freeze(rs.members[1], 600)
            rs.fail_command("find", error_code=2, member=rs.members[2])
            rs.kill_after_write(rs.members[2])
            rs.step_down()
            rs.kill(first)
            rs.partition(rs.members[2], mode="drop")

        def test_finds_it_as_new(mongodb_replica_set):
            rs = mongodb_replica_set
            assert rs.uri == SEEN["uri"]
            assert rs.primary is rs.members[0]
            assert all(m.alive and m.partition_mode is None for m in rs.members)
            assert [m.lag for m in rs.members] == [0.0, 0.0, 0.0]
            assert [m.frozen_until for m in rs.members] == [0.0, 0.0, 0.0]
            assert all(m.after_write is None for m in rs.members)
            client = MongoClient(rs.uri, serverSelectionTimeoutMS=20000)
            try:
                assert client.list_database_names() == ["admin", "config", "local"]
                assert "scratch" not in client.admin.list_collection_names()
                users = client.admin.command("usersInfo")["users"]
                assert users == []
                # Not fsync-locked, and find is not failing on any member.
                client.app.items.insert_one({"_id": 2})
                for member in rs.members:
                    direct = MongoClient(member.host, directConnection=True)
                    try:
                        direct.app.items.find_one({}, )
                    finally:
                        direct.close()
            finally:
                client.close()

        def test_leaves_a_cursor_open(mongodb_replica_set):
            client = MongoClient(mongodb_replica_set.uri, serverSelectionTimeoutMS=20000)
            try:
                # On a collection the reset does not drop; kept from the garbage
                # collector, which would kill it.
                SEEN["cursor"] = client.local["oplog.rs"].find(batch_size=1)
                next(SEEN["cursor"])
                assert len(mongodb_replica_set.primary.cursors) == 1
            finally:
                client.close()

        def test_finds_no_cursor(mongodb_replica_set):
            assert [len(m.cursors) for m in mongodb_replica_set.members] == [0, 0, 0]
        """
    )
    result = run(suite, "-v")
    result.assert_outcomes(passed=4)


def test_a_reconfigured_replica_set_is_built_again_on_its_ports(pytester: pytest.Pytester) -> None:
    # No thread-leak check here: the member the test adds runs until the reset after
    # it, which comes after such a check (a test that reconfigures is better off with a
    # deployment of its own).
    pytester.makepyfile(
        """
        SEEN = {}

        def test_reconfigures(mongodb_replica_set):
            SEEN["uri"] = mongodb_replica_set.uri
            mongodb_replica_set.sim.reconfig(add=1)
            assert len(mongodb_replica_set.members) == 4

        def test_has_its_first_shape(mongodb_replica_set):
            assert len(mongodb_replica_set.members) == 3
            assert mongodb_replica_set.uri == SEEN["uri"]
        """
    )
    run(pytester, "-v").assert_outcomes(passed=2)


def test_the_ini_options_and_the_marker_shape_the_deployments(suite: pytest.Pytester) -> None:
    suite.makeini(
        """
        [pytest]
        mongodb_members = 2
        mongodb_replica_set_name = app
        mongodb_hostname = localhost
        mongodb_auth = tester:s3cret
        mongodb_election_delay = 0.05
        """
    )
    suite.makepyfile(
        """
        import pytest
        from mongocore import MongoClient

        def test_ini(mongodb_replica_set):
            rs = mongodb_replica_set
            assert len(rs.members) == 2 and rs.sim.name == "app"
            assert rs.sim.election_delay == 0.05
            assert rs.uri.startswith("mongodb://tester:s3cret@localhost:")
            client = MongoClient(rs.uri, serverSelectionTimeoutMS=20000)
            try:
                assert client.admin.command("connectionStatus")["authInfo"][
                    "authenticatedUsers"] == [{"user": "tester", "db": "admin"}]
            finally:
                client.close()

        @pytest.mark.mongodb(members=1, name="solo", auth=None, tls=True, arbiters=1)
        def test_marker(mongodb_replica_set_per_test):
            rs = mongodb_replica_set_per_test
            assert [m.arbiter for m in rs.members] == [False, True]
            assert rs.sim.name == "solo" and rs.tls_ca_file is not None
            assert "tls=true" in rs.uri and "@" not in rs.uri
            client = MongoClient(rs.uri, serverSelectionTimeoutMS=20000)
            try:
                client.app.items.insert_one({})
            finally:
                client.close()

        @pytest.mark.mongodb(members=1)
        def test_marker_on_a_shared_fixture(mongodb_replica_set):
            pass

        @pytest.mark.mongodb(mongoses=2)
        def test_option_of_another_kind(mongodb_replica_set_per_test):
            pass
        """
    )
    result = run(suite, "-v")
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_marker_on_a_shared_fixture*",
            "mongocore plugin: the mongodb marker shapes the *_per_test fixtures*",
            "*ERROR at setup of test_option_of_another_kind*",
            "mongocore plugin: a replica set takes no 'mongoses'*",
        ]
    )


def test_a_bad_ini_option_is_a_usage_error(suite: pytest.Pytester) -> None:
    suite.makeini("[pytest]\nmongodb_members = three\n")
    suite.makepyfile("def test_nothing():\n    pass\n")
    result = run(suite)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*mongocore plugin: ini option: members:*'three'*"])


@pytest.fixture
def elsewhere() -> Iterator[ReplicaSet]:
    """The deployment the inner suite is pointed at: the inner plugin knows it only
    by its URI, as it would know a real one."""
    with ReplicaSet(members=3, election_delay=0.05) as deployment:
        client = MongoClient(deployment.uri, serverSelectionTimeoutMS=20000)
        try:
            client.kept.items.insert_one({"_id": "there before the tests"})
        finally:
            client.close()
        yield deployment


REAL_SUITE = """
import pytest
from mongocore import MongoClient
from mongocore.pytest_plugin import FaultControlsUnavailable


def test_uri(mongodb_replica_set):
    assert not mongodb_replica_set.simulated
    assert mongodb_replica_set.uri == "{uri}"
    client = MongoClient(mongodb_replica_set.uri, serverSelectionTimeoutMS=20000)
    try:
        client.made.items.insert_one({{}})
        assert client.kept.items.count_documents({{}}) == 1
    finally:
        client.close()


def test_dropped_what_the_last_test_made(mongodb_replica_set_per_test):
    client = MongoClient(mongodb_replica_set_per_test.uri, serverSelectionTimeoutMS=20000)
    try:
        names = client.list_database_names()
        assert "made" not in names and "kept" in names
    finally:
        client.close()


def test_fault_controls_say_why(mongodb_replica_set):
    with pytest.raises(FaultControlsUnavailable, match="--mongodb-uri .*mongodb_simulator"):
        mongodb_replica_set.step_down()


@pytest.mark.mongodb_simulator
def test_needs_the_simulator(mongodb_replica_set):
    mongodb_replica_set.kill(mongodb_replica_set.members[0])


def test_another_kind(mongodb_standalone):
    pass


@pytest.mark.mongodb(members=5)
def test_a_shape_of_its_own(mongodb_replica_set_per_test):
    pass


def test_factory(mongodb_deployments):
    mongodb_deployments.replica_set()
"""


def check_real_run(result: pytest.RunResult) -> None:
    result.assert_outcomes(passed=3, skipped=4)
    result.stdout.fnmatch_lines_random(
        [
            "*needs the simulator (marked mongodb_simulator)*real deployment*",
            "*is a replica set; this test asks for a standalone*",
            "*its own shape*the mongodb marker*",
            "*its own shape*mongodb_deployments*",
        ]
    )


def test_mongodb_uri_points_the_fixtures_at_a_deployment(
    suite: pytest.Pytester, elsewhere: ReplicaSet
) -> None:
    suite.makepyfile(REAL_SUITE.format(uri=elsewhere.uri))
    result = run(suite, "-v", "-rs", f"--mongodb-uri={elsewhere.uri}")
    check_real_run(result)
    result.stdout.fnmatch_lines(["mongodb: the fixtures run against mongodb://127.0.0.1:*"])
    # After the session: what the tests made is dropped, what was there is kept.
    client = MongoClient(elsewhere.uri, serverSelectionTimeoutMS=20000)
    try:
        names = client.list_database_names()
        assert "kept" in names and "made" not in names
    finally:
        client.close()


def test_the_environment_and_the_ini_name_the_deployment_too(
    suite: pytest.Pytester, elsewhere: ReplicaSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.makepyfile(REAL_SUITE.format(uri=elsewhere.uri))
    monkeypatch.setenv("MONGOCORE_TEST_URI", elsewhere.uri)
    check_real_run(run(suite, "-v", "-rs"))
    monkeypatch.delenv("MONGOCORE_TEST_URI")
    suite.makeini(f"[pytest]\nmongodb_uri = {elsewhere.uri}\n")
    check_real_run(run(suite, "-v", "-rs"))


def test_a_real_deployment_runs_on_one_worker(suite: pytest.Pytester) -> None:
    suite.makepyfile("def test_nothing():\n    pass\n")
    result = run(suite, "-n", "2", "--mongodb-uri=mongodb://127.0.0.1:1/")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--mongodb-uri runs on one worker*"])


def test_each_worker_has_deployments_of_its_own(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        """
        import os
        import pathlib
        import pytest

        @pytest.mark.parametrize("n", range(4))
        def test_port(mongodb_standalone, n):
            worker = os.environ["PYTEST_XDIST_WORKER"]
            pathlib.Path(f"{worker}-{n}.uri").write_text(mongodb_standalone.uri)
        """
    )
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=4)
    uris: dict[str, set[str]] = {}
    for path in suite.path.glob("*.uri"):
        uris.setdefault(path.name.split("-")[0], set()).add(path.read_text())
    # Two workers, each with one standalone of its own for all its tests.
    assert len(uris) == 2 and all(len(u) == 1 for u in uris.values()), uris
    assert len(set.union(*uris.values())) == 2


def test_without_the_simulator_the_fixture_fails_saying_what_to_install(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mongocore.sim", None)
    suite.makepyfile("def test_it(mongodb_standalone):\n    pass\n")
    result = run(suite)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*sim extra: pip install 'mongocore?sim?' (or *--mongodb-uri)*"])


def test_a_test_that_fails_is_reported_failed(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        """
        def test_fails(mongodb_replica_set):
            mongodb_replica_set.kill(mongodb_replica_set.members[0])
            assert False, "on purpose"

        def test_after_it(mongodb_replica_set):
            assert mongodb_replica_set.members[0].alive
        """
    )
    run(suite).assert_outcomes(passed=1, failed=1)


def test_install_as_pymongo_in_the_same_process(pytester: pytest.Pytester) -> None:
    """A conftest installs mongocore as pymongo, then the plugin's simulator runs on
    it: the plugin imports nothing of pymongo (or of the simulator) before a test asks
    for a deployment. Its own process: this one has imported pymongo already."""
    pytester.makeconftest(
        textwrap.dedent(
            """
            import sys
            import mongocore

            assert not [m for m in sys.modules if m.split(".")[0] in ("pymongo", "mongomock")]
            mongocore.install_as_pymongo()
            """
        )
    )
    pytester.makepyfile(
        """
        import sys
        import pymongo
        import mongocore

        def test_pymongo_is_mongocore(mongodb_replica_set):
            assert pymongo.MongoClient is mongocore.MongoClient
            assert "mongocore.sim" in sys.modules
            client = pymongo.MongoClient(mongodb_replica_set.uri)
            try:
                client.app.items.insert_one({"_id": 1})
                try:
                    client.app.items.insert_one({"_id": 1})
                except pymongo.errors.DuplicateKeyError as exc:
                    assert exc.code == 11000
                else:
                    raise AssertionError("no DuplicateKeyError")
                pipeline = [{"$group": {"_id": None, "n": {"$sum": 1}}}]
                assert list(client.app.items.aggregate(pipeline)) == [{"_id": None, "n": 1}]
            finally:
                client.close()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def _simulator_md_examples() -> list[str]:
    """The python blocks of docs/simulator.md's "Testing with pytest", in order."""
    text = (ROOT / "docs" / "simulator.md").read_text(encoding="utf-8")
    section = text[text.index("## Testing with pytest") : text.index("### From Python")]
    return re.findall(r"^```python\n(.*?)^```", section, re.M | re.S)


def test_the_examples_of_simulator_md_run_as_written(pytester: pytest.Pytester) -> None:
    """pymongo, mongocore and the marker's example in one suite, MongoEngine's
    (conftest and test module, install_as_pymongo included) in another, each in a
    process of its own."""
    pymongo_example, mongocore_example, mongoengine_example, marker_example = (
        _simulator_md_examples()
    )
    marker_example = "import pytest\nfrom mongocore import MongoClient\n\n" + marker_example
    pytester.makepyfile(
        test_pymongo=pymongo_example, test_mongocore=mongocore_example, test_marker=marker_example
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)

    conftest, _, test_module = mongoengine_example.partition("# test_users.py\n")
    mongoengine = thirdparty_dir() / "mongoengine"
    if not (mongoengine / "mongoengine").is_dir():
        pytest.skip(f"MongoEngine's source is not at {mongoengine} (MONGOCORE_THIRDPARTY)")
    odm = pytester.mkdir("odm")
    (odm / "conftest.py").write_text(conftest, encoding="utf-8")
    (odm / "test_users.py").write_text("import mongoengine\nimport pytest\n\n" + test_module)
    pytester.makeini("[pytest]\n")
    pytester.syspathinsert(mongoengine)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(mongoengine))
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", str(odm))
    result.assert_outcomes(passed=1)
