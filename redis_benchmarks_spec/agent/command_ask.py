"""What a ``/rbs benchmark`` comment asked beyond its build request (api/commands.py):
``pairs`` caps the pull request's interleaved A/B at that many pairs per test (its rounds
shrunk to fit), ``profilers`` are the profilers its runs use instead of the platform's."""

from __future__ import annotations

from dataclasses import replace

from redis_benchmarks_spec.agent.platform_config import UntilDecidedBudget
from redis_benchmarks_spec.api.commands import Ask
from redis_benchmarks_spec.runner.config import SessionConfig


def applied(session: SessionConfig, budget: UntilDecidedBudget | None,
            ask: Ask | None) -> tuple[SessionConfig, UntilDecidedBudget | None]:
    """The session and A/B budget of an event whose request carries ``ask`` (unchanged when
    it asks nothing; a platform with no A/B budget gets none from a command)."""
    if ask is None:
        return session, budget
    if ask.profilers:
        window = session.window
        session = replace(session, window=replace(window, profilers=replace(
            window.profilers, names=tuple(ask.profilers))))
    if ask.pairs and budget is not None:
        pairs = ask.pairs
        budget = replace(budget, max_repetitions=pairs,
                         first_round=min(budget.first_round, pairs),
                         round_repetitions=min(budget.round_repetitions, pairs))
    return session, budget
