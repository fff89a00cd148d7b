"""The pull requests' pages: each comment as the lab last posted it (kept in the broker by
:func:`pullrequest.state.save_body`), its Markdown rendered as GitHub renders tables and
with raw HTML off (a comment is text the lab wrote from untrusted names), and the link to
the comparison of the pull request's base and head on this site."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")


def comment_html(body: str) -> str:
    """The comment's Markdown as HTML (its hidden marker dropped, any other HTML escaped)."""
    return _MARKDOWN.render(_COMMENT.sub("", body))
