"""A kept build tree (``rbs builder --keep-trees``): one source tree per build variant whose
object files the next commit builds over, and the rule that keeps that safe.

Redis's Makefile rebuilds ``deps/`` (jemalloc, hiredis, Lua) only when its build settings
change, never when their sources do: a commit that upgrades jemalloc, built over the tree of
the commit before, links the old jemalloc (measured: the jemalloc 5.3.0 upgrade answered
``mem_allocator:jemalloc-5.2.1``). So the tree records what it last built
(``last-build.json``, beside the source folder the sandboxed build can write, never inside
it): the commit and the build settings (make variables, compiler, build image). The next
commit builds incrementally only when the tree finished a build, the settings are the same
and ``git diff`` of the two commits touches no build input (:data:`.change.BUILD_INPUTS`:
``deps/``, any Makefile, ``*.mk``, ...). Otherwise every untracked and ignored file is
removed first (``git clean -ffdx``, what ``make distclean`` does and more, without running
the tree's own Makefile outside the sandbox) and the commit builds from a clean tree.

The artifact says which it was (``build_kind``, ``built_over``, ``build_reason``).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from redis_benchmarks_spec.builder import verify
from redis_benchmarks_spec.builder.change import build_inputs
from redis_benchmarks_spec.builder.compile import Artifact, BuildError, compiler_version, unpack
from redis_benchmarks_spec.builder.source import (
    ProvenanceError,
    SourceError,
    VerifiedSource,
    git,
)
from redis_benchmarks_spec.builder.unpack import UnpackError
from redis_benchmarks_spec.builder.variants import BuildVariant

log = logging.getLogger(__name__)

STATE_FILE = "last-build.json"
MARKER = "building"
CLEAN = "clean"
INCREMENTAL = "incremental"
MAX_STATE_BYTES = 64 * 1024
DIFF_TIMEOUT_S = 120.0
#: the source tree, and the build of it with its log (they raise SourceError / BuildError)
Fetch = Callable[[Path], VerifiedSource]
Make = Callable[[Path, Path], Artifact]


@dataclass(frozen=True)
class TreeState:
    """What a kept tree last built: the commit and the settings it was built with."""

    sha: str
    settings: dict[str, str]
    # commits built incrementally since the tree's last check against a clean build
    unchecked: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Check:
    """One incremental build in ``every`` is checked against a clean build of its commit,
    made under ``scratch`` (0: none); ``on_mismatch`` is told each mismatch (after it is
    recorded), to mark the points measured on the suspect artifacts."""

    every: int
    scratch: Path
    on_mismatch: Callable[[verify.CheckRecord], None] | None = None


@dataclass(frozen=True)
class TreePlan:
    """How the next commit is built in the tree: over ``previous`` or from clean (why)."""

    incremental: bool
    previous: str = ""
    reason: str = ""

    @property
    def kind(self) -> str:
        return INCREMENTAL if self.incremental else CLEAN


def settings_of(variant: BuildVariant) -> dict[str, str]:
    """Everything besides the source that decides what ``make`` produces."""
    return {**variant.make_env(), "compiler_version": compiler_version(variant),
            "build_image": variant.build_image}


def load_state(tree: Path) -> TreeState | None:
    """The tree's last finished build, or None (none, or the record is unreadable)."""
    path = tree / STATE_FILE
    try:
        if path.stat().st_size > MAX_STATE_BYTES:
            return None
        raw = json.loads(path.read_text())
        return TreeState(str(raw["sha"]), {str(k): str(v) for k, v in raw["settings"].items()},
                         [str(s) for s in raw.get("unchecked", [])][:1000])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save_state(tree: Path, state: TreeState) -> None:
    """Record a finished build (written whole, then renamed)."""
    tmp = tree / f".{STATE_FILE}.tmp"
    tmp.write_text(json.dumps({"sha": state.sha, "settings": state.settings,
                               "unchecked": state.unchecked}, sort_keys=True))
    tmp.replace(tree / STATE_FILE)


def changed_files(repo: Path, before: str, after: str,
                  timeout_s: float = DIFF_TIMEOUT_S) -> list[str]:
    """The paths ``git diff`` of the two commits touches (both sides of a rename)."""
    out = git("-C", str(repo), "diff", "--name-only", "--no-renames", "-z",
              "--end-of-options", before, after, timeout_s=timeout_s)
    return [p for p in out.split("\0") if p]


def plan(repo: Path, state: TreeState | None, sha: str, settings: dict[str, str]) -> TreePlan:
    """Whether ``sha`` may build over the tree's last build (see the module docstring)."""
    if state is None:
        return TreePlan(False, reason="the tree holds no finished build")
    differ = sorted(k for k in set(state.settings) | set(settings)
                    if state.settings.get(k) != settings.get(k))
    if differ:
        return TreePlan(False, state.sha, f"the build settings changed: {', '.join(differ)}")
    if state.sha == sha:
        return TreePlan(True, state.sha)
    try:
        files = changed_files(repo, state.sha, sha)
    except SourceError as exc:
        return TreePlan(False, state.sha, f"cannot diff {state.sha[:12]}..{sha[:12]}: {exc}")
    inputs = build_inputs(files)
    if inputs:
        shown = ", ".join(inputs[:3]) + (f" and {len(inputs) - 3} more" if len(inputs) > 3
                                         else "")
        return TreePlan(False, state.sha, f"the change touches build inputs: {shown}"[:300])
    return TreePlan(True, state.sha)


def clean(repo: Path) -> None:
    """Remove every file git does not track: object files, built deps, make's settings."""
    git("-C", str(repo), "clean", "-ffdxq", timeout_s=DIFF_TIMEOUT_S)


def build_kept(tree: Path, variant: BuildVariant, fetch: Fetch, make: Make,
               check: Check | None = None) -> Artifact:
    """Build in the variant's kept ``tree``: incrementally when :func:`plan` allows, from a
    clean tree otherwise; with ``check``, one incremental build in ``check.every`` is
    checked against a clean build (:func:`_checked`). A tree whose last build did not finish
    (a half-written object file would look up to date), or whose checkout or build fails,
    is built afresh once."""
    marker = tree / MARKER
    state = None
    if marker.exists():
        log.warning("kept tree %s: its last build did not finish; starting afresh", tree)
        shutil.rmtree(tree / "src", ignore_errors=True)
    else:
        state = load_state(tree)
    tree.mkdir(parents=True, exist_ok=True)
    (tree / STATE_FILE).unlink(missing_ok=True)
    marker.write_text(state.sha if state else "")
    settings = settings_of(variant)
    try:
        artifact = _build_once(tree, (state, settings), fetch, make)
    except ProvenanceError:
        raise
    except (SourceError, BuildError) as exc:
        log.warning("kept tree %s: %s; building afresh", tree, str(exc)[:200])
        shutil.rmtree(tree / "src", ignore_errors=True)
        why = f"the build over the kept tree failed: {str(exc)[:200]}"
        artifact = _build_once(tree, (None, settings), fetch, make, why)
    unchecked = [*state.unchecked, artifact.source_sha] if state and \
        artifact.build_kind == INCREMENTAL else []
    if check is not None and check.every > 0 and artifact.build_kind == INCREMENTAL and \
            len(unchecked) >= check.every:
        try:
            artifact = _checked(tree, artifact, (fetch, make), check, unchecked[:-1])
            unchecked = []
        except (SourceError, BuildError, verify.CheckError, UnpackError, KeyError) as exc:
            # unchecked, not wrong: the next incremental build is checked again
            log.warning("kept tree %s: the check of %s could not run: %s", tree,
                        artifact.source_sha[:12], str(exc)[:200])
    save_state(tree, TreeState(artifact.source_sha, settings,
                               unchecked if artifact.build_kind == INCREMENTAL else []))
    marker.unlink()
    return artifact


def _checked(tree: Path, artifact: Artifact, tools: tuple[Fetch, Make], check: Check,
             earlier: list[str]) -> Artifact:
    """``artifact`` when its functions match a clean build of its commit; otherwise the
    clean build, whose tree replaces the kept one (the kept tree is dropped), and the
    mismatch is recorded with the commits built in the tree since its last check."""
    fetch, make = tools
    check.scratch.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"check-{artifact.source_sha[:12]}-",
                                    dir=check.scratch))
    try:
        source = fetch(scratch / "src")
        fresh = make(source.root, scratch / "build.log")
        differ = verify.differing_functions(
            unpack(artifact.data, scratch / "incremental")["redis-server"],
            unpack(fresh.data, scratch / "clean")["redis-server"])
        result = verify.CheckRecord(artifact.source_sha, artifact.built_over, not differ,
                                    differ[:verify.SHOWN], len(differ),
                                    earlier if differ else [], fresh.build_seconds)
        verify.record(tree, result)
        if not differ:
            log.info("kept tree %s: %s", tree, result.describe())
            return replace(artifact, verification=result.describe()[:300])
        log.error("kept tree %s: %s", tree, result.describe())
        shutil.rmtree(tree / "src", ignore_errors=True)
        (scratch / "src").rename(tree / "src")
        if check.on_mismatch is not None:
            check.on_mismatch(result)
        return replace(fresh, source_sha=source.sha, build_kind=CLEAN,
                       build_reason=result.describe()[:300],
                       verification=result.describe()[:300])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _build_once(tree: Path, known: tuple[TreeState | None, dict[str, str]], fetch: Fetch,
                make: Make, forced: str = "") -> Artifact:
    state, settings = known
    source = fetch(tree / "src")
    how = plan(source.root, state, source.sha, settings)
    if forced:
        how = TreePlan(False, how.previous, forced)
    if not how.incremental:
        log.info("kept tree %s: building %s clean: %s", tree, source.sha[:12], how.reason)
        clean(source.root)
    artifact = make(source.root, tree / "build.log")
    return replace(artifact, source_sha=source.sha, build_kind=how.kind,
                   built_over=how.previous if how.incremental else "",
                   build_reason=how.reason)
