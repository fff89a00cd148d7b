"""The paired comparison of a round of ``--until-decided``: repeated p-values and repeated
confidence intervals (``analysis.sequential``) in place of fixed-sample ones, then the same
Benjamini-Hochberg step and verdict rules as :func:`compare.compare_paired`."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from redis_benchmarks_spec.analysis.compare import (
    CompareOptions,
    ComparisonReport,
    PendingRow,
    base_row,
    fill_shift,
    finish_report,
    least_spread,
    noise_prior,
)
from redis_benchmarks_spec.analysis.paired import NoisePrior, best_paired_shift, log_ratios
from redis_benchmarks_spec.analysis.sequential import (
    SequentialPlan,
    nominal_level,
    repeated_p,
    z_from_p,
)
from redis_benchmarks_spec.analysis.verdict import SinglePoint

SEQUENTIAL_METHOD = ("group-sequential design, Lan-DeMets {spending} alpha spending over "
                     "{max_pairs} pairs: repeated p-values (BH across tests) and repeated "
                     "confidence intervals of the per-pair log-ratio method of each row")


def _measure(test: str, pairs: Sequence[tuple[float, float]], looks: Sequence[int],
             plan: SequentialPlan, options: CompareOptions,
             prior: NoisePrior | None = None) -> PendingRow:
    baseline, comparison = [b for b, _ in pairs], [c for _, c in pairs]
    row = base_row(test, baseline, comparison, options, paired=True)
    looks = [n for n in looks if n >= 2]
    if not looks:
        return PendingRow(replace(row, reason="fewer than 2 complete pairs"), False)
    least = least_spread(test, options)
    prior = noise_prior(test, options, prior)
    own = options.kind_of(test).min_pairs
    try:
        p_values = [repeated_p(z_from_p(best_paired_shift(pairs[:n], prior=prior, least=least,
                                                          min_pairs=own).p_value),
                               plan.fractions(looks[:j + 1]), plan.spending)
                    for j, n in enumerate(looks)]
        level = nominal_level(plan.fractions(looks), plan.alpha, plan.spending)
        shift = best_paired_shift(pairs[:looks[-1]], 1.0 - level, prior, least, own)
    except ValueError as exc:
        return PendingRow(replace(row, reason=str(exc)), False)
    row = replace(fill_shift(row, shift, options), p_value=min(p_values),
                  method=f"{shift.method}; repeated {1 - level:.4%} interval at look "
                         f"{len(looks)}")
    ratios = log_ratios(pairs[:looks[-1]])
    log_sd = float(ratios.std(ddof=1) / math.sqrt(2)) if ratios.size >= 2 else None
    single = SinglePoint("1 pair only") if len(pairs) == 1 else None
    return PendingRow(row, True, single, log_sd)


def compare_sequential(pairs: dict[str, list[tuple[float, float]]],
                       looks: dict[str, list[int]], plan: SequentialPlan,
                       options: CompareOptions | None = None,
                       problems: list[str] | None = None,
                       priors: dict[str, NoisePrior] | None = None) -> ComparisonReport:
    """Every test's pairs and the pair counts at which it was looked at (increasing, the last
    one the current look), judged with the design's repeated p-values and intervals."""
    options = options or CompareOptions(alpha=plan.alpha)
    for test, counts in looks.items():
        if list(counts) != sorted(set(counts)) or (counts and counts[-1] > plan.max_pairs):
            raise ValueError(f"{test}: looks must increase and stay within "
                             f"{plan.max_pairs} pairs: {counts}")
    priors = priors or {}
    pending = [_measure(t, list(p), looks.get(t, [len(p)]), plan, options, priors.get(t))
               for t, p in sorted(pairs.items())]
    method = SEQUENTIAL_METHOD.format(spending=plan.spending, max_pairs=plan.max_pairs)
    return finish_report(pending, options, problems or [], method)


#: the record of an ``--until-decided`` session, beside its ``baseline/`` and ``comparison/``
SEQUENTIAL_RECORD = "sequential.json"


@dataclass(frozen=True)
class SequentialRecord:
    """What a later ``rbs report`` needs to judge the session's pairs as the run did: the
    design, the metric it was run on, and per test the looks taken and why it stopped."""

    plan: SequentialPlan
    metric: str
    looks: dict[str, list[int]]
    stopped: dict[str, str]
    pairs: dict[str, int]
    metric_why: str = ""  # why ``--metric auto`` chose ``metric`` ("" when it was asked for)
    # pairs run but left out because other processes disturbed them (analysis.session_runs)
    disturbed: dict[str, int] = field(default_factory=dict)

    def line(self, test: str) -> str:
        """How far a test went and why it stopped, as the run's reason column says it."""
        looks = ", ".join(str(n) for n in self.looks.get(test, []))
        return f"{self.pairs.get(test, 0)} pairs (looks at {looks}): {self.stopped.get(test, '')}"

    def to_json(self) -> str:
        tests = {t: {"pairs": self.pairs.get(t, 0), "looks": self.looks[t],
                     "stopped": self.stopped.get(t, ""),
                     "disturbed": self.disturbed.get(t, 0)} for t in sorted(self.looks)}
        design = {"max_pairs": self.plan.max_pairs, "alpha": self.plan.alpha,
                  "spending": self.plan.spending}
        doc = {"design": design, "metric": self.metric, "tests": tests}
        if self.metric_why:
            doc["metric_why"] = self.metric_why
        return json.dumps(doc, indent=2)

    @classmethod
    def from_json(cls, text: str) -> SequentialRecord:
        """Raises ValueError naming what is wrong (the file sits in a results folder)."""
        try:
            doc = json.loads(text)
            design = doc["design"]
            plan = SequentialPlan(int(design["max_pairs"]), float(design["alpha"]),
                                  str(design["spending"]))
            looks = {str(t): [int(n) for n in v["looks"]] for t, v in doc["tests"].items()}
            stopped = {str(t): str(v["stopped"]) for t, v in doc["tests"].items()}
            pairs = {str(t): int(v["pairs"]) for t, v in doc["tests"].items()}
            disturbed = {str(t): int(v["disturbed"]) for t, v in doc["tests"].items()
                         if v.get("disturbed")}
            return cls(plan, str(doc["metric"]), looks, stopped, pairs,
                       str(doc.get("metric_why", "")), disturbed)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"not a record of rbs run --until-decided ({exc})") from None


def compare_recorded(pairs: dict[str, list[tuple[float, float]]], record: SequentialRecord,
                     options: CompareOptions,
                     priors: dict[str, NoisePrior] | None = None) -> ComparisonReport:
    """The session's pairs judged at the looks the run took: the same table as the run's."""
    looks = {t: [n for n in record.looks.get(t, []) if n <= len(p)] or [len(p)]
             for t, p in pairs.items()}
    report = compare_sequential(pairs, looks, record.plan, options, priors=priors)
    method = f"{report.method}; metric {record.metric}: {record.metric_why}" \
        if record.metric_why else report.method
    rows = [replace(row, reason=f"{row.reason}; {record.line(row.test)}")
            if row.test in record.stopped else row for row in report.rows]
    return replace(report, rows=tuple(rows), method=method)
