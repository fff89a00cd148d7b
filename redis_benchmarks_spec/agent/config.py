"""What an agent is configured with, and the session a build event's suites run in."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.agent.code_selection import SelectionPolicy
from redis_benchmarks_spec.agent.platform_config import CalibrationConfig, UntilDecidedBudget
from redis_benchmarks_spec.builder import signing
from redis_benchmarks_spec.common.paths import inside
from redis_benchmarks_spec.events.messages import BuildEvent
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import GitInfo, RunContext
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.catalog import SuiteFilter
from redis_benchmarks_spec.telemetry.fingerprint import fingerprint_id, host_fingerprint
from redis_benchmarks_spec.telemetry.window import WindowOptions


@dataclass
class AgentConfig:
    """Everything an agent needs besides its broker connection and datasink push."""

    names: StreamNames
    platform: str
    consumer: str
    suites_dir: Path
    work_dir: Path
    results_dir: Path
    suite_filter: SuiteFilter = field(default_factory=SuiteFilter)
    # how this platform runs tests (tools, test time, pinning, launcher, profilers, client
    # host, thresholds...): each event's session is this one with the event's build, context
    # and folder (:func:`event_session`), so no run option is dropped on the way
    run: SessionConfig | None = None
    block_ms: int = 5000
    idle_claim_ms: int = 300_000
    heartbeat_ttl_s: int = 60
    # an entry delivered more often (restarts and claims included) is dead-lettered
    max_deliveries: int = 5
    # MAC key shared with the builders (see builder/signing.py)
    artifact_key: bytes = field(default_factory=signing.load_key, repr=False)
    # the platform's A/B budget for pull-request events (see agent/platform_config.py)
    until_decided: UntilDecidedBudget | None = None
    # calibration A/A sessions of this platform (agent/calibration.py); None: none
    calibration: CalibrationConfig | None = None
    # the platform config's ``selection`` (pull requests' budget, pushes' sentinels)
    selection: SelectionPolicy = field(default_factory=SelectionPolicy)

    @property
    def session(self) -> SessionConfig:
        """The platform's run options (:attr:`run`, or the defaults)."""
        return self.run if self.run is not None else \
            SessionConfig(tools=ToolPaths(), results_dir=self.results_dir)


def event_session(config: AgentConfig, event: BuildEvent, redis_server: Path,
                  build: dict[str, Any] | None = None) -> SessionConfig:
    """The session a build event's suites run in: its build's redis-server, its context
    (commit, platform, variant, how the artifact was built: ``build``, see
    :func:`builder.artifacts.provenance`) and this agent's pinning, profilers and results
    folder."""
    git = GitInfo(org=event.org, repo=event.repo, branch=event.branch,
                  version=event.version, hash=event.sha,
                  commit_time_ms=event.commit_time_ms, pr=event.pr)
    context = RunContext(triggering_env=event.triggering_env, platform=config.platform,
                         build_variant=event.build_variant, git=git,
                         host_fingerprint=fingerprint_id(host_fingerprint()),
                         build=dict(build or {}))
    base = config.session
    return replace(
        base, tools=replace(base.tools, redis_server=str(redis_server)),
        results_dir=inside(config.results_dir, event.id.replace(":", "_")), context=context,
        topology_filter=config.suite_filter.topology).with_catalogue()


def calibration_session(config: AgentConfig) -> SessionConfig:
    """The session calibration A/A sessions run in: this agent's pinning and tools, results
    under ``results_dir/calibration``, no build context (nothing of it is pushed)."""
    context = RunContext(triggering_env="calibration", platform=config.platform)
    return replace(config.session, results_dir=inside(config.results_dir, "calibration"),
                   context=context, topology_filter=config.suite_filter.topology,
                   window=WindowOptions())
