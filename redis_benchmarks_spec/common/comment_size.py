"""GitHub's limit on a comment or issue body, and how a body is measured and cut to it.

GitHub refuses (422) a comment or issue body over 65,536 characters, and a refused edit
leaves the pull request with the previous body or none at all. The writers of bodies
(``notify.pr_body``) keep under it by design; :func:`fit` is the last guard before a body
leaves (``notify.github_comments``), and the lab's stand-in of GitHub refuses what GitHub
would (``lab.github_local``).
"""

from __future__ import annotations

GITHUB_MAX_BODY_CHARS = 65_536
CUT_NOTE = ("\n\n:scissors: The rest of this comment was cut to stay within GitHub's "
            "65,536-character limit; the linked report holds every table.")


def body_chars(text: str) -> int:
    """The body's length as GitHub may count it: UTF-16 code units, never fewer than the
    characters Python counts (a character outside the BMP, an emoji, counts twice)."""
    return len(text.encode("utf-16-le")) // 2


def fits(text: str, limit: int = GITHUB_MAX_BODY_CHARS) -> bool:
    """Whether GitHub accepts ``text`` as a body (``limit`` for tests)."""
    return body_chars(text) <= limit


def fit(text: str, limit: int = GITHUB_MAX_BODY_CHARS, note: str = CUT_NOTE) -> str:
    """``text`` unchanged when it fits, else its first whole lines and ``note`` (which says
    it was cut), at most ``limit`` long."""
    if fits(text, limit):
        return text
    room = limit - body_chars(note)
    if room <= 0:
        raise ValueError(f"the cut note alone is longer than the limit ({limit})")
    kept: list[str] = []
    used = 0
    for line in text.split("\n"):
        cost = body_chars(line) + 1
        if used + cost > room:
            break
        kept.append(line)
        used += cost
    return "\n".join(kept) + note
