"""``/rbs`` commands in a pull request's comments: what an ``issue_comment`` delivery asks.
Pure functions, no I/O; :mod:`.commands` acts on them.

``/rbs benchmark [suites=A,B] [groups=G] [commands=C] [platforms=P,Q] [pairs=N]
[profilers=X,Y]`` queues the pull request's head; ``/rbs cancel`` stops what is queued for
it. Only a comment that was ``created`` on a pull request, by a member, owner or
collaborator (``author_association``), is a command. Everything in it is untrusted and
bounded where it is read:

- the command is the first line of the comment that starts with ``/rbs`` (the first
  :data:`MAX_SCAN` characters are looked at, one line of :data:`MAX_LINE`);
- a word is ``key=value`` with a known key, once; anything else is refused, naming it;
- ``suites``, ``groups`` and ``commands`` are at most :data:`MAX_ITEMS` comma-separated items
  of ``[A-Za-z0-9._-]`` with at most one ``*`` each, searched in the names (``zset`` picks
  every suite whose name holds ``zset``). They become regular expressions here, built from
  escaped text and one ``.*`` per item: no group, no nested or repeated quantifier, so no
  pattern can backtrack for long (the size bound and the shape are the time bound);
- ``platforms`` must be platforms the receiver serves (when it lists them);
- ``pairs`` is an integer in 2..:data:`MAX_PAIRS`; ``profilers`` are names of
  :data:`PROFILERS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from redis_benchmarks_spec.events.messages import SuiteFilters

ASSOCIATIONS = ("MEMBER", "OWNER", "COLLABORATOR")
PREFIX = "/rbs"
MAX_SCAN = 4096
MAX_LINE = 400
MAX_ITEMS = 10
MAX_ITEM = 64
MAX_PAIRS = 40
#: the profilers a command may ask for (telemetry/profilers/registry.py's names; a test
#: checks that they are known there)
PROFILERS = ("instructions", "perf-stat", "perf-record")
ACTIONS = ("benchmark", "cancel")
KEYS = ("suites", "groups", "commands", "platforms", "pairs", "profilers")
_ITEM = re.compile(r"^[A-Za-z0-9._-]*\*?[A-Za-z0-9._-]*$")
_PLATFORM = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")


class CommandRefused(ValueError):
    """A command the lab will not act on; the message is the answer it posts."""


@dataclass(frozen=True)
class PrRef:
    """Which pull request: ``org/repo#number``."""

    org: str
    repo: str
    number: int

    @property
    def ref(self) -> str:
        return f"{self.org}/{self.repo}#{self.number}"


@dataclass(frozen=True)
class PrCommand:
    """A checked command: what to do, for which pull request, asked by whom."""

    action: str
    pr: PrRef
    user: str
    suites: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()
    pairs: int | None = None
    profilers: tuple[str, ...] = ()
    text: str = field(default="", compare=False)  # the command line as written

    def filters(self) -> SuiteFilters:
        """The suite filters the build request carries."""
        return SuiteFilters(tests_regexp=items_regexp(self.suites),
                            groups_regexp=items_regexp(self.groups),
                            commands_regexp=items_regexp(self.commands))

    def canonical(self) -> str:
        """The command in one spelling: two comments asking the same thing are one."""
        parts = [self.action] + [f"{k}={','.join(sorted(v))}" for k, v in (
            ("suites", self.suites), ("groups", self.groups), ("commands", self.commands),
            ("platforms", self.platforms), ("profilers", self.profilers)) if v]
        return " ".join(parts + ([f"pairs={self.pairs}"] if self.pairs else []))

    def describe(self) -> str:
        """What will run, in words."""
        what = [f"suites matching {', '.join(self.suites)}" if self.suites else "the suites "
                "the platforms select for this pull request"]
        if self.groups:
            what.append(f"in groups {', '.join(self.groups)}")
        if self.commands:
            what.append(f"testing {', '.join(self.commands)}")
        where = f"on {', '.join(self.platforms)}" if self.platforms else "on every platform"
        how = [f"up to {self.pairs} interleaved pairs per test" if self.pairs else
               "the platform's pairs budget"]
        if self.profilers:
            how.append(f"profilers {', '.join(self.profilers)}")
        return f"{' '.join(what)} {where}, {' and '.join(how)}"


def items_regexp(items: tuple[str, ...]) -> str:
    """Searched items as one regular expression (``.*`` when none): escaped text, each
    ``*`` a ``.*``, the items alternatives of one non-capturing group."""
    if not items:
        return ".*"
    return "(?:" + "|".join(".*".join(re.escape(p) for p in i.split("*")) for i in items) + ")"


def _line(body: str) -> str | None:
    for line in body[:MAX_SCAN].splitlines():
        words = line.strip().split()
        if words and words[0] == PREFIX:
            if len(line) > MAX_LINE:
                raise CommandRefused(f"the command is longer than {MAX_LINE} characters")
            return line.strip()
    return None


def _items(key: str, value: str) -> tuple[str, ...]:
    items = tuple(v for v in value.split(",") if v)
    if not items or len(items) > MAX_ITEMS:
        raise CommandRefused(f"`{key}=` takes 1 to {MAX_ITEMS} comma-separated names")
    for item in items:
        if len(item) > MAX_ITEM or not _ITEM.match(item) or item == "*":
            raise CommandRefused(f"`{key}=`: {item[:MAX_ITEM]!r} is not a name (letters, "
                                 f"digits, `.`, `_`, `-`, at most one `*`, {MAX_ITEM} "
                                 "characters)")
    return items


def _value(key: str, value: str, platforms: tuple[str, ...]) -> Any:
    if key == "pairs":
        if not value.isdigit() or not 2 <= int(value) <= MAX_PAIRS:
            raise CommandRefused(f"`pairs=` takes an integer from 2 to {MAX_PAIRS}")
        return int(value)
    items = _items(key, value)
    if key == "profilers":
        unknown = [p for p in items if p not in PROFILERS]
        if unknown:
            raise CommandRefused(f"unknown profiler `{unknown[0]}` (known: "
                                 f"{', '.join(PROFILERS)})")
    if key == "platforms":
        bad = [p for p in items if not _PLATFORM.match(p) or (platforms and p not in platforms)]
        if bad:
            raise CommandRefused(f"unknown platform `{bad[0]}` (the lab runs: "
                                 f"{', '.join(platforms) or 'any'})")
    return items


def parse(body: str, pr: PrRef, user: str, platforms: tuple[str, ...] = ()) -> PrCommand | None:
    """The command of a comment's ``body``; None when it holds none. Raises
    :class:`CommandRefused` for one the lab will not act on."""
    line = _line(body)
    if line is None:
        return None
    words = line.split()[1:]
    if not words or words[0] not in ACTIONS:
        raise CommandRefused(f"unknown command `{(words or [''])[0][:40]}` (known: "
                             f"{', '.join(ACTIONS)})")
    if words[0] == "cancel" and len(words) > 1:
        raise CommandRefused("`/rbs cancel` takes no parameters")
    values: dict[str, Any] = {}
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if not sep or key not in KEYS:
            raise CommandRefused(f"unknown word `{word[:40]}` (known: "
                                 f"{', '.join(k + '=' for k in KEYS)})")
        if key in values:
            raise CommandRefused(f"`{key}=` is given twice")
        values[key] = _value(key, value, platforms)
    return PrCommand(words[0], pr, user, text=line[:MAX_LINE], **values)


def of_delivery(payload: Any) -> tuple[PrRef, str, str, str] | None:
    """(pull request, author, association, body) of an ``issue_comment`` delivery that
    created a comment on a pull request; None for any other (an issue, an edit)."""
    if not isinstance(payload, dict) or payload.get("action") != "created":
        return None
    issue, comment, repo = (payload.get(k) for k in ("issue", "comment", "repository"))
    if not (isinstance(issue, dict) and isinstance(comment, dict) and isinstance(repo, dict)):
        return None
    if not isinstance(issue.get("pull_request"), dict):
        return None  # a comment on an issue, not a pull request
    number, owner = issue.get("number"), repo.get("owner")
    org = owner.get("login") if isinstance(owner, dict) else None
    name, user = repo.get("name"), comment.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    association, body = comment.get("author_association"), comment.get("body")
    if not (isinstance(org, str) and isinstance(name, str) and isinstance(login, str)
            and isinstance(association, str) and isinstance(body, str)
            and type(number) is int and number > 0):
        return None
    if not all(_PLATFORM.match(v) for v in (org, name, login)):
        return None
    return PrRef(org, name, number), login, association, body
