"""``rbs run --baseline-commit A --comparison-commit B --source REPO``: two commits of a
Redis repository built (``builder.commit_builds``: the builder's compile step and build
variant, the build cache ``rbs bisect --local`` uses) and then A/B'd as two servers.

B may be any commit name (a sha, a branch, ``HEAD``); A defaults to the merge base of B with
``unstable`` (``--base-branch``), the question "is my branch faster than unstable?". Each
side's results are filed under its commit (the documents' git hash), and the report's
header names both commits and their subjects.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from redis_benchmarks_spec.builder.commit_builds import (
    DEFAULT_BUILD_DIR,
    CommitBuildError,
    CommitBuilds,
    commit_ref_problem,
)
from redis_benchmarks_spec.builder.source import SourceError, git
from redis_benchmarks_spec.builder.variants import BuildVariant, load_variants
from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.results.document import GitInfo

#: the build variant commits are built with unless --build-variant names one
DEFAULT_COMMIT_VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"


def add_commit_args(p: argparse.ArgumentParser) -> None:
    """The flags of an A/B of two commits."""
    g = p.add_argument_group("A/B of two commits (built here, cached by commit and flags)")
    g.add_argument("--baseline-commit", metavar="REF",
                   help="side A: a sha, branch or tag of --source (default: the merge base "
                        "of --comparison-commit with --base-branch)")
    g.add_argument("--comparison-commit", metavar="REF",
                   help="side B: a sha, branch, tag or HEAD of --source")
    g.add_argument("--source", type=Path, metavar="REPO",
                   help="the git repository of Redis both commits are built from")
    g.add_argument("--base-branch", default="unstable", metavar="BRANCH",
                   help="the branch whose merge base is --baseline-commit's default "
                        "(default unstable)")
    g.add_argument("--build-dir", type=Path, default=None, metavar="DIR",
                   help=f"work tree and built binaries (default {DEFAULT_BUILD_DIR}, the one "
                        "rbs bisect --local builds in: a commit either built is reused)")


@dataclass(frozen=True)
class CommitSide:
    """One side of an A/B of commits: what the user named, the commit and its subject."""

    name: str
    ref: str
    sha: str
    subject: str

    def label(self) -> str:
        """The report header's name of the side."""
        named = "" if self.sha.startswith(self.ref) else f" ({self.ref})"
        return f"commit {self.sha[:12]}{named} {self.subject}"


@dataclass(frozen=True)
class CommitPlan:
    """Both commits resolved, and where they are built."""

    builds: CommitBuilds
    baseline: CommitSide
    comparison: CommitSide


def wants_commits(args: argparse.Namespace) -> bool:
    return bool(args.baseline_commit or args.comparison_commit or args.source)


def _ref(flag: str, value: str) -> str:
    problem = commit_ref_problem(value)
    if problem is not None:
        raise UsageError(f"{flag} {value!r}", f"not a commit name: {problem}",
                         "give a sha, a branch or tag name, or HEAD (e.g. HEAD~1)")
    return value


def _variant(args: argparse.Namespace) -> BuildVariant:
    wanted = DEFAULT_COMMIT_VARIANT if args.build_variant == "local" else args.build_variant
    variant = load_variants().get(wanted)
    if variant is None:
        raise UsageError(f"--build-variant {wanted}", "unknown build variant",
                         f"known: {', '.join(sorted(load_variants()))}")
    args.build_variant = variant.id  # the results are filed under the variant they were
    return variant


def check_commit_args(args: argparse.Namespace) -> None:
    """The flags, before anything is resolved or built; raises :class:`UsageError`."""
    if args.baseline_server or args.comparison_server:
        raise UsageError("--baseline-commit/--comparison-commit",
                         "give two commits or two servers, not both")
    if not args.comparison_commit:
        raise UsageError("--comparison-commit", "missing: the commit to compare",
                         "e.g. --comparison-commit HEAD --source ~/src/redis")
    if args.source is None:
        raise UsageError("--source", "missing: the git repository the commits are built from",
                         "e.g. --source ~/src/redis")
    _ref("--comparison-commit", args.comparison_commit)
    if args.baseline_commit:
        _ref("--baseline-commit", args.baseline_commit)
    checks.ref("--base-branch", args.base_branch)
    args.source = checks.existing_dir("--source", args.source).absolute()


def _side(builds: CommitBuilds, name: str, flag: str, ref: str) -> CommitSide:
    try:
        sha = builds.resolve(ref)
    except CommitBuildError as exc:
        raise UsageError(f"{flag} {ref}", str(exc).split(": ", 1)[-1]) from None
    return CommitSide(name, ref, sha, builds.subject(sha))


def _branch_tip(builds: CommitBuilds, branch: str) -> str:
    """The branch, or its ``origin/`` copy in a clone that never checked it out."""
    try:
        return builds.resolve(branch)
    except CommitBuildError:
        return builds.resolve(f"origin/{branch}")


def _merge_base(builds: CommitBuilds, branch: str, sha: str) -> str:
    try:
        base = _branch_tip(builds, branch)
        return git("-C", str(builds.repo), "merge-base", "--end-of-options", base, sha).strip()
    except (CommitBuildError, SourceError) as exc:
        raise UsageError("--baseline-commit", f"not given, and no merge base of {branch} "
                         f"and the comparison commit: {exc}",
                         "give --baseline-commit, or --base-branch") from None


def resolve_commits(args: argparse.Namespace) -> CommitPlan:
    """Both commits as full shas with their subjects (A: the merge base by default)."""
    check_commit_args(args)
    try:
        git("-C", str(args.source), "rev-parse", "--git-dir")
    except SourceError:
        raise UsageError(f"--source {args.source}", "not a git repository") from None
    build_dir = (args.build_dir or DEFAULT_BUILD_DIR).absolute()
    builds = CommitBuilds(args.source, _variant(args), build_dir)
    comparison = _side(builds, "comparison", "--comparison-commit", args.comparison_commit)
    base_ref = args.baseline_commit or _merge_base(builds, args.base_branch, comparison.sha)
    baseline = _side(builds, "baseline", "--baseline-commit", base_ref)
    if not args.baseline_commit:
        baseline = CommitSide("baseline", f"merge base with {args.base_branch}", baseline.sha,
                              baseline.subject)
    return CommitPlan(builds, baseline, comparison)


def say_plan(console: Console, plan: CommitPlan) -> None:
    """A line per side: its commit, subject and whether it is built already."""
    for side in (plan.baseline, plan.comparison):
        state = "cached" if plan.builds.cached(side.sha) else "to build"
        console.print(escape(f"{side.name}: {side.label()} [{state}, "
                             f"{plan.builds.variant.id}]"), highlight=False, soft_wrap=True)
    if plan.baseline.sha == plan.comparison.sha:
        why = " (it is on that branch: its merge base is itself)" \
            if plan.baseline.ref.startswith("merge base") else ""
        console.print(f"[yellow]both sides are commit {plan.comparison.sha[:12]}{escape(why)}: "
                      "an A/A session; to measure the commit's own change give "
                      f"--baseline-commit {plan.comparison.sha[:12]}^[/]", highlight=False,
                      soft_wrap=True)


def build_commits(console: Console, args: argparse.Namespace, plan: CommitPlan) -> None:
    """Build both sides and point the A/B at the binaries: a line when a build starts, what
    make is doing while it runs (its phase when that changes, and at least every 10 s, with
    the seconds so far: ``builder.make_progress``), and the build's duration and kind."""
    for side in (plan.baseline, plan.comparison):
        def progress(seconds: float, phase: str, side: CommitSide = side) -> None:
            console.print(f"  {side.name} {side.sha[:12]}: {seconds:.0f} s, "
                          f"{escape(phase)}", highlight=False, soft_wrap=True)

        if not plan.builds.cached(side.sha):
            console.print(f"building {side.name} {side.sha[:12]} ({escape(side.subject)}) "
                          f"with {escape(plan.builds.variant.id)} in "
                          f"{escape(str(plan.builds.tree))} ...", highlight=False,
                          soft_wrap=True)
        try:
            built = plan.builds.server(side.sha, progress)
        except (CommitBuildError, SourceError) as exc:
            raise UsageError(f"--{side.name}-commit {side.ref}", str(exc)) from None
        took = "cached, no build" if built.cached else \
            f"built in {built.seconds:.0f} s ({built.how()})"
        console.print(f"{side.name} {side.sha[:12]}: {escape(took)}: {escape(str(built.binary))}",
                      highlight=False, soft_wrap=True)
        setattr(args, f"{side.name}_server", str(built.binary))


def side_git(args: argparse.Namespace, side: CommitSide) -> GitInfo:
    """The git info a side's results are filed under: its commit (never a branch: a local
    build of a ref is no point of that branch's history)."""
    return GitInfo(org=args.github_org, repo=args.github_repo, hash=side.sha)


def ab_sides(args: argparse.Namespace) -> tuple[tuple[GitInfo, GitInfo],
                                                 tuple[str, str]] | None:
    """(each side's git info, each side's report label) of an A/B of commits, else None."""
    plan: CommitPlan | None = getattr(args, "commit_plan", None)
    if plan is None:
        return None
    return ((side_git(args, plan.baseline), side_git(args, plan.comparison)),
            (plan.baseline.label(), plan.comparison.label()))
