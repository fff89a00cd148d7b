"""What a kept tree saves, and what its proof costs, on real Redis history.

From the kept tree of d659c734 (the jemalloc 5.3.0 upgrade's base, built and cached by
``tests/test_kept_tree_history.py`` in ``.cache/kept-tree-history/``; built here when
missing), build ``--commit`` (default d659c734^, whose diff touches only ``src/sentinel.c``)
in a copy of that tree with the builder's kept-tree code and a check of every incremental
build (``builder/kept_tree.py``, ``builder/verify.py``): the incremental build's seconds,
the check's clean build's seconds and whether every function matched. Also ``--clean-over``
(default the upgrade 0897c8af): a commit whose change touches build inputs, built clean in
the kept tree. Heavy (2-3 builds of Redis): run under ``flock /tmp/rbs-heavy.lock``.

    .venv/bin/python benchmarks/kept_tree_cost.py [--commit SHA] [--clean-over SHA|'']
        [--no-check]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import redis_history as history
from redis_benchmarks_spec.builder import kept_tree, verify
from redis_benchmarks_spec.builder.compile import Artifact, build
from redis_benchmarks_spec.builder.source import GitOptions, fetch_source
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.events.messages import SOURCE_GIT, BuildRequest, SourceLocation

BASE = "d659c734569be4ed32a270bac2527ccf35418c43"
VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"
SNAPSHOT = history.CACHE.parent / "kept-tree-history" / BASE


def _one(tree: Path, sha: str, scratch: Path, check_every: int) -> tuple[Artifact, float]:
    """``sha`` built in the kept ``tree``; the artifact and the wall seconds of it all."""
    variant = load_variants()[VARIANT]
    request = BuildRequest(org="redis", repo="redis", branch="unstable", sha=sha,
                           commit_time_ms=1, source=SourceLocation(
                               SOURCE_GIT, str(history.bare_repo())))
    start = time.monotonic()
    artifact = kept_tree.build_kept(
        tree, variant,
        lambda dest: fetch_source(None, request, dest,  # type: ignore[arg-type]
                                  GitOptions(reuse_tree=True)),
        lambda root, log: build(root, variant, log, 1800),
        kept_tree.Check(check_every, scratch))
    return artifact, time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commit", default=None, help="default: d659c734^ (src/sentinel.c)")
    parser.add_argument("--clean-over", default="0897c8af", help="'' to skip")
    parser.add_argument("--no-check", action="store_true",
                        help="do not check the incremental build against a clean one")
    args = parser.parse_args()
    repo = history.bare_repo()
    commit = history.full_sha(repo, args.commit or BASE + "^")
    with tempfile.TemporaryDirectory(prefix="kept-cost-") as tmp:
        trees, scratch = Path(tmp) / "trees", Path(tmp) / "scratch"
        tree = trees / VARIANT.replace(":", "_")
        base = SNAPSHOT
        if not (SNAPSHOT / kept_tree.STATE_FILE).is_file():
            base = Path(tmp) / "base"
            _one(base, BASE, scratch, 0)
        out = {}
        runs = [("code-only", commit)]
        if args.clean_over:
            runs.append(("build-inputs", history.full_sha(repo, args.clean_over)))
        for name, sha in runs:
            shutil.rmtree(tree, ignore_errors=True)
            shutil.copytree(base, tree, symlinks=True)
            artifact, wall = _one(tree, sha, scratch, 0 if args.no_check else 1)
            checks = verify.read(tree)
            out[name] = {"sha": sha, "build_kind": artifact.build_kind,
                         "build_seconds": round(artifact.build_seconds, 1),
                         "wall_seconds": round(wall, 1), "reason": artifact.build_reason,
                         "check": checks[-1].describe() if checks else "",
                         "check_clean_seconds": round(checks[-1].clean_seconds, 1)
                         if checks else None}
            print(json.dumps({name: out[name]}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
