"""Profilers run on every server process for the measured window of a test.

One small interface (:class:`~.base.Profiler`); :func:`~.registry.make_profilers` builds the
ones named by ``--profilers``. See docs/profiling.md.
"""
