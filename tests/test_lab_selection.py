"""Suite selection from what the code does, on real Redis diffs of the vendored history:
the changed functions come from git's hunk headers and added definitions; the suites picked
are those whose base-commit callgrind profile executes a changed function, most exercised
first; a struct-layout or build change runs everything; static command matching only when
there is no profile; a change no suite executes runs none and says so."""

from __future__ import annotations

import subprocess

import pytest

from benchmarks import redis_history as history
from redis_benchmarks_spec.analysis.suite_selection import (
    BY_COMMAND,
    BY_PROFILE,
    FULL,
    NONE,
    Candidate,
    Change,
    select,
)
from redis_benchmarks_spec.builder import change as change_mod

GEODIST = ("155acef51ac7826ed294a4b61d891f1c7a9a40ac", "61c85a2b2081dffaf45eb8c6b7754b8d9a80c60d")
CONTROL = ("42fbf064d1448b44a149d55ba859109780725d01", "6a6e911f126ceacc847c82d592aaf41cce310162")
GEO, GET = "redis-benchmark-1Kkeys-geo-geodist", "redis-benchmark-1Kkeys-string-get-100B"
CANDIDATES = [Candidate(GET, ("get",)), Candidate(GEO, ("geodist",))]


def _diff(pair: tuple[str, str]) -> change_mod.ChangeSet:
    repo = history.bare_repo()
    text = subprocess.run(["git", "--git-dir", str(repo), "diff", "-U0", *pair],
                          capture_output=True, text=True, timeout=60, check=True).stdout
    return change_mod.parse_diff(text, *pair)


def _as_change(found: change_mod.ChangeSet) -> Change:
    return Change(tuple(found.files), tuple(found.functions), tuple(found.everything),
                  tuple(found.added))


def test_geodist_pr_changes_addreplydoubledistance_and_adds_fixedpoint() -> None:
    found = _diff(GEODIST)
    assert found.files == ["src/geo.c", "src/util.c", "src/util.h", "tests/unit/geo.tcl"]
    assert ("src/geo.c", "addReplyDoubleDistance") in found.functions
    assert ("src/util.c", "fixedpoint_d2string") in found.functions  # added definition
    # the hunk after d2string only adds new functions: d2string itself is unchanged
    assert ("src/util.c", "d2string") not in found.functions
    assert found.everything == []  # util.h gains a prototype only


def test_control_pr_moves_a_struct_field_so_every_suite_runs() -> None:
    found = _diff(CONTROL)
    assert found.everything == ["src/server.h changes more than declarations"]
    chosen = select(_as_change(found), {GEO: [("call", "server.c", 900.0)]}, CANDIDATES)
    assert chosen.method == FULL and chosen.suites == [GET, GEO]
    assert "server.h changes more than declarations" in chosen.reason


def test_build_file_and_allocator_reach_everything() -> None:
    text = ("--- a/src/Makefile\n+++ b/src/Makefile\n@@ -1 +1 @@\n-a\n+b\n"
            "--- a/src/zmalloc.c\n+++ b/src/zmalloc.c\n@@ -5 +5 @@ void *zmalloc(size_t s) {\n-x\n+y\n")
    found = change_mod.parse_diff(text)
    assert found.everything == ["src/Makefile is a build file", "src/zmalloc.c is the allocator"]


def test_a_makefile_under_tests_builds_no_server() -> None:
    """abc345ad (#11199) edits tests/modules/Makefile: the test modules' build, not the
    server's (the replay ran every suite for it)."""
    text = "--- a/tests/modules/Makefile\n+++ b/tests/modules/Makefile\n@@ -1 +1 @@\n-a\n+b\n"
    assert change_mod.parse_diff(text).everything == []


def test_profiles_pick_the_suite_that_executes_the_changed_function() -> None:
    profiles = {GEO: [("geodistCommand", "geo.c", 2100.0),
                      ("addReplyDoubleDistance", "geo.c", 1200.0)],
                GET: [("getCommand", "t_string.c", 300.0), ("string2ll", "util.c", 90.0)]}
    chosen = select(_as_change(_diff(GEODIST)), profiles, CANDIDATES)
    assert chosen.method == BY_PROFILE and chosen.suites == [GEO]
    assert chosen.scores == {GEO: 1200.0}
    assert chosen.reason.startswith("1 of 2 suites execute functions in geo.c that this PR "
                                    "changes")


def test_a_changed_function_inlined_into_its_caller_selects_by_its_file() -> None:
    # what callgrind saw of the base commit of #11552: gcc inlined addReplyDoubleDistance
    # into geodistCommand; util.c's string2ll runs in every suite, but the PR's util.c
    # changes are a new function and test code, so they select nothing by themselves
    profiles = {GEO: [("geodistCommand", "/t/src/geo.c", 9222.0), ("string2ll", "util.c", 183.0)],
                GET: [("getCommand", "t_string.c", 300.0), ("string2ll", "util.c", 183.0)]}
    found = _diff(GEODIST)
    assert ("src/util.c", "fixedpoint_d2string") in found.added
    chosen = select(_as_change(found), profiles, CANDIDATES)
    assert chosen.suites == [GEO] and chosen.scores == {GEO: 9222.0}
    assert chosen.reason == ("1 of 2 suites execute code in geo.c that this PR changes "
                             "(callgrind profiles of the base commit; addReplyDoubleDistance "
                             "runs inlined in callers there)")


def test_most_exercised_first_within_the_budget() -> None:
    change = Change(("src/t_zset.c",), (("src/t_zset.c", "zzlInsertAt"),))
    profiles = {"a": [("zzlInsertAt", "t_zset.c", 10.0)], "b": [("zzlInsertAt", "t_zset.c", 50.0)],
                "c": [("zzlInsertAt", "t_zset.c", 30.0)], "d": [("x", "t.c", 1.0)]}
    chosen = select(change, profiles, [Candidate(n) for n in "abcd"], budget=2)
    assert chosen.suites == ["b", "c"]
    assert "2 of 4 suites execute functions in t_zset.c" in chosen.reason
    assert "budget of 2" in chosen.reason


def test_without_profiles_command_names_are_the_fallback() -> None:
    change = Change(("src/geo.c",), (("src/geo.c", "geodistCommand"),))
    chosen = select(change, {}, CANDIDATES)
    assert chosen.method == BY_COMMAND and chosen.suites == [GEO]
    assert "no profile of the base commit" in chosen.reason


def test_a_change_no_suite_executes_runs_none_and_says_so() -> None:
    change = Change(("README.md",), ())
    chosen = select(change, {GEO: [("geodistCommand", "geo.c", 1.0)]}, CANDIDATES)
    assert chosen.method == NONE and chosen.suites == []
    assert chosen.reason == ("none of the 1 profiled suites executes the code in README.md "
                             "that this PR changes")


def test_no_change_record_runs_every_suite() -> None:
    chosen = select(None, {}, CANDIDATES)
    assert chosen.method == FULL and chosen.suites == [GET, GEO]
    assert "no record of what this pull request changes" in chosen.reason


def test_change_record_round_trips_and_refuses_bad_names(redis_server) -> None:  # type: ignore[no-untyped-def]
    import redis
    client = redis.Redis(port=redis_server.port)
    found = _diff(GEODIST)
    change_mod.save(client, "t", found)
    back = change_mod.load(client, "t", *GEODIST)
    assert back is not None and back.functions == found.functions and back.files == found.files
    assert back.added == found.added
    client.set(change_mod.change_key("t", "a" * 40, "b" * 40),
               '{"files": ["../../etc/passwd;"], "functions": []}')
    with pytest.raises(ValueError, match="not one"):
        change_mod.load(client, "t", "a" * 40, "b" * 40)


def test_a_budget_on_the_whole_list_keeps_the_most_commands_priority_first() -> None:
    # sorted by name, the first three are all GETs: the cut keeps one suite per command
    candidates = [Candidate("a-get-1", ("get",), 1), Candidate("a-get-2", ("get",), 1),
                  Candidate("a-get-3", ("GET",), 2), Candidate("b-set", ("set",), 3),
                  Candidate("c-zadd", ("zadd",), None), Candidate("d-hset", ("hset",), 2)]
    chosen = select(None, {}, candidates, budget=3)
    assert chosen.suites == ["a-get-1", "d-hset", "b-set"]  # priority 1, 2, 3: one command each
    assert "chosen to test 3 of the 4 commands" in chosen.reason
    more = select(None, {}, candidates, budget=5)  # every command, then the rest by priority
    assert more.suites == ["a-get-1", "d-hset", "b-set", "c-zadd", "a-get-2"]
    assert select(None, {}, candidates).suites == [c.name for c in candidates]  # no budget
