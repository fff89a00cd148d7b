"""A maintainer's word on an alert issue (datasink/alert_triage.py keeps it): a label added
to the issue (``issues`` delivery, action ``labeled``) or a ``/rbs triage STATE`` comment on
it (``issue_comment``). Pure functions, no I/O; the receiver hands the result to its
``on_triage`` hook, which finds the alert and records the word.

Labels: ``rbs:acknowledged``, ``rbs:expected``, ``rbs:false-alarm``, ``rbs:fixed``. Adding a
label needs triage rights on GitHub; a comment counts only from a member, owner or
collaborator (``author_association``). ``/rbs triage fixed fixed-by=<40-hex sha>`` names
the fixing commit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from redis_benchmarks_spec.api.pr_command import ASSOCIATIONS, MAX_SCAN, CommandRefused, PrRef

STATES = ("acknowledged", "expected", "false-alarm", "fixed")
LABELS = {f"rbs:{s}": s for s in STATES}
_NAME = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")
_SHA = re.compile(r"^[0-9a-f]{40}$")
MAX_ISSUE_BODY = 20_000


@dataclass(frozen=True)
class TriageAsk:
    """Which issue, what was said, by whom and how."""

    issue: PrRef
    body: str  # the issue's body: it names the alerted commit
    state: str
    by: str
    source: str  # label | command
    fixed_by: str = ""


def _issue(payload: Any) -> tuple[PrRef, str, str] | None:
    """(issue, its body, the sender) of an issue delivery; None when it is not one."""
    if not isinstance(payload, dict):
        return None
    issue, repo, sender = (payload.get(k) for k in ("issue", "repository", "sender"))
    if not (isinstance(issue, dict) and isinstance(repo, dict) and isinstance(sender, dict)):
        return None
    owner = repo.get("owner")
    org = owner.get("login") if isinstance(owner, dict) else None
    number, name, login = issue.get("number"), repo.get("name"), sender.get("login")
    raw_body = issue.get("body")
    body = raw_body if isinstance(raw_body, str) else ""
    if type(number) is not int or number <= 0 or issue.get("pull_request") is not None or \
            not all(isinstance(v, str) and _NAME.match(v) for v in (org, name, login)):
        return None
    return PrRef(str(org), str(name), number), body[:MAX_ISSUE_BODY], str(login)


def of_label(payload: Any) -> TriageAsk | None:
    """The triage a ``labeled`` ``issues`` delivery says; None for any other label."""
    if not isinstance(payload, dict) or payload.get("action") != "labeled":
        return None
    label = payload.get("label")
    state = LABELS.get(label.get("name", "").lower()) if isinstance(label, dict) and \
        isinstance(label.get("name"), str) else None
    found = _issue(payload)
    if state is None or found is None:
        return None
    issue, body, login = found
    return TriageAsk(issue, body, state, login, "label")


def of_comment(payload: Any) -> TriageAsk | None:
    """The triage a new comment on an issue asks; None when it holds no ``/rbs triage``.
    Raises :class:`CommandRefused` (its message is the answer) for a stranger's or a
    malformed one."""
    found = _issue(payload)
    comment = payload.get("comment") if isinstance(payload, dict) else None
    if found is None or payload.get("action") != "created" or not isinstance(comment, dict) \
            or not isinstance(comment.get("body"), str):
        return None
    line = next((x.split() for x in comment["body"][:MAX_SCAN].splitlines()
                 if x.split()[:2] == ["/rbs", "triage"]), None)
    if line is None:
        return None
    issue, body, login = found
    if comment.get("author_association") not in ASSOCIATIONS:
        raise CommandRefused("only members, owners and collaborators can triage an alert")
    words = line[2:]
    if not words or words[0] not in STATES:
        raise CommandRefused(f"say one of {', '.join(STATES)}")
    fixed_by = ""
    for word in words[1:]:
        key, _, value = word.partition("=")
        if key != "fixed-by" or not _SHA.match(value) or words[0] != "fixed" or fixed_by:
            raise CommandRefused(f"unknown word `{word[:40]}` (only `fixed fixed-by=<40-hex "
                                 "sha>`)")
        fixed_by = value
    return TriageAsk(issue, body, words[0], login, "command", fixed_by)
