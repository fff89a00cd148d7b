"""The options of ``rbs run``'s interleaved A/B and what they ask for, apart from the A/B
itself (:mod:`cli.ab`): a plain ``rbs run`` registers them without importing the analysis."""

from __future__ import annotations

import argparse
from pathlib import Path

from redis_benchmarks_spec.analysis.spending import OBRIEN_FLEMING, SPENDING_FUNCTIONS
from redis_benchmarks_spec.cli.floor_help import FLOOR_HELP
from redis_benchmarks_spec.cli.run_commits import wants_commits
from redis_benchmarks_spec.common import metrics
from redis_benchmarks_spec.common.paths import absolute_program
from redis_benchmarks_spec.runner.metric_choice import AUTO, THROUGHPUT_METRIC
from redis_benchmarks_spec.runner.session import SessionConfig

DEFAULT_REPETITIONS = 10
#: first round of --until-decided: the t interval needs 5 pairs, 6 leave a spare
DEFAULT_FIRST_ROUND = 6
DEFAULT_MAX_PAIRS = 40
MEMORY_REPETITIONS = 5


def add_ab_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("interleaved A/B (both servers required)")
    g.add_argument("--baseline-server", default=None, type=absolute_program, help="redis-server binary of side A")
    g.add_argument("--comparison-server", default=None, type=absolute_program, help="redis-server binary of side B")
    g.add_argument("--baseline-server-args", default="",
                   help="extra redis-server arguments for side A only")
    g.add_argument("--comparison-server-args", default="",
                   help="extra redis-server arguments for side B only (e.g. a deliberate "
                        "slowdown for calibration)")
    g.add_argument("--repetitions", type=int, default=None,
                   help=f"A/B: runs per side per suite (default {DEFAULT_REPETITIONS}; with "
                        "--profilers instructions the pairs a count decides from, 3; "
                        f"the first round with --until-decided, default {DEFAULT_FIRST_ROUND}); "
                        "without A/B: results per test, in rounds of the whole selection")
    g.add_argument("--metric", default=None,
                   help=f"metric the verdicts are on, or '{AUTO}': the server's CPU time per "
                        "command when the client was the bottleneck, else Ops/sec (default "
                        f"{AUTO} with --until-decided, {THROUGHPUT_METRIC} otherwise)")
    g.add_argument("--noise-floor", type=float, default=None,
                   help="percent (default: this host's calibrated floor of the test for a "
                        f"timed metric, else {FLOOR_HELP})")
    g.add_argument("--alpha", type=float, default=0.05,
                   help="significance level of the verdicts (default 0.05)")
    g.add_argument("--instructions-noise-floor", type=float, default=None, metavar="PCT",
                   help="noise floor of instructions per op with --profilers instructions "
                        f"(default {metrics.COUNT_FLOOR_PCT:g}, the catalogue's)")
    g.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when a test is a REGRESSION (or left BUSY)")
    g.add_argument("--until-decided", action="store_true",
                   help="after the first --repetitions pairs, give the tests still UNKNOWN more "
                        "pairs in rounds until decided (group-sequential design, "
                        "docs/statistics.md; on a shared machine runs of --test-time 10 or "
                        "more decide about 4x faster than 2 s runs)")
    g.add_argument("--max-repetitions", type=int, default=None,
                   help="most pairs per test: --until-decided stops there (default 40); "
                        "without it, disturbed pairs of a timed metric are replaced up to "
                        "this many (default twice --repetitions)")
    g.add_argument("--round-repetitions", type=int, default=4,
                   help="--until-decided: pairs added per round")
    g.add_argument("--time-budget", default=None, metavar="DURATION",
                   help="--until-decided: start no pair after this long (e.g. 900, 30m, 2h)")
    g.add_argument("--spending", choices=list(SPENDING_FUNCTIONS), default=OBRIEN_FLEMING,
                   help="--until-decided: Lan-DeMets alpha-spending function")
    g.add_argument("--html", type=Path, metavar="FILE",
                   help="also write a self-contained HTML report with plots to FILE")
    g.add_argument("--noise-file", type=Path, default=None, metavar="FILE",
                   help="each test's recorded A/A noise, pooled with the session's own pairs "
                        "so quiet metrics decide with few pairs; an A/A session (the same "
                        "binary on both sides) adds to it (default $RBS_NOISE_FILE or "
                        "~/.local/share/redis-benchmarks-spec/noise.json)")
    g.add_argument("--no-noise-prior", action="store_true",
                   help="judge on the session's own pairs only (neither read nor record)")


def wants_ab(args: argparse.Namespace) -> bool:
    """Two servers, or two commits to build (``cli.run_commits``)."""
    return bool(args.baseline_server or args.comparison_server or wants_commits(args))


def ab_repetitions(args: argparse.Namespace, config: SessionConfig) -> int:
    """Pairs per test of an A/B session's first (or only) round: ``--repetitions``, else
    the default of its kind (fixed, ``--until-decided``, memory only, counted)."""
    default = DEFAULT_FIRST_ROUND if args.until_decided else DEFAULT_REPETITIONS
    if config.memory_only:  # deterministic: the t interval's 5 pairs decide
        default = MEMORY_REPETITIONS
    elif counted(config) and not args.until_decided:
        default = counted_pairs(default)
    return int(args.repetitions or default)


def counted(config: SessionConfig) -> bool:
    """Every run of the session counts instructions (``--profilers instructions``): the
    count decides, and the timed figures of a server under callgrind do not."""
    return "instructions" in config.window.profilers.names


def counted_pairs(most: int) -> int:
    """The pairs a counted A/B runs by default: those from which the count's kind decides
    (``runner.adaptive.deterministic_rounds``, the rule of ``--until-decided``'s first round
    and of the lab's PR A/B): 3, since counts ship a prior (``common.metrics``), not 10."""
    from redis_benchmarks_spec.runner.adaptive import deterministic_rounds  # the analysis

    entry = metrics.metric(metrics.INSTRUCTIONS_METRIC)
    first, _ = deterministic_rounds(entry.name, most, most, priors=entry.prior_sd > 0)
    return first


def max_pairs(args: argparse.Namespace, repetitions: int, counts: bool = False) -> int:
    """Most pairs per test: ``--max-repetitions``, the design's with ``--until-decided``,
    else twice the repetitions (disturbed timed pairs are replaced) or, when the runs
    count instructions (``counts``: every pair kept), the repetitions."""
    if args.max_repetitions is not None:
        return int(args.max_repetitions)
    if args.until_decided:
        return DEFAULT_MAX_PAIRS
    return repetitions if counts else 2 * repetitions



def parse_duration(text: str | None) -> float | None:
    """``900``, ``90s``, ``30m``, ``2h`` as seconds (validated by ``run_checks``)."""
    if text is None:
        return None
    text = text.strip().lower()
    scale = {"s": 1, "m": 60, "h": 3600}.get(text[-1:], 0)
    number = text[:-1] if scale else text
    return float(number) * (scale or 1)
