"""What an A/B session folder holds beside its runs, as text: the noise priors and the
host's noise its verdicts were judged with, so a later ``rbs report``/``rbs compare`` of the
folder judges as the run did, and the names of its sides when it was given them (two
commits and their subjects, ``sides.json``), so a later report names them as the run did. One definition each: the session's owner
(:mod:`runner.ab_files`) writes them, :mod:`inputs.session_folder` reads them back. The
record of an ``--until-decided`` session is :mod:`analysis.sequential_compare`'s
(``sequential.json``).
"""

from __future__ import annotations

import json

from redis_benchmarks_spec.analysis.paired import NoisePrior
from redis_benchmarks_spec.analysis.verdict import HostNoise

PRIORS_FILE = "noise-priors.json"
HOST_NOISE_FILE = "host-noise.json"
#: what each side is, when the session named it (two commits and their subjects)
SIDES_FILE = "sides.json"
SIDES_VERSION = 1

#: metric -> test label -> the noise known before the session (analysis.noise)
SessionPriors = dict[str, dict[str, NoisePrior]]


def priors_to_json(priors: SessionPriors) -> str:
    """The noise a session judged with (``noise-priors.json``)."""
    doc = {metric: {test: {"sd": p.sd, "df": p.df, "source": p.source}
                    for test, p in tests.items()} for metric, tests in priors.items()}
    return json.dumps(doc, indent=1)


def priors_from_json(text: str) -> SessionPriors:
    """What :func:`priors_to_json` wrote; ValueError saying what is wrong."""
    try:
        raw = json.loads(text)
        return {str(m): {str(t): NoisePrior(float(p["sd"]), int(p["df"]), str(p["source"]))
                         for t, p in tests.items()} for m, tests in raw.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a noise-priors file ({exc})") from None


def host_noise_to_json(noise: dict[str, HostNoise]) -> str:
    """The host's noise a session judged its timed metrics with (``host-noise.json``)."""
    doc = {metric: {"floors": n.floors, "spreads": n.spreads, "note": n.note}
           for metric, n in noise.items()}
    return json.dumps(doc, indent=1)


def host_noise_from_json(text: str) -> dict[str, HostNoise]:
    """What :func:`host_noise_to_json` wrote; ValueError saying what is wrong."""
    try:
        raw = json.loads(text)
        return {str(m): HostNoise({str(t): float(v) for t, v in n["floors"].items()},
                                  {str(t): float(v) for t, v in n["spreads"].items()},
                                  str(n["note"])) for m, n in raw.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a host-noise file ({exc})") from None


def sides_to_json(labels: tuple[str, str]) -> str:
    """The report header's names of the two sides (``sides.json``)."""
    return json.dumps({"version": SIDES_VERSION, "baseline": labels[0],
                       "comparison": labels[1]}, indent=1)


def sides_from_json(text: str) -> tuple[str, str]:
    """What :func:`sides_to_json` wrote; ValueError saying what is wrong."""
    try:
        raw = json.loads(text)
        if raw.get("version") != SIDES_VERSION:
            raise ValueError(f"version {raw.get('version')!r}, not {SIDES_VERSION}")
        return str(raw["baseline"])[:500], str(raw["comparison"])[:500]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a sides file ({exc})") from None
