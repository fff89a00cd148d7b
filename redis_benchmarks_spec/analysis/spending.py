"""The alpha-spending functions' names (:mod:`analysis.sequential` computes their
boundaries): what ``--spending`` and platform configs accept, read without numpy."""

from __future__ import annotations

OBRIEN_FLEMING = "obrien-fleming"
POCOCK = "pocock"
SPENDING_FUNCTIONS = (OBRIEN_FLEMING, POCOCK)
