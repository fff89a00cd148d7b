"""``rbs builder``: build requests in, one build event (or failure) per variant out.

Life of a request: decode (malformed -> dead letter) -> for each variant not yet published for
this request: reuse the stored artifact for (sha, variant) or fetch the source, compile,
package and store it -> XADD the BuildEvent / BuildFailure together with the "published" mark
(one MULTI/EXEC, so a crash and re-delivery never publishes a variant twice) -> ACK.

A source that is not the commit the request claims (see :mod:`.source`) is never built: the
request is dead-lettered with the claimed and the found sha. Every variant ends named: an
event, a failure ("failed", with the reason), or, for a request dead-lettered (provenance,
delivery limit, an error it could not handle), "dead-lettered" with the reason; the
``on_build_ended`` hook (the pull-request comment) hears of each failure and dead letter.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import redis
from redis.client import Pipeline

from redis_benchmarks_spec.builder import artifacts, kept_tree, signing, verify
from redis_benchmarks_spec.builder import cache as build_cache
from redis_benchmarks_spec.builder import change as change_mod
from redis_benchmarks_spec.builder.compile import Artifact, BuildError, build
from redis_benchmarks_spec.builder.sandbox import Sandbox
from redis_benchmarks_spec.builder.source import (
    GitOptions,
    ProvenanceError,
    SourceError,
    fetch_source,
    git,
    update_mirror,
)
from redis_benchmarks_spec.builder.variants import BuildVariant
from redis_benchmarks_spec.common.paths import absolute
from redis_benchmarks_spec.events.consumer import (
    ConsumerStopped,
    Entry,
    GroupConsumer,
    publish,
)
from redis_benchmarks_spec.events.heartbeat import Heartbeat
from redis_benchmarks_spec.events.messages import (
    DEAD_LETTERED,
    SOURCE_GIT,
    ArtifactRef,
    BuildEvent,
    BuildFailure,
    BuildRequest,
    MalformedMessage,
    Message,
    event_id_for,
)
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import is_cancelled

log = logging.getLogger(__name__)


HEARTBEAT_ROLE = "builders"
# called after a variant ended without a build event: (request, variant, state, reason) with
# state "failed" or "dead-lettered"; it must not raise for an outside service's failure
BuildEnded = Callable[[BuildRequest, str, str, str], None]
# called when a kept tree's check found a mismatch: (request, variant id, the check) whose
# ``suspect`` commits were published from the bad tree; it must not raise either
Mismatched = Callable[[BuildRequest, str, verify.CheckRecord], None]


@dataclass
class BuilderConfig:
    """Everything a builder needs besides its broker connection."""

    names: StreamNames
    consumer: str
    variants: dict[str, BuildVariant]
    default_variants: list[str] = field(default_factory=list)
    work_dir: Path = field(default_factory=lambda: Path(tempfile.gettempdir()) / "rbs-builder")
    block_ms: int = 5000
    idle_claim_ms: int = 600_000
    artifact_ttl_s: int = artifacts.DEFAULT_TTL_S
    build_timeout_s: float = 1800.0
    # local artifact cache (sha + variant): a restarted builder or a fresh broker does not
    # recompile what this host already built
    cache_dir: Path | None = None
    git: GitOptions = field(default_factory=GitOptions)
    s3: artifacts.S3Target | None = None  # artifacts to S3 instead of Redis chunks
    heartbeat_ttl_s: int = 60
    # a request delivered more often (restarts and claims included) is dead-lettered
    max_deliveries: int = 5
    # where pull-request code is compiled (see builder/sandbox.py)
    sandbox: Sandbox = field(default_factory=Sandbox)
    # one source tree per build variant kept across builds here (its object files too), so
    # the next commit recompiles only what changed: a lab of trusted pull requests only, as
    # one request's build output is the next one's input (docs/lab.md)
    keep_trees: Path | None = None
    # one incremental build of a kept tree in N is checked against a clean build of its
    # commit, function by function (builder/verify.py); 0: never
    check_every: int = 0
    # MAC key shared with the agents (see builder/signing.py)
    artifact_key: bytes = field(default_factory=signing.load_key, repr=False)

    def __post_init__(self) -> None:
        # builds run ``make`` and ``git`` in other folders: every folder absolute from here
        self.work_dir = absolute(self.work_dir)
        self.cache_dir = absolute(self.cache_dir) if self.cache_dir is not None else None
        self.keep_trees = absolute(self.keep_trees) if self.keep_trees is not None else None


class Builder:
    """One builder: a consumer of the builders group (see the module docstring)."""

    def __init__(self, client: redis.Redis, config: BuilderConfig,
                 on_build_ended: BuildEnded | None = None,
                 on_mismatch: Mismatched | None = None) -> None:
        self.client = client
        self.config = config
        self.on_build_ended = on_build_ended
        self.on_mismatch = on_mismatch
        self.stop_event = threading.Event()
        self.heartbeat: Heartbeat | None = None
        self.consumer = GroupConsumer(
            client, config.names.build_requests, config.names.builders_group, config.consumer,
            block_ms=config.block_ms, idle_claim_ms=config.idle_claim_ms,
            dead_letter_stream=config.names.dead_letter, max_deliveries=config.max_deliveries)
        self.consumer.on_dead_letter = self._dead_lettered
        # (request, variants it never built, reason): dead-lettered, hook not yet run
        self._ended: list[tuple[BuildRequest, list[str], str]] = []

    def _published_key(self, request_id: str) -> str:
        return self.config.names.published_key(request_id)

    def stop(self) -> None:
        """Finish the current request, then return from :meth:`run` (signal-safe)."""
        self.stop_event.set()
        self.consumer.stop()

    def run(self, stop: threading.Event | None = None, max_requests: int | None = None) -> int:
        """Serve requests until stopped (or ``max_requests`` were handled); how many."""
        stop = stop or self.stop_event
        handled = 0
        with Heartbeat(self.client, self.config.names, HEARTBEAT_ROLE, self.config.consumer,
                       self.config.heartbeat_ttl_s) as heartbeat:
            self.heartbeat = heartbeat
            while not (stop.is_set() or self.stop_event.is_set()):
                if max_requests is not None and handled >= max_requests:
                    break
                heartbeat.info = "idle"
                try:
                    entries = self.consumer.read()
                except ConsumerStopped:
                    break
                finally:
                    self._notify_ended()  # requests read() dead-lettered (delivery limit)
                for entry in entries:
                    heartbeat.set(f"request entry {entry.id}")
                    self._handle_retrying(entry)
                    handled += 1
        return handled

    def _handle_retrying(self, entry: Entry) -> None:
        """:meth:`handle`, again after a lost broker (published variants are not redone)."""
        try:
            self.consumer.call(lambda: self.handle(entry))
        except ConsumerStopped:
            return
        except Exception as exc:  # noqa: BLE001 - the per-entry boundary: poison never loops
            # whatever one entry raises, the entry is parked in the dead-letter stream with
            # its reason (replayable) and the builder serves the next one
            self.consumer.poison(entry, exc)
        finally:
            self._notify_ended()

    def _dead_lettered(self, pipe: Pipeline, fields: Mapping[Any, Any], reason: str) -> None:
        """The consumer's dead-letter hook: note which variants the request never built.

        The dead letter itself (stream, request id, reason) is the request's end state, read
        by ``rbs trigger --wait`` and ``rbs admin dead-letter``; nothing else is written."""
        try:
            request = BuildRequest.decode(fields)
        except MalformedMessage:
            return
        published = {v.decode() for v in self.client.smembers(  # type: ignore[union-attr]
            self._published_key(request.id))}
        missing = [v for v in self._variants(request) if v not in published]
        log.error("request %s (%s): dead-lettered, %d variant(s) not built: %s", request.id,
                  request.sha, len(missing), reason)
        self._ended.append((request, missing, reason))

    def _notify_ended(self) -> None:
        while self._ended:
            request, variants, reason = self._ended.pop(0)
            for variant in variants:
                self._build_ended(request, variant, DEAD_LETTERED, reason)

    def _build_ended(self, request: BuildRequest, variant: str, state: str,
                     reason: str) -> None:
        if self.on_build_ended is None:
            return
        try:
            self.on_build_ended(request, variant, state, reason)
        except Exception:  # a hook after the outcome is published must not touch the entry
            log.exception("request %s %s: the build-ended hook failed", request.id, variant)

    def handle(self, entry: Entry) -> None:
        """Build (or reuse) every variant of one request, publish each outcome, then ACK."""
        request = self.consumer.decode(entry, BuildRequest)
        if request is None:
            return  # dead-lettered
        if is_cancelled(self.client, self.config.names, request.id):
            log.info("request %s was cancelled; acknowledging without building", request.id)
            self.consumer.ack(entry.id)
            return
        done = {v.decode() for v in self.client.smembers(self._published_key(request.id))}  # type: ignore[union-attr]
        self._store_change(request)
        with self.consumer.keepalive(entry.id) as lost:
            for variant_id in self._variants(request):
                if variant_id in done:
                    continue
                try:
                    outcome = self._outcome(request, variant_id)
                except ProvenanceError as exc:
                    # not the commit it claims: nothing of this request is built
                    self.consumer.dead_letter(entry.id, entry.fields, str(exc))
                    return
                if lost.is_set():
                    log.warning("request %s was claimed by another builder; dropping", request.id)
                    return
                self._publish(request, outcome)
                if isinstance(outcome, BuildFailure):
                    self._build_ended(request, variant_id, "failed", outcome.reason)
        self.consumer.ack(entry.id)

    def _store_change(self, request: BuildRequest) -> None:
        """What a pull request or a push changes (base..head), for the agents' suite
        selection, and which base it is of (a push's event names none); a request without
        a base or a git mirror gets none (the agents then run every suite)."""
        if request.base_sha is None or request.source.kind != SOURCE_GIT \
                or self.config.git.mirror_dir is None:
            return
        try:
            remote = self.config.git.remote or request.source.location
            update_mirror(remote, request.base_sha, self.config.git)
            mirror = update_mirror(remote, request.sha, self.config.git)
            text = git("-C", str(mirror), "diff", "-U0", "--no-color", "--end-of-options",
                       request.base_sha, request.sha, timeout_s=self.config.git.timeout_s)
        except SourceError as exc:
            log.warning("request %s: no change record: %s", request.id, exc)
            return
        change_mod.save(self.client, self.config.names.prefix,
                        change_mod.parse_diff(text, request.base_sha, request.sha))
        change_mod.save_base(self.client, self.config.names.prefix, request.id,
                             request.base_sha)

    def _variants(self, request: BuildRequest) -> list[str]:
        return request.build_variants or self.config.default_variants or \
            sorted(self.config.variants)

    def _outcome(self, request: BuildRequest, variant_id: str) -> Message:
        variant = self.config.variants.get(variant_id)
        if variant is None:
            return _failure(request, variant_id, f"unknown build variant {variant_id!r}")
        key = artifacts.artifact_key(self.config.names.prefix, request.sha, variant_id,
                                     variant.make_env())
        signer = artifacts.Signer(self.config.artifact_key, request.sha, variant_id)
        stored = artifacts.existing(self.client, key, signer)
        if stored is not None:
            log.info("reusing artifact %s", key)
            return _event(request, variant, stored.ref, stored.redis_version)
        if self.heartbeat is not None:
            self.heartbeat.set(f"building {request.sha[:12]} {variant_id}")
        try:
            artifact = self._cached(request, variant) or self._build(request, variant)
            ref = artifacts.store(self.client, key, artifact, signer,
                                  self.config.artifact_ttl_s, self.config.s3)
        except BuildError as exc:
            return _failure(request, variant_id, str(exc), exc.log_tail)
        except ProvenanceError:
            raise  # the whole request is refused (dead letter), not one variant failed
        except (SourceError, artifacts.ArtifactError) as exc:
            return _failure(request, variant_id, str(exc))
        return _event(request, variant, ref, artifact.redis_version)

    def _cache_path(self, request: BuildRequest, variant: BuildVariant) -> Path | None:
        if self.config.cache_dir is None:
            return None
        digest = artifacts.env_digest(variant.make_env())
        name = f"{request.sha}-{variant.id.replace(':', '_')}-{digest}.json"
        return self.config.cache_dir / name

    def _cached(self, request: BuildRequest, variant: BuildVariant) -> Artifact | None:
        """The locally cached build, only when its signature verifies (see :mod:`.cache`)."""
        path = self._cache_path(request, variant)
        if path is None:
            return None
        found = build_cache.load(path, build_cache.Identity(
            self.config.artifact_key, request.sha, variant.id))
        if found is not None:
            log.info("reusing locally cached build %s", path)
        return found

    def _save_cache(self, request: BuildRequest, variant: BuildVariant,
                    artifact: Artifact) -> None:
        path = self._cache_path(request, variant)
        if path is not None:
            build_cache.save(path, build_cache.Identity(
                self.config.artifact_key, request.sha, variant.id), artifact)

    def _build(self, request: BuildRequest, variant: BuildVariant) -> Artifact:
        if self.config.keep_trees is not None:
            return self._build_kept(request, variant, self.config.keep_trees)
        self.config.work_dir.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix=f"{request.sha[:12]}-", dir=self.config.work_dir))
        try:
            source = fetch_source(self.client, request, workdir / "src", self.config.git)
            artifact = replace(build(source.root, variant, workdir / "build.log",
                                     self.config.build_timeout_s, self.config.sandbox),
                               source_sha=source.sha)
            self._save_cache(request, variant, artifact)
            return artifact
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _build_kept(self, request: BuildRequest, variant: BuildVariant,
                    root: Path) -> Artifact:
        """Build in the variant's kept tree, incrementally when that is safe
        (:mod:`.kept_tree`), and cache the artifact."""
        tree = root / variant.id.replace(":", "_").replace("/", "_")
        artifact = kept_tree.build_kept(
            tree, variant,
            lambda dest: fetch_source(self.client, request, dest,
                                      replace(self.config.git, reuse_tree=True)),
            lambda source, log: build(source, variant, log,
                                 self.config.build_timeout_s, self.config.sandbox),
            kept_tree.Check(self.config.check_every, self.config.work_dir,
                            lambda check: self._mismatched(request, variant, check)))
        self._save_cache(request, variant, artifact)
        return artifact

    def _mismatched(self, request: BuildRequest, variant: BuildVariant,
                    check: verify.CheckRecord) -> None:
        """The commits built in the bad tree since its last good check lose their stored
        and cached artifacts (a re-run builds them afresh, so its points supersede the
        suspect ones); then the hook marks their points."""
        for sha in check.suspect:
            self.client.delete(artifacts.artifact_key(self.config.names.prefix, sha,
                                                      variant.id, variant.make_env()))
            path = self._cache_path(replace(request, sha=sha), variant)
            if path is not None:
                build_cache.drop(path)
        if check.suspect and self.on_mismatch is not None:
            self.on_mismatch(request, variant.id, check)

    def _publish(self, request: BuildRequest, outcome: Message) -> None:
        names = self.config.names
        stream = names.builds if isinstance(outcome, BuildEvent) else names.build_failures
        variant = outcome.build_variant  # type: ignore[attr-defined]
        pipe = self.client.pipeline(transaction=True)
        publish(pipe, stream, outcome)
        pipe.sadd(self._published_key(request.id), variant)
        pipe.expire(self._published_key(request.id), self.config.artifact_ttl_s)
        pipe.execute()
        log.info("request %s variant %s: published to %s", request.id, variant, stream)


def _event(request: BuildRequest, variant: BuildVariant, ref: ArtifactRef,
           redis_version: str) -> BuildEvent:
    return BuildEvent(
        id=event_id_for(request.id, variant.id), request_id=request.id, org=request.org,
        repo=request.repo, branch=request.branch, sha=request.sha,
        commit_time_ms=request.commit_time_ms, build_variant=variant.id, artifact=ref,
        redis_version=redis_version, version=request.version, pr=request.pr, tag=request.tag,
        env=variant.make_env(), filters=request.filters, platforms=request.platforms,
        triggering_env=request.triggering_env)


def _failure(request: BuildRequest, variant_id: str, reason: str,
             log_tail: str = "") -> BuildFailure:
    return BuildFailure(request_id=request.id, sha=request.sha, build_variant=variant_id,
                        reason=reason, log_tail=log_tail, org=request.org, repo=request.repo,
                        branch=request.branch)
