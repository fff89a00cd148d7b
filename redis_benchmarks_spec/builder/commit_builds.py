"""redis-server of a commit of a local Redis repository, built once per commit and flags.

The one local build cache, shared by ``rbs bisect --local`` and ``rbs run
--baseline-commit/--comparison-commit``:

* commits are named by a ref or sha the user typed; :func:`commit_ref_problem` holds them to
  a pattern before git sees them, and :meth:`CommitBuilds.resolve` turns them into full shas
  (``git rev-parse --verify --end-of-options <ref>^{commit}``);
* every build happens in **one work tree** (``<dir>/tree``, a clone of the repository checked
  out commit by commit; committed code only, never the repository's uncommitted changes):
  ``git checkout`` rewrites only the files that differ, and ``make`` recompiles only what
  they touch, so a nearby commit costs a few object files and a link. The kept tree's rule
  (:mod:`.kept_tree`, the lab builder's) keeps that honest: the tree records what it last
  built (``<dir>/last-build.json``: the commit and the build settings), and a commit whose
  diff from it touches a build input (``deps/``, a Makefile, ...) or whose settings differ,
  or a tree whose last build did not finish, builds from clean (``git clean -ffdx``), since
  Redis's Makefile never rebuilds ``deps/`` for new sources;
* compiling is the builder's own :func:`.compile.run_make` with the build variant (its
  compiler and ``REDIS_CFLAGS``, in the builder's sandbox), as the lab builds;
* each built redis-server is kept as ``<dir>/bin/<sha>-<variant>-<flags>/redis-server``,
  ``<flags>`` a digest of the make variables, so a variant whose flags change is rebuilt and
  a commit built once (by either command) takes no time the next time.
"""

from __future__ import annotations

import fcntl
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from redis_benchmarks_spec.builder import kept_tree
from redis_benchmarks_spec.builder.artifacts import env_digest
from redis_benchmarks_spec.builder.compile import DEFAULT_TIMEOUT_S, BuildError, run_make
from redis_benchmarks_spec.builder.make_progress import MakeWatch, Report
from redis_benchmarks_spec.builder.source import SourceError, git
from redis_benchmarks_spec.builder.variants import BuildVariant
from redis_benchmarks_spec.events.validation import ref_problem

#: ``rbs bisect --local``'s ``--work-dir`` default, and ``rbs run``'s ``--build-dir``
DEFAULT_BUILD_DIR = Path(".cache") / "bisect"
_HEX = re.compile(r"[0-9a-f]{4,64}")
_SUFFIX = re.compile(r"((?:[~^][0-9]{0,4})*)$")
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# a branch or tag name as people type them; git allows more (';', '$', quotes...), never here
_REF_CHARS = re.compile(r"[A-Za-z0-9._/-]{1,255}")
# Redis's Makefiles: the top one passes every target to src/, which names the server's rule
_DEFAULT_RULE = re.compile(r"^\.DEFAULT:\s*\n\s*cd src && \$\(MAKE\) \$@", re.MULTILINE)
_SERVER_RULE = re.compile(r"^REDIS_SERVER_NAME\s*=\s*redis-server\b", re.MULTILINE)


class CommitBuildError(RuntimeError):
    """A commit could not be resolved or built; the message names it (and the log)."""


def commit_ref_problem(value: str) -> str | None:
    """Why ``value`` is not a commit name we pass to git (None: it is one): a hex sha (4 to
    64 digits), ``HEAD`` or a branch/tag name, optionally followed by ``~N``/``^N``."""
    base = value[:_SUFFIX.search(value).start()]  # type: ignore[union-attr]
    if not base:
        return "is empty"
    if base.startswith("-"):
        return "starts with '-'"
    if _HEX.fullmatch(base) or base == "HEAD":
        return None
    if not _REF_CHARS.fullmatch(base):
        return "only letters, digits and . _ / - are taken in a branch or tag name"
    return ref_problem(base)


@dataclass(frozen=True)
class CommitBuild:
    """The redis-server of one commit, the seconds its build took and whether it was
    already built (then 0 seconds); a build says how (:mod:`.kept_tree`: ``incremental``
    over ``built_over``, or ``clean`` and why)."""

    sha: str
    binary: Path
    seconds: float
    cached: bool
    kind: str = ""
    built_over: str = ""
    reason: str = ""

    def how(self) -> str:
        """"incremental over 155acef51ac7", "clean: the change touches build inputs: ..."."""
        if self.kind == kept_tree.INCREMENTAL:
            return f"incremental over {self.built_over[:12]}"
        return f"{self.kind}: {self.reason}" if self.reason else self.kind


def server_target(tree: Path) -> tuple[str, ...]:
    """``("redis-server",)`` for a Redis tree, whose top Makefile hands any target to
    ``src/`` (``.DEFAULT``) and whose ``src/Makefile`` names the server's rule: only the
    server is kept, and the links of redis-cli and redis-benchmark (``-flto``: tens of
    seconds each on 2 cores) are not waited for. The same objects and link line make the
    same redis-server as ``make all``. Another tree builds its default target."""
    try:
        top = (tree / "Makefile").read_text(errors="replace")
        src = (tree / "src" / "Makefile").read_text(errors="replace")
    except OSError:
        return ()
    redis = _DEFAULT_RULE.search(top) and _SERVER_RULE.search(src)
    return ("redis-server",) if redis else ()


def flags_digest(variant: BuildVariant) -> str:
    """The build flags part of an entry's name: the digest of the make variables the
    builder's artifact keys carry (:func:`.artifacts.env_digest`), one rule for both."""
    return env_digest(variant.make_env())


class CommitBuilds:
    """redis-server per commit of ``repo``, built in one work tree under ``directory``."""

    def __init__(self, repo: Path, variant: BuildVariant, directory: Path,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.repo = repo.absolute()
        self.timeout_s = timeout_s
        self.variant = variant
        self.directory = directory.absolute()
        self.tree = self.directory / "tree"
        self.made = 0  # compiles
        self.shas: set[str] = set()  # commits obtained, compiled or cached

    def resolve(self, ref: str) -> str:
        """The full sha ``ref`` names in the repository (checked before git sees it)."""
        problem = commit_ref_problem(ref)
        if problem is not None:
            raise CommitBuildError(f"{ref!r} is not a commit name: {problem}")
        try:
            found = git("-C", str(self.repo), "rev-parse", "--verify", "--quiet",
                        "--end-of-options", f"{ref}^{{commit}}").strip()
        except SourceError:
            raise CommitBuildError(f"{ref}: no such commit in {self.repo}") from None
        if not _FULL_SHA.fullmatch(found):
            raise CommitBuildError(f"{ref}: git named no commit in {self.repo} ({found!r})")
        return found

    def subject(self, sha: str) -> str:
        """The commit's subject line (its message's first line)."""
        return git("-C", str(self.repo), "log", "-1", "--format=%s", sha).strip()

    def kept(self, sha: str) -> Path:
        """The folder that holds (or will hold) ``sha``'s redis-server."""
        name = f"{sha}-{self.variant.id.replace(':', '_')}-{flags_digest(self.variant)}"
        return self.directory / "bin" / name

    def cached(self, sha: str) -> bool:
        """``sha``'s redis-server is built already (by this command or an earlier one)."""
        return (self.kept(sha) / "redis-server").is_file()

    def log_path(self, sha: str) -> Path:
        return self.directory / f"build-{sha[:12]}.log"

    def server(self, sha: str, progress: Report | None = None) -> CommitBuild:
        """The redis-server of ``sha`` (a full sha), built unless it is cached;
        ``progress(seconds, phase)`` hears what make is doing while it builds
        (:mod:`.make_progress`)."""
        if not _FULL_SHA.fullmatch(sha):
            raise CommitBuildError(f"{sha!r}: not a full commit sha (resolve it first)")
        self.shas.add(sha)
        binary = self.kept(sha) / "redis-server"
        if binary.is_file():
            return CommitBuild(sha, binary, 0.0, True)
        self.directory.mkdir(parents=True, exist_ok=True)
        # one build at a time in the shared tree (a bisection and an A/B may both build)
        with (self.directory / "tree.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if binary.is_file():  # built by the other while this one waited
                return CommitBuild(sha, binary, 0.0, True)
            return self._build(sha, binary, progress)

    def plan(self, sha: str) -> kept_tree.TreePlan:
        """How ``sha`` would build in the tree now: over its last build, or from clean."""
        marker = self.directory / kept_tree.MARKER
        state = None if marker.exists() else kept_tree.load_state(self.directory)
        how = kept_tree.plan(self._tree(), state, sha, kept_tree.settings_of(self.variant))
        if marker.exists():
            return kept_tree.TreePlan(False, how.previous, "the tree's last build did not "
                                                           "finish")
        return how

    def _build(self, sha: str, binary: Path, progress: Report | None) -> CommitBuild:
        how = self.plan(sha)
        tree = self.tree
        # the record is beside the tree (the sandboxed make writes only inside it), gone
        # while make runs: an interrupted build leaves the marker and no record
        (self.directory / kept_tree.STATE_FILE).unlink(missing_ok=True)
        marker = self.directory / kept_tree.MARKER
        marker.write_text(sha)
        git("-C", str(tree), "-c", "advice.detachedHead=false", "checkout", "-q", "--force",
            "--detach", sha, "--")
        if not how.incremental:
            kept_tree.clean(tree)
        start = time.monotonic()
        log = self.log_path(sha)
        watch = MakeWatch(progress, tree) if progress is not None else None
        try:
            run_make(tree, self.variant, log, timeout_s=self.timeout_s, watch=watch,
                     targets=server_target(tree))
        except BuildError as exc:
            raise CommitBuildError(f"build of {sha[:12]} failed: {exc} (log {log})") from exc
        self.made += 1
        binary.parent.mkdir(parents=True, exist_ok=True)
        staged = binary.with_name(".redis-server.partial")
        shutil.copy2(tree / "src" / "redis-server", staged)
        staged.replace(binary)  # a torn copy is never taken for a build
        kept_tree.save_state(self.directory,
                             kept_tree.TreeState(sha, kept_tree.settings_of(self.variant)))
        marker.unlink()
        return CommitBuild(sha, binary, time.monotonic() - start, False, how.kind,
                           how.previous if how.incremental else "", how.reason)

    def _tree(self) -> Path:
        """The work tree, holding every commit of the repository's branches (a tree left by
        an earlier build is reused: its object files are what saves time)."""
        if not (self.tree / ".git").exists():
            self.tree.parent.mkdir(parents=True, exist_ok=True)
            git("clone", "-q", "--no-checkout", "--end-of-options", str(self.repo),
                str(self.tree))
        # every ref of the repository (branches, tags, remote-tracking ones such as
        # origin/feature) and its HEAD: a commit named by any of them is in the tree
        specs = ["+refs/*:refs/rbs-source/*"]
        if self._has_head():  # a detached HEAD is under no ref; an unborn one names nothing
            specs.append("+HEAD:refs/rbs-source/HEAD")
        git("-C", str(self.tree), "fetch", "-q", "--no-tags", "--end-of-options",
            str(self.repo), *specs)
        return self.tree

    def _has_head(self) -> bool:
        try:
            git("-C", str(self.repo), "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
        except SourceError:
            return False
        return True
