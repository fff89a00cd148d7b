"""``rbs bisect --local``: find the first commit of ``good..bad`` that makes a test slower.

1. The commits of the range (``git rev-list --ancestry-path good..bad``), oldest first.
2. Builds in **one work tree** (a ``git clone`` of the repository, checked out
   commit by commit): ``make`` only recompiles what a checkout changed, so after the first
   full build a midpoint costs one or two object files and a link. Each built redis-server
   is kept under ``<work>/bin/<sha>/`` and reused by later runs (the build cache). Compiling
   is :func:`builder.compile.run_make` with the build variant, in the builder's sandbox.
3. Measurements are interleaved A/B pairs against the good build (:func:`runner.ab.run_ab`),
   judged by the paired comparison. The bad end must be a REGRESSION against good (checked
   with at least 6 pairs, where the paired t interval can decide); its
   change is the effect being hunted. A midpoint is *bad* when its change is beyond half of
   that effect (closer to bad than to good): a classification of a known effect, which
   needs far fewer pairs than proving each midpoint significant.
4. Binary search until the first bad commit is found, or ``max_builds`` / the time budget
   is spent (then the range still holding it is reported).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from redis_benchmarks_spec.analysis.compare import REGRESSION, CompareOptions, compare_paired
from redis_benchmarks_spec.analysis.paired import MIN_T_PAIRS
from redis_benchmarks_spec.builder.compile import BuildError, run_make
from redis_benchmarks_spec.builder.variants import BuildVariant
from redis_benchmarks_spec.runner.ab import ABConfig, Side, paired_samples, run_ab
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.suite import Suite

GIT_TIMEOUT_S = 300
#: pairs of the bad-vs-good check (the paired t interval decides from 5, one spare)
BAD_END_PAIRS = MIN_T_PAIRS + 1


class BisectError(RuntimeError):
    """The bisection cannot go on (git, a build, or no regression between the ends)."""


@dataclass
class BisectPlan:
    repo: Path
    good: str
    bad: str
    suite: Suite
    variant: BuildVariant
    work_dir: Path
    session: SessionConfig
    options: CompareOptions
    repetitions: int = 4
    max_builds: int = 12
    time_budget_s: float | None = None


@dataclass
class Probe:
    """One measured commit: its change against good and whether it counts as bad."""

    sha: str
    change_pct: float | None
    verdict: str
    bad: bool
    build_s: float


@dataclass
class BisectOutcome:
    commits: list[str]
    first_bad: str | None
    probes: list[Probe] = field(default_factory=list)
    builds: int = 0
    reason: str = ""
    range_left: tuple[str, str] | None = None  # (last known good, first known bad)


def _git(repo: Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BisectError(f"git {' '.join(args)}: {exc}") from exc
    if proc.returncode != 0:
        raise BisectError(f"git {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout.strip()


def commit_range(repo: Path, good: str, bad: str) -> tuple[str, list[str]]:
    """The full sha of good, and the commits after it up to bad (oldest first)."""
    good_sha = _git(repo, "rev-parse", "--verify", "--end-of-options", f"{good}^{{commit}}")
    bad_sha = _git(repo, "rev-parse", "--verify", "--end-of-options", f"{bad}^{{commit}}")
    commits = _git(repo, "rev-list", "--reverse", "--ancestry-path",
                   f"{good_sha}..{bad_sha}").split()
    if not commits:
        raise BisectError(f"{bad} is not a descendant of {good}: nothing to bisect")
    return good_sha, commits


class Builds:
    """redis-server per commit, built in one work tree and cached by sha."""

    def __init__(self, plan: BisectPlan) -> None:
        self.plan = plan
        self.tree = plan.work_dir / "tree"
        self.made = 0

    def _tree(self) -> Path:
        """The work tree, holding every commit of the repository's branches (a work tree
        left by an earlier bisection is reused: its object files are what saves time)."""
        if not (self.tree / ".git").exists():
            self.tree.parent.mkdir(parents=True, exist_ok=True)
            _git(self.plan.repo, "clone", "-q", "--no-checkout",
                 str(self.plan.repo.resolve()), str(self.tree))
        _git(self.tree, "fetch", "-q", "--no-tags", str(self.plan.repo.resolve()),
             "+refs/heads/*:refs/remotes/bisect/*")
        return self.tree

    def server(self, sha: str) -> tuple[Path, float]:
        """The redis-server of ``sha`` and the seconds its build took (0 when cached)."""
        kept = self.plan.work_dir / "bin" / f"{sha}-{self.plan.variant.id.replace(':', '_')}"
        binary = kept / "redis-server"
        if binary.exists():
            return binary, 0.0
        tree = self._tree()
        _git(tree, "-c", "advice.detachedHead=false", "checkout", "-q", "--force", sha)
        start = time.monotonic()
        log = self.plan.work_dir / f"build-{sha[:12]}.log"
        try:
            run_make(tree, self.plan.variant, log)
        except BuildError as exc:
            raise BisectError(f"build of {sha[:12]} failed: {exc} ({log})") from exc
        self.made += 1
        kept.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / "src" / "redis-server", binary)
        return binary, time.monotonic() - start


def measure(plan: BisectPlan, good_server: Path, candidate: Path, sha: str,
            pairs_wanted: int | None = None) -> tuple[float | None, str]:
    """Change (%) of ``candidate`` against good over interleaved pairs, and its verdict."""
    session = replace(plan.session, results_dir=plan.session.results_dir / sha[:12])
    config = ABConfig(session=session, baseline=Side("baseline", str(good_server)),
                      comparison=Side("comparison", str(candidate)),
                      repetitions=pairs_wanted or plan.repetitions)
    runs = run_ab(config, [plan.suite])
    pairs = paired_samples(runs, plan.options.metric).get(plan.suite.name, [])
    if len(pairs) < 2:
        failed = [r.result.reason for r in runs if not r.result.ok]
        raise BisectError(f"{sha[:12]}: fewer than 2 complete pairs ({'; '.join(failed)})")
    row = compare_paired({plan.suite.name: pairs}, plan.options).rows[0]
    return row.change_pct, row.verdict


def bisect(plan: BisectPlan, say: Callable[[str], None] = lambda _: None) -> BisectOutcome:
    """Binary search of ``good..bad`` for the first commit that carries the regression."""
    good_sha, commits = commit_range(plan.repo, plan.good, plan.bad)
    deadline = None if plan.time_budget_s is None else time.monotonic() + plan.time_budget_s
    builds = Builds(plan)
    outcome = BisectOutcome(commits, None)
    good_server, _ = builds.server(good_sha)
    bad_server, secs = builds.server(commits[-1])
    # the bad end must be shown a REGRESSION: enough pairs for the t interval to decide
    effect, verdict = measure(plan, good_server, bad_server, commits[-1],
                              max(plan.repetitions, BAD_END_PAIRS))
    outcome.probes.append(Probe(commits[-1], effect, verdict, verdict == REGRESSION, secs))
    say(f"bad {commits[-1][:12]} vs good {good_sha[:12]}: {effect:+.1f}% ({verdict})")
    if verdict != REGRESSION or effect is None:
        outcome.reason = f"bad is not a REGRESSION against good ({verdict}): nothing to hunt"
        outcome.builds = builds.made
        return outcome
    lo, hi = -1, len(commits) - 1  # commits[lo] is good (lo=-1: the good end), commits[hi] bad
    while hi - lo > 1:
        if builds.made >= plan.max_builds or (deadline and time.monotonic() >= deadline):
            outcome.reason = "budget spent"
            break
        mid = (lo + hi) // 2
        server, secs = builds.server(commits[mid])
        change, verdict = measure(plan, good_server, server, commits[mid])
        is_bad = change is not None and change <= effect / 2
        outcome.probes.append(Probe(commits[mid], change, verdict, is_bad, secs))
        say(f"{commits[mid][:12]}: {change:+.1f}% vs good -> {'bad' if is_bad else 'good'}")
        lo, hi = (lo, mid) if is_bad else (mid, hi)
    outcome.builds = builds.made
    outcome.range_left = (good_sha if lo < 0 else commits[lo], commits[hi])
    if hi - lo == 1:
        outcome.first_bad = commits[hi]
        outcome.reason = outcome.reason or "found"
    return outcome
