"""The command path of a callgrind window: what Redis does for the commands a suite sends,
counted apart from what the harness and the timer make it do.

``instructions_per_op`` counts ``processCommand``'s inclusive instructions less the work
that follows the run's layout or timing rather than the code (the constants below say which
and why), plus the timer's rehashing. :func:`command_path_functions` gives each function's
part of that same scope, so the functions a report or the lab's table names are the
commands' own: a function the timer calls (``serverCron`` refreshing the allocator's
statistics through ``mallctl``: ``ctl_lookup``, ``je_arena_stats_merge``) or the harness
asks for (INFO's ``vfprintf``) gets only the share of its cost reached from the command path.

Callgrind keeps the inclusive cost of every call edge, not of every call path, so a
function reached both from the command path and from elsewhere is split by the edges it is
called through (each function's share of its inclusive cost is the sum of its callers'
shares times the cost of their calls to it, as gprof splits a function among its callers).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from redis_benchmarks_spec.telemetry.profilers.callgrind import CallgrindProfile

#: the command path: everything Redis does for a parsed command (lookup, ACL, call(), the
#: command, its reply into the client buffer), whichever thread read the request
COMMAND_PATH_FUNCTIONS = ("processCommand",)
#: ... less the command-table lookup: the table is a dict hashed with the seed each process
#: draws at start, so the chain a command name lands in (and the case-insensitive compares
#: along it) changes from run to run; one name, never averaged out (+3 % on GET, +5 % on
#: INCR in single runs). lookupCommand is inlined in Redis 7 builds, hence the dict calls.
COMMAND_LOOKUP_CALLEES = ("lookupCommand", "lookupCommandLogic", "lookupCommandOrOriginal",
                          "dictFetchValue", "dictFind")
#: ... and less the same lookup wherever a command makes it (EXPIRE rewritten as PEXPIREAT
#: for propagation looks the new name up: ``replaceClientCommandVector`` ->
#: ``lookupCommandOrOriginal``, 374 instructions per EXPIRE, its case compares 17-26 by seed)
LOOKUP_FUNCTIONS = ("lookupCommand", "lookupCommandLogic", "lookupCommandOrOriginal",
                    "lookupCommandBySds", "lookupCommandBySdsLogic", "lookupSubcommand")
#: ... less glibc's string compares ``processCommand`` makes itself (the ``host:``/``post``
#: check of every command name, two calls a command): their cost follows where the name's
#: allocation lands against a page end, which the layout of each run decides (40 and 58
#: instructions a call in two runs of one binary: 2,315 and 2,350 instructions per APPEND,
#: +1.5 % with no change; docs/statistics.md); the calls are the same in every build
LAYOUT_CALLEES = ("__strcasecmp_avx2", "__strcasecmp_evex", "__strcasecmp_sse42",
                  "__strcasecmp_sse4_2", "__strcasecmp_ssse3", "__strcasecmp_sse2",
                  "__strcasecmp_l_avx2", "strcasecmp")
#: ... less the records a command makes because it was *slow in wall time*: call() checks
#: every command's duration against ``slowlog-log-slower-than`` (10 ms by default) and
#: ``latency-monitor-threshold``; under callgrind a descheduled server passes them, and the
#: entry it then writes (client peer id, argv copies: ~1,500 instructions) depends on the host's
#: load, not on the code. Beside three other counted runs on this VM the slow log took 38 K
#: instructions of a 5,000-SET window (+0.26 % per op, benchmarks/count_neighbours.py); the
#: check itself (~12 instructions a command) stays in, so a run that writes no entry counts
#: as before. The entry's work is the callees of ``slowlogPushEntryIfNeeded``, and the
#: latency monitor's is ``latencyAddSample`` called from call().
SLOW_RECORD_FUNCTIONS = ("slowlogPushEntryIfNeeded",)
LATENCY_RECORD = ("call", ("latencyAddSample",))
#: ... plus the rehashing the timer did: rehashing a grown keyspace costs the same whoever
#: does it, and how the work splits between the commands and the cron depends on timing
REHASH_BY_TIMER = ("dictRehashMilliseconds",)
SCOPE = ("command path (inclusive instructions of processCommand without the command-table "
         "lookup, its own name compares and the slow log's entries, with the timer's "
         "rehashing)")


def command_path_instructions(profiles: Any) -> int:
    """processCommand's inclusive count less its command-table lookups, its own string
    compares of the command name and the entries the slow log and latency monitor wrote,
    plus the timer's rehashing (see the constants above); 0 when the binary has no
    processCommand symbol."""
    profiles = list(profiles)
    whole = inclusive(profiles, COMMAND_PATH_FUNCTIONS)
    if whole <= 0:
        return 0
    lookup = sum(p.edge(name, COMMAND_LOOKUP_CALLEES + LAYOUT_CALLEES) for p in profiles
                 for name in COMMAND_PATH_FUNCTIONS)
    # the lookups made further down (their nested calls to one another counted once); those
    # processCommand makes itself are its edges above
    lookup += sum(f.inclusive_ir - sum(f.calls.get(n, 0) for n in LOOKUP_FUNCTIONS)
                  - sum(p.edge(caller, (f.name,)) for caller in COMMAND_PATH_FUNCTIONS)
                  for p in profiles for name in LOOKUP_FUNCTIONS for f in p.by_name(name))
    return max(0, whole - lookup - slow_records(profiles)) + \
        inclusive(profiles, REHASH_BY_TIMER)


def slow_records(profiles: Any) -> int:
    """Instructions of the slow log's entries and the latency monitor's samples: work a
    command does because it took long in wall time (see SLOW_RECORD_FUNCTIONS)."""
    entries = sum(f.called_ir for p in profiles for name in SLOW_RECORD_FUNCTIONS
                  for f in p.by_name(name))
    caller, callees = LATENCY_RECORD
    return entries + sum(p.edge(caller, callees) for p in profiles)


def inclusive(profiles: Any, names: tuple[str, ...]) -> int:
    return sum(f.inclusive_ir for p in profiles for name in names for f in p.by_name(name))


#: passes of the share propagation (the depth of Redis's call graph is ~30)
MAX_PASSES = 100


def _excluded_edges() -> set[tuple[str, str]]:
    """Call edges whose cost is not the command path's (the constants above)."""
    out = {(root, callee) for root in COMMAND_PATH_FUNCTIONS
           for callee in COMMAND_LOOKUP_CALLEES + LAYOUT_CALLEES}
    caller, callees = LATENCY_RECORD
    return out | {(caller, callee) for callee in callees}


def command_path_shares(profile: CallgrindProfile) -> dict[str, float]:
    """Per function name, the share (0-1) of its inclusive instructions spent on the command
    path (module doc); functions never reached from it are absent."""
    inclusive_of: dict[str, int] = {}
    calls: dict[str, dict[str, int]] = {}
    for f in profile.functions:
        inclusive_of[f.name] = inclusive_of.get(f.name, 0) + f.inclusive_ir
        edges = calls.setdefault(f.name, {})
        for callee, cost in f.calls.items():
            edges[callee] = edges.get(callee, 0) + cost
    excluded = _excluded_edges()
    roots = {name: 1.0 for name in COMMAND_PATH_FUNCTIONS + REHASH_BY_TIMER
             if inclusive_of.get(name, 0) > 0}
    share = dict(roots)
    for _ in range(MAX_PASSES):
        inflow: dict[str, float] = {}
        for caller, caller_share in share.items():
            if caller in SLOW_RECORD_FUNCTIONS:
                continue  # the entries it writes are the host's load (SLOW_RECORD_FUNCTIONS)
            for callee, cost in calls.get(caller, {}).items():
                if callee != caller and (caller, callee) not in excluded:
                    inflow[callee] = inflow.get(callee, 0.0) + caller_share * cost
        new = dict(roots)
        for callee, reached in inflow.items():
            if callee not in roots and callee not in LOOKUP_FUNCTIONS and \
                    inclusive_of.get(callee, 0) > 0:
                new[callee] = min(1.0, reached / inclusive_of[callee])
        if new.keys() == share.keys() and \
                all(abs(new[k] - share[k]) < 1e-9 for k in new):
            return new
        share = new
    return share


def command_path_functions(profiles: Iterable[CallgrindProfile]) -> list[Any]:
    """Every function's self and inclusive instructions on the command path, over
    ``profiles``: ``(name, file, object, self, inclusive)``, most self first."""
    merged: dict[tuple[str, str | None], list[Any]] = {}
    for profile in profiles:
        shares = command_path_shares(profile)
        for f in profile.functions:
            part = shares.get(f.name, 0.0)
            if part <= 0.0:
                continue
            entry = merged.setdefault((f.name, f.obj), [f.name, f.file, f.obj, 0.0, 0.0])
            entry[3] += part * f.self_ir
            entry[4] += part * f.inclusive_ir
    return sorted(merged.values(), key=lambda e: -e[3])
