"""The site's pages as Jinja templates (autoescaped: every value is shown, never obeyed; the
rows of the two long tables are written, escaped, by :mod:`.rows`).
Kept as strings in the package so an installed copy needs no data files; one layout,
no script, no stylesheet or font from anywhere but this page."""

from __future__ import annotations

LAYOUT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }} - rbs lab</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1200px}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;
font-size:13px;text-align:left;vertical-align:top}th{background:#f3f3f3}
.REGRESSION{color:#b00;font-weight:bold}.IMPROVEMENT{color:#070;font-weight:bold}
.UNKNOWN,.BUSY,.SUSPECT{color:#a60}.alert{color:#b00}.note{color:#555}
code{font-size:12px}nav a{margin-right:1em}
</style></head><body>
<nav><a href="/">lab</a></nav>
<h1>{{ title }}</h1>
{% block body %}{% endblock %}
</body></html>"""

INDEX = """{% extends "layout" %}{% block body %}
<p>Datasink {{ url }}: {{ scopes|length }} scope(s); every page of the site is linked below.</p>
{% for s in scopes %}
<h2>{{ s.scope.path }}</h2>
<h3>Tracked branches</h3><ul>
{% for b in s.branches %}<li><a href="{{ s.base }}/branch/{{ b }}">{{ b }}</a>
 ({% for p in s.platforms %}<a href="{{ s.base }}/branch/{{ b }}?platform={{ p }}">{{ p }}</a> {% endfor %}),
 <a href="{{ s.base }}/lab-table/{{ b }}">where Redis spends its instructions</a></li>
{% endfor %}</ul>
<h3>Tests ({{ s.tests|length }})</h3><ul>
{% for t in s.tests %}<li><a href="{{ s.base }}/test/{{ t }}">{{ t }}</a></li>{% endfor %}</ul>
<h3>Alerts</h3><ul>
{% for a in s.alerts %}<li class="alert"><a href="{{ s.base }}/branch/{{ a.branch }}">{{ a.branch }}</a>
 {{ a.sha[:10] }}: {{ a.text }}</li>{% else %}<li>none</li>{% endfor %}</ul>
{% endfor %}
<h2>Compare two commits</h2>
<form action="/compare"><input name="a" placeholder="baseline sha" size="42">
<input name="b" placeholder="comparison sha" size="42">
<input name="platform" placeholder="platform (optional)"><button>compare</button></form>
<p><a href="/pulls">Pull requests</a></p>
{% endblock %}"""

BRANCH = """{% extends "layout" %}{% block body %}
<p>Platforms: <a href="?">all</a> {% for p in v.platforms %}<a href="?platform={{ p }}">{{ p }}</a> {% endfor %}</p>
<h2>Recent commits</h2>
<table><tr><th>commit</th><th>ran (UTC)</th><th>tests</th><th>runs</th><th>why</th><th>alerts and notes</th><th>compare</th></tr>
{% for c in v.commits %}<tr id="c-{{ c.sha }}"><td><code>{{ c.sha[:12] }}</code></td><td>{{ when(c.last_ms) }}</td>
<td>{{ c.tests|length }}: {{ c.tests|sort|join(', ')|truncate(160) }}</td><td>{{ c.runs }}</td>
<td>{{ c.why|join('; ') }}</td><td class="alert">{{ c.marks|join(', ') }}</td>
<td>{% if loop.index < v.commits|length %}<a href="/compare?a={{ v.commits[loop.index].sha }}&amp;b={{ c.sha }}{% if v.platform %}&amp;platform={{ v.platform }}{% endif %}">vs previous</a>{% endif %}</td></tr>
{% else %}<tr><td colspan="7">no runs of this branch{% if v.platform %} on {{ v.platform }}{% endif %}</td></tr>{% endfor %}
</table>
<h2>Alerts, notes and host changes</h2><ul>
{% for x in v.log %}<li class="{{ 'alert' if x.kind == 'alert' else 'note' }}">{{ x.kind }} at <code>{{ x.sha[:12] }}</code>: {{ x.text }}</li>
{% else %}<li>none</li>{% endfor %}</ul>
<h2>Alerts and what maintainers said</h2>
<table><tr><th>commit</th><th>change</th><th>platforms</th><th>triage</th>{% if can_triage %}<th>say</th>{% endif %}</tr>
{% for sha, a in v.alerts|dictsort %}<tr id="alert-{{ sha }}"><td><code>{{ sha[:12] }}</code></td>
<td>{{ a.metric }} {{ pct(a.change_pct) }}</td><td>{{ (a.platforms or [])|join(', ') }}</td>
<td class="triage">{{ v.triages[sha].words if sha in v.triages else 'not triaged' }}</td>
{% if can_triage %}<td><form method="post" action="{{ base }}/triage"><input type="hidden" name="sha" value="{{ sha }}">
<select name="state">{% for s in states %}<option>{{ s }}</option>{% endfor %}</select>
<input name="fixed_by" placeholder="fixing commit (fixed)" size="12"><input name="by" placeholder="your login" size="10">
<input name="token" type="password" placeholder="token" size="10"><button>say</button></form></td>{% endif %}</tr>
{% else %}<tr><td colspan="5">no alert</td></tr>{% endfor %}</table>
<h2>Alert precision (said real against said false, per platform and quarter)</h2>
<table class="precision"><tr><th>platform</th><th>quarter</th><th>alerts</th><th>real</th><th>false alarms</th><th>not triaged</th><th>precision</th></tr>
{% for p in v.precision %}<tr><td>{{ p.platform }}</td><td>{{ p.quarter }}</td><td>{{ p.alerts }}</td><td>{{ p.real }}</td><td>{{ p.false }}</td><td>{{ p.untriaged }}</td>
<td>{{ '%.0f %%'|format(100 * p.precision) if p.precision is not none else '-' }}</td></tr>
{% else %}<tr><td colspan="7">no alert yet</td></tr>{% endfor %}</table>
<h2>Changes the watch is looking at</h2>
<table><tr><th>change at</th><th>before</th><th>state</th><th>placed on</th><th>reason</th></tr>
{% for c in v.candidates %}<tr><td><code>{{ c.after[:12] }}</code></td><td><code>{{ c.before[:12] }}</code></td>
<td>{{ c.state }}</td><td>{{ c.placed_on[:12] }}</td><td>{{ c.reason }}</td></tr>
{% else %}<tr><td colspan="5">none</td></tr>{% endfor %}</table>
{% endblock %}"""

HISTORY = """{% extends "layout" %}{% block body %}
<form>metric <select name="metric">{% for m in metrics %}
<option {% if m == metric %}selected{% endif %}>{{ m }}</option>{% endfor %}</select>
branch <input name="branch" value="{{ branch }}"> <button>show</button></form>
<p>Hover a point for its commit; click it for its run. Red: alerts; grey dashed: host
fingerprint changed; orange dotted: change points.</p>
{% for s in views %}<figure class="plot" data-series="{{ s.key }}">{{ s.svg|safe }}</figure>
<details><summary>{{ s.history.points|length }} points of <code>{{ s.key }}</code></summary>
<table><tr><th>time (UTC)</th><th>value</th><th>commit</th><th>run</th><th>alerts and notes</th></tr>
{{ s.table }}</table></details>
{% else %}<p>No series of this test and metric on {{ branch }}.</p>{% endfor %}
{% endblock %}"""

COMPARE = """{% extends "layout" %}{% block body %}
<form><input name="a" value="{{ req.a }}" size="42"> vs <input name="b" value="{{ req.b }}" size="42">
platform <input name="platform" value="{{ req.platform or '' }}">
metric <input name="metric" value="{{ req.metric }}">
group <select name="group"><option value="">any</option>{% for g in groups %}<option {% if g == req.group %}selected{% endif %}>{{ g }}</option>{% endfor %}</select>
command <select name="command"><option value="">any</option>{% for c in commands %}<option {% if c == req.command %}selected{% endif %}>{{ c }}</option>{% endfor %}</select>
<button>compare</button></form>
<p>Verdicts of the project's engine (the same as <code>rbs compare --baseline-hash {{ req.a }} --comparison-hash {{ req.b }} --metric {{ req.metric }}{% if req.platform %} --platform {{ req.platform }}{% endif %}</code>); this URL can be shared.</p>
{% for pc in platforms %}<h2>{{ pc.platform }}</h2>
<p class="note">{{ pc.report.method }}</p>
<table class="compare"><tr><th>test</th><th>verdict</th><th>change</th><th>interval</th><th>baseline</th><th>comparison</th><th>n</th><th>functions that moved</th><th>reason</th></tr>
{{ pc.rows }}</table>
{% for p in pc.report.problems %}<p class="note">{{ p }}</p>{% endfor %}
{% else %}<p>No platform has points of both commits for {{ req.metric }}.</p>{% endfor %}
{% endblock %}"""

RUN = """{% extends "layout" %}{% block body %}
<table>{% for k, v in facts %}<tr><th>{{ k }}</th><td>{{ v }}</td></tr>{% endfor %}</table>
<h2>Metrics</h2><table>{% for k, v, instrumented in metrics %}<tr><td>{{ k }}</td><td>{{ plain(v) }}{% if instrumented %} <span class="instrumented">(not the server's speed: {{ instrumented_note }})</span>{% endif %}</td></tr>{% endfor %}</table>
<h2>Profiles</h2>{% for name, p in doc.profiles|dictsort %}<h3>{{ name }}: {{ p.status }}</h3>
<p class="note">{{ p.method }} {{ p.reason }}</p>
{% if p.data.top_functions %}<table><tr><th>function</th><th>self per op</th></tr>
{% for f in p.data.top_functions[:20] %}<tr><td><code>{{ f.function }}</code></td><td>{{ f.self_per_op }}</td></tr>{% endfor %}</table>{% endif %}
{% else %}<p>none</p>{% endfor %}
{% for key in pictures %}<h2>{{ key }}</h2><p><a href="/artifact/{{ key }}/{{ run_id|urlencode }}">open it alone</a> (interactive)</p>
<img src="/artifact/{{ key }}/{{ run_id|urlencode }}" alt="{{ key }} of this run" style="max-width:100%">{% endfor %}
<h2>Artifacts on the agent</h2><ul>{% for k, v in doc.paths|dictsort %}<li>{{ k }}: <code>{{ v }}</code></li>{% else %}<li>none</li>{% endfor %}</ul>
{% endblock %}"""

PULLS = """{% extends "layout" %}{% block body %}
{% if not broker %}<p>This site was started without <code>--broker</code>: the comments are kept there.</p>{% endif %}
<table><tr><th>pull request</th><th>title</th><th>head</th><th>base</th><th>last posted (UTC)</th></tr>
{% for c in comments %}<tr><td><a href="/pulls/{{ c.info.org }}/{{ c.info.repo }}/{{ c.info.number }}/{{ c.info.head_sha }}">{{ c.info.org }}/{{ c.info.repo }}#{{ c.info.number }}</a></td>
<td>{{ c.info.title }}</td><td><code>{{ c.info.head_sha[:10] }}</code></td><td>{{ c.info.base_ref }} <code>{{ c.info.base_sha[:10] }}</code></td><td>{{ when(c.at_ms) }}</td></tr>
{% else %}<tr><td colspan="5">none</td></tr>{% endfor %}</table>
{% endblock %}"""

PULL = """{% extends "layout" %}{% block body %}
<p>{{ c.info.title }} {% if c.info.html_url.startswith('https://') %}(<a href="{{ c.info.html_url }}">on GitHub</a>){% endif %}</p>
{% if c.info.base_sha %}<p><a href="/compare?a={{ c.info.base_sha }}&amp;b={{ c.info.head_sha }}">Compare base {{ c.info.base_sha[:10] }} and head {{ c.info.head_sha[:10] }}</a> with every test's verdict.</p>{% endif %}
<p class="note">The comment as the lab last posted it ({{ when(c.at_ms) }} UTC):</p>
<article class="comment">{{ html|safe }}</article>
{% endblock %}"""

LAB_TABLE = """{% extends "layout" %}{% block body %}{{ html|safe }}{% endblock %}"""

ERROR = """{% extends "layout" %}{% block body %}<p>{{ message }}</p>{% endblock %}"""

PAGES = {"layout": LAYOUT, "index": INDEX, "branch": BRANCH, "history": HISTORY,
         "compare": COMPARE, "run": RUN, "pulls": PULLS, "pull": PULL, "lab_table": LAB_TABLE,
         "error": ERROR}
