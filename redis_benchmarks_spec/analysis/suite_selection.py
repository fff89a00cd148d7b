"""Which suites a pull request (or a tracked branch's push) runs: those that execute the
code it changes.

Inputs are plain values (computed elsewhere): the changed files and functions of base..head,
the reasons the change reaches everything (a build file, the allocator, a header whose edit
is more than declarations), the base commit's map of the functions each suite executes with
their inclusive instructions per operation (callgrind), and the suites the platform may run
with its budget. The rule, in order:

1. the change reaches everything, or no change is known: every suite (within the budget);
2. a map of the base commit exists: the suites that execute a changed function (its name in
   a changed file), most exercised first (summed inclusive instructions per op of the
   changed functions); a change whose functions are not known selects by changed file;
3. no map: suites whose tested commands a changed function implements (``geodistCommand``
   -> ``geodist``): static matching, the fallback only;
4. nothing matched: no suite, and the reason says so.

Nothing here reads a file or a server.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

FULL, BY_PROFILE, BY_COMMAND, NONE = "full list", "profile", "command names", "none"
_COMMAND_FN = re.compile(r"^([a-z]+)(?:Generic)?Command$")
_TEST_FN = re.compile(r"(^test|Test$)")


@dataclass(frozen=True)
class Candidate:
    """A suite the platform may run, with the commands it says it tests."""

    name: str
    commands: tuple[str, ...] = ()
    priority: int | None = None  # the suite's own (lower runs first); None: after all


@dataclass(frozen=True)
class Change:
    """What base..head changes (see ``builder.change``); ``None`` fields: not known."""

    files: tuple[str, ...]
    functions: tuple[tuple[str, str], ...]  # (file, function)
    everything: tuple[str, ...] = ()
    added: tuple[tuple[str, str], ...] = ()  # new in the head (reached through changed code)


@dataclass
class Selection:
    """The suites to run, in order, how they were chosen and why (one sentence)."""

    suites: list[str]
    method: str
    reason: str
    scores: dict[str, float] = field(default_factory=dict)


def _base(path: str) -> str:
    return PurePosixPath(path).name


def _capped(names: list[str], budget: int | None) -> tuple[list[str], str]:
    if budget is None or len(names) <= budget:
        return names, ""
    return names[:budget], f"; the platform's budget of {budget} keeps the first {budget}"


def _covering(candidates: list[Candidate], budget: int | None) -> tuple[list[str], str]:
    """The whole list cut to ``budget`` so that it tests as many commands as it can: in the
    suites' priority order (then name), first each suite that tests a command none kept
    before it does, then the rest in that order. Cut by name, a budget of 20 out of 551
    would be 20 suites of the same few commands (the corpus sorts by tool and key shape)."""
    if budget is None or len(candidates) <= budget:
        return [c.name for c in candidates], ""
    ordered = sorted(candidates, key=lambda c: (c.priority is None, c.priority or 0, c.name))
    kept: list[str] = []
    covered: set[str] = set()
    for c in ordered:
        new = {x.lower() for x in c.commands} - covered
        if new and len(kept) < budget:
            kept.append(c.name)
            covered |= new
    chosen = set(kept)
    kept += [c.name for c in ordered if c.name not in chosen][:budget - len(kept)]
    every = {x.lower() for c in candidates for x in c.commands}
    return kept, (f"; the platform's budget of {budget} keeps {budget}, chosen to test "
                  f"{len(covered)} of the {len(every)} commands (suite priority first)")


def _files_text(files: list[str]) -> str:
    shown = sorted({_base(f) for f in files})
    return ", ".join(shown[:4]) + (f" and {len(shown) - 4} more" if len(shown) > 4 else "")


def unresolved(change: Change, profiles: dict[str, list[tuple[str, str, float]]]) -> list[str]:
    """Files of changed functions that existed in the base and that no profile names: the
    compiler inlined them into callers of the same file (``addReplyDoubleDistance`` into
    ``geodistCommand``). Test code (``utilTest``, ``test_*``) and new functions (reached
    only through changed callers) are left out."""
    seen = {(_base(file), fn) for costs in profiles.values() for fn, file, _ in costs}
    files = []
    for path, fn in change.functions:
        if (path, fn) in change.added or _TEST_FN.search(fn) or (_base(path), fn) in seen:
            continue
        if _base(path) not in files:
            files.append(_base(path))
    return files


def by_profile(change: Change, profiles: dict[str, list[tuple[str, str, float]]],
               candidates: list[Candidate]) -> dict[str, float]:
    """Per candidate with a profile: summed inclusive instructions per op of the changed
    functions it executes, plus, per file of a changed function no profile names (inlined),
    the costliest function of that file it executes; of the changed files when no function
    is known."""
    wanted = {(_base(f), n) for f, n in change.functions}
    inlined = set(unresolved(change, profiles))
    code_files = {_base(f) for f in change.files if f.endswith((".c", ".cc", ".cpp"))}
    scores = {}
    for c in candidates:
        costs = profiles.get(c.name)
        if not costs:
            continue
        if wanted:
            score = sum(cost for fn, file, cost in costs if (_base(file), fn) in wanted)
            score += sum(max((cost for _, file, cost in costs if _base(file) == f), default=0.0)
                         for f in inlined)
        else:
            score = max((cost for _, file, cost in costs if _base(file) in code_files),
                        default=0.0)
        if score > 0:
            scores[c.name] = score
    return scores


def by_command(change: Change, candidates: list[Candidate]) -> list[str]:
    """Candidates whose tested commands a changed ``<name>Command`` function implements."""
    commands = {m.group(1) for _, fn in change.functions if (m := _COMMAND_FN.match(fn))}
    return [c.name for c in candidates if commands & {x.lower() for x in c.commands}]


def select(change: Change | None, profiles: dict[str, list[tuple[str, str, float]]],
           candidates: list[Candidate], budget: int | None = None,
           who: str = "this PR") -> Selection:
    """The :class:`Selection` for a pull request (see the module docstring); ``who`` names
    the change in the reason ("this push" for a tracked branch)."""
    names = [c.name for c in candidates]
    total = len(names)
    if change is None or change.everything:
        named = who.replace("PR", "pull request")
        why = f"no record of what {named} changes" if change is None else \
            change.everything[0]
        kept, cut = _covering(candidates, budget)
        return Selection(kept, FULL, f"all {total} suites run: {why}{cut}")
    files = _files_text(list(change.files))
    mapped = [c for c in candidates if profiles.get(c.name)]
    if mapped:
        return _by_profile(change, profiles, candidates, budget, who)
    matched, _ = _capped(by_command(change, candidates), budget)
    if matched:
        return Selection(matched, BY_COMMAND, f"{len(matched)} of {total} suites test a "
                                              f"command whose function in {files} {who} "
                                              "changes (command names: no profile of the "
                                              "base commit yet)")
    kept, cut = _covering(candidates, budget)
    return Selection(kept, FULL, f"all {total} suites run: no profile of the base commit "
                                 f"and no changed command function in {files}{cut}")


def _by_profile(change: Change, profiles: dict[str, list[tuple[str, str, float]]],
                candidates: list[Candidate], budget: int | None, who: str) -> Selection:
    """Rule 2 of the module docstring, with the sentence that explains it."""
    scores = by_profile(change, profiles, candidates)
    kept, cut = _capped(sorted(scores, key=lambda n: (-scores[n], n)), budget)
    hit = {fn for n in kept for fn, _, _ in profiles.get(n, [])}
    inlined = unresolved(change, profiles)
    hit_files = [f for f, fn in change.functions if fn in hit] + inlined
    files = _files_text(hit_files or list(change.files))
    what = "functions" if change.functions else "code"
    note = ""
    if inlined:
        names = sorted({fn for f, fn in change.functions if _base(f) in inlined
                        and (f, fn) not in change.added and not _TEST_FN.search(fn)})
        note = f"; {', '.join(names[:3])} runs inlined in callers there"
        what = "code"
    mapped = sum(1 for c in candidates if profiles.get(c.name))
    if not kept:
        return Selection([], NONE, f"none of the {mapped} profiled suites executes the "
                                   f"{what} in {files} that {who} changes{note}")
    return Selection(kept, BY_PROFILE, f"{len(kept)} of {len(candidates)} suites execute "
                                       f"{what} in {files} that {who} changes (callgrind "
                                       f"profiles of the base commit{note}){cut}", scores)
