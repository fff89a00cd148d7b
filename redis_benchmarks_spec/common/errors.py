"""The package's error root, and the one kind of failure that ends a test, not a session.

A test fails for any of its own reasons (its server would not start, its tool failed, its
container, dataset, preload, cluster or replication set-up failed): :class:`TestRunError`.
The session records that test as failed and goes on with the next one; only an interrupt or
a bug in the package stops it (``runner/execute.py``). Every error the package raises on
purpose derives from :class:`RbsError`, so a daemon or the CLI can print any of them in one
line.
"""

from __future__ import annotations


class RbsError(Exception):
    """An error this package raises on purpose (its message names what is at fault)."""


class TestRunError(RbsError, RuntimeError):
    """One test could not run or finish; the session goes on with the next test."""

    __test__ = False  # not a pytest test class, whatever imports it
