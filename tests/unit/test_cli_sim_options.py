"""The options of ``mongocore sim`` and ``mongocore sim-control``, parsed without a deployment."""

from __future__ import annotations

import argparse
from pathlib import Path
from urllib.parse import unquote

import pytest

from mongocore.cli.main import build_parser, main
from mongocore.cli.sim_control import _candidates, member_name
from mongocore.cli.sim_options import (
    client_uri,
    make_tls_files,
    parse_compressors,
    parse_tags,
    parse_user,
)
from mongocore.core.address import parse_address
from mongocore.core.compression import available_compressors
from mongocore.core.options import ClientOptions


def test_tags_per_member_in_the_short_form() -> None:
    assert parse_tags("dc=ny;dc=sf,rack=2;dc=la") == [
        {"dc": "ny"},
        {"dc": "sf", "rack": "2"},
        {"dc": "la"},
    ]
    # An empty entry leaves that member untagged; spaces around names are dropped.
    assert parse_tags("dc=ny;; dc = la ") == [{"dc": "ny"}, {}, {"dc": "la"}]


def test_tags_as_json() -> None:
    assert parse_tags('[{"dc": "ny"}, {}, {"dc": "sf", "rack": "2"}]') == [
        {"dc": "ny"},
        {},
        {"dc": "sf", "rack": "2"},
    ]


@pytest.mark.parametrize(
    "text",
    ["dc", "dc=ny;rack", "=ny", '[{"dc": 1}]', '["dc"]', "[{", '[{"dc": "ny"}'],
)
def test_bad_tags_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_tags(text)


def test_user_and_password_split_at_the_first_colon() -> None:
    assert parse_user("app:s3cret") == ("app", "s3cret")
    assert parse_user("app:a:b@c") == ("app", "a:b@c")
    assert parse_user("app:") == ("app", "")
    for text in ("app", ":secret"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_user(text)


def test_compressors_must_be_known_installed_and_distinct() -> None:
    assert parse_compressors("zlib") == ("zlib",)
    assert parse_compressors(",".join(available_compressors())) == available_compressors()
    for text in ("lz4", "noop", "zlib,zlib"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_compressors(text)


def test_client_uri_carries_credentials_tls_and_compressors() -> None:
    uri = client_uri(
        "mongodb://127.0.0.1:1,127.0.0.1:2/?replicaSet=rs0",
        user=("a@b", "p:w/d"),
        ca_file=Path("/tmp/dir with space/ca.pem"),
        compressors=("zstd", "zlib"),
    )
    assert uri.startswith("mongodb://a%40b:p%3Aw%2Fd@127.0.0.1:1,127.0.0.1:2/?replicaSet=rs0&")
    query = dict(pair.split("=", 1) for pair in uri.split("?", 1)[1].split("&"))
    assert query["tls"] == "true"
    assert unquote(query["tlsCAFile"]) == "/tmp/dir with space/ca.pem"
    assert query["compressors"] == "zstd,zlib"
    # Nothing to add: the deployment's own URI.
    assert client_uri("mongodb://127.0.0.1:1/") == "mongodb://127.0.0.1:1/"
    assert client_uri("mongodb://h:1/?loadBalanced=true", compressors=("zlib",)) == (
        "mongodb://h:1/?loadBalanced=true&compressors=zlib"
    )


def test_client_uri_parses_back_to_the_same_settings() -> None:
    uri = client_uri("mongodb://127.0.0.1:1/", user=("app", "s3cret"), compressors=("zlib",))
    options = ClientOptions.from_uri(uri)
    assert (options.username, options.password) == ("app", "s3cret")
    assert list(options.compressors) == ["zlib"]


def test_tls_files_are_written_and_a_temporary_directory_removed(tmp_path: Path) -> None:
    pytest.importorskip("trustme")
    kept = make_tls_files(str(tmp_path / "certs"))
    assert kept.ca_file.read_text().startswith("-----BEGIN CERTIFICATE-----")
    server = kept.server_file.read_text()
    assert "PRIVATE KEY-----" in server and "-----BEGIN CERTIFICATE-----" in server
    kept.remove()
    assert kept.ca_file.exists()  # a directory the user named is left alone
    temporary = make_tls_files()
    assert temporary.ca_file.exists()
    temporary.remove()
    assert not temporary.directory.exists()


def test_member_names() -> None:
    assert member_name("27018") == "127.0.0.1:27018"
    assert member_name("db1:27019") == "db1:27019"
    for text in ("70000", "db1:port"):
        with pytest.raises(argparse.ArgumentTypeError):
            member_name(text)


def test_the_member_acted_on_is_tried_last() -> None:
    hosts = tuple(parse_address(f"127.0.0.1:{p}") for p in (1, 2, 3))
    assert [a.port for a in _candidates(hosts, "127.0.0.1:1")] == [2, 3, 1]
    assert [a.port for a in _candidates(hosts, "localhost:2")] == [1, 3, 2]
    assert [a.port for a in _candidates(hosts, None)] == [1, 2, 3]


def test_sim_options_are_parsed() -> None:
    args = build_parser().parse_args(
        [
            "sim",
            "--auth",
            "a:1",
            "--auth",
            "b:2",
            "--tls",
            "--tags",
            "dc=ny",
            "--compressors",
            "zlib",
        ]
    )
    assert args.auth == [("a", "1"), ("b", "2")]
    assert (args.tls, args.tags, args.compressors) == (True, [{"dc": "ny"}], ("zlib",))
    args = build_parser().parse_args(["sim"])
    assert (args.auth, args.tls, args.tags, args.compressors) == ([], False, None, ())


def test_sim_control_arguments() -> None:
    args = build_parser().parse_args(["sim-control", "partition", "27018", "--mode", "drop"])
    assert (args.action, args.member, args.mode, args.port, args.uri) == (
        "partition",
        "127.0.0.1:27018",
        "drop",
        None,
        None,
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sim", "--standalone", "--name", "x"], "--name: only with --replset or --sharded"),
        (["sim", "--load-balanced", "--name", "x"], "--name: only with --replset or --sharded"),
        (["sim", "--sharded", "--tags", "dc=ny"], "--tags: only with --replset"),
        (["sim", "--replset", "2", "--tags", "a=1;a=2;a=3"], "3 tag sets for 2 members"),
        (["sim", "--tls-dir", "x"], "--tls-dir: only with --tls"),
        (["sim", "--compressors", "lz4"], "unknown compressor 'lz4'"),
        (["sim", "--auth", "app"], "expected USER:PASSWORD"),
        (["sim-control", "kill"], "kill needs the MEMBER"),
        (["sim-control", "freeze", "27018"], "freeze needs --secs"),
        (["sim-control", "kill", "27018", "--secs", "1"], "--secs is for stepdown and freeze"),
        (["sim-control", "heal", "27018", "--mode", "drop"], "--mode is for partition"),
        (["sim-control", "explode"], "invalid choice"),
        (["sim-control", "status", "--port", "1", "--uri", "mongodb://h"], "not allowed with"),
    ],
)
def test_bad_arguments_exit_with_usage(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"usage: mongocore {argv[0]}" in err
    assert message in err
