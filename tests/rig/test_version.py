"""What a server binary says about itself: --version parsed, builds matched."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.rig.version import ServerVersion, build_matches, parse_server_version

NEW_BANNER = "version: 0.6.0-dev (build 11434, commit 515e85511)\nbuilt with cc for x86_64"
OLD_BANNER = "version: 1 (c8e03ce)\nbuilt with cc for x86_64"


class TestVersionParsing:
    def test_new_form_gives_version_build_and_commit(self) -> None:
        got = parse_server_version(NEW_BANNER)
        assert got == ServerVersion(
            "version: 0.6.0-dev (build 11434, commit 515e85511)", "0.6.0-dev", "11434", "515e85511"
        )
        assert got.identity == "b11434-515e85511"

    def test_old_form_takes_the_number_as_build(self) -> None:
        got = parse_server_version(OLD_BANNER)
        assert got == ServerVersion("version: 1 (c8e03ce)", "1", "1", "c8e03ce")

    def test_banner_after_log_lines_is_found(self) -> None:
        text = "ggml_cuda_init: found 1 CUDA devices\n  Device 0: x\n" + OLD_BANNER
        got = parse_server_version(text)
        assert got is not None and got.commit == "c8e03ce"

    @pytest.mark.parametrize("text", ["", "usage: llama-server [options]", "version 1 c8e03ce"])
    def test_unrecognised_text_gives_none(self, text: str) -> None:
        assert parse_server_version(text) is None

    @given(
        version=st.from_regex(r"\A[0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,3}(-dev)?\Z"),
        build=st.integers(1, 10**6),
        commit=st.from_regex(r"\A[0-9a-f]{7,40}\Z"),
    )
    def test_any_new_form_banner_round_trips(self, version: str, build: int, commit: str) -> None:
        got = parse_server_version(f"version: {version} (build {build}, commit {commit})\nbuilt")
        assert got == ServerVersion(
            f"version: {version} (build {build}, commit {commit})", version, str(build), commit
        )
        assert build_matches(got, commit)
        assert build_matches(got, f"b{build}-{commit}")
        assert not build_matches(got, f"b{build + 1}-{commit}")

    @pytest.mark.parametrize(
        ("expected", "matches"),
        [
            ("515e85511", True),
            ("b11434-515e85511", True),
            ("11434", True),
            ("b11434", True),
            ("515E855", True),  # short hash, any case
            ("515e85511" + "0" * 31, True),  # full hash of the printed short one
            ("1", False),  # a digit inside the build number is not the build
            ("515e8", False),  # too short to name a commit
            ("b11435-515e85511", False),
            ("b11434-c8e03ce", False),
            ("c8e03ce", False),
        ],
    )
    def test_expected_build_matches_whole_tokens(self, expected: str, matches: bool) -> None:
        got = parse_server_version(NEW_BANNER)
        assert got is not None
        assert build_matches(got, expected) is matches

    def test_old_form_matches_its_commit(self) -> None:
        got = parse_server_version(OLD_BANNER)
        assert got is not None
        assert build_matches(got, "c8e03ce")
        assert not build_matches(got, "515e85511")
