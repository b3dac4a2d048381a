"""One program's panel in the report: provenance, named score, code, diff from its parent, Verdict,
feedback, derivation (when the proposal has one), negative items in force, the system prompt and
prompt its model was sent, and the response.

Everything a candidate or a model wrote is untrusted text: it is HTML-escaped here, and no panel
holds a script. Long texts are cut at ``MAX_TEXT`` characters with a note saying how much was left
out (``evolve lineage --program ID`` prints the whole program).
"""

from __future__ import annotations

from html import escape

from evaluators.bounds_check import describe
from evaluators.verdict import Verdict
from evolve.store.run_view import ProgramRecord, RunView
from evolve.report.figures.verdicts import outcome
from evolve.report.lineage_tree import panel_id
from evolve.report.timeline import rejection_reasons
from evolve.store.lineage import code_diff
from search.database import named_score

MAX_TEXT = 30_000


def clip(text: str | None) -> str:
    """``text`` escaped for HTML, cut at MAX_TEXT characters with a note."""
    if text is None:
        return ""
    if len(text) <= MAX_TEXT:
        return escape(text)
    return escape(text[:MAX_TEXT]) + f"\n<span class='cut'>[... {len(text) - MAX_TEXT} more characters not shown]</span>"


def _yes_no(x) -> str:
    return "not judged" if x is None else ("yes" if x else "no")


def _table(rows: list[tuple[str, str]], cls: str = "kv") -> str:
    """A two-column table; values are HTML already."""
    return f"<table class='{cls}'>" + "".join(f"<tr><th>{escape(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def _link(run: RunView, pid: str, shown: set[str]) -> str:
    if pid in shown:
        return f"<a href='#{panel_id(pid)}' onclick=\"openProgram('{panel_id(pid)}')\">{escape(pid)}</a>"
    return escape(pid) + ("" if pid in run.programs else " (not in this run)")


def _fold(title: str, body: str, open_: bool = False) -> str:
    return f"<details{' open' if open_ else ''}><summary>{escape(title)}</summary>{body}</details>"


def score_table(score) -> str:
    named = named_score(score)
    if named is None:
        return escape(str(list(score))) + " (not a program score)"
    answer = named.answer or "none (wrong or not judged)"
    if named.answer in ("bounds", "approximation"):
        answer += f", quality {named.quality:.4f}"
    return _table([("status", escape(named.status)), ("values right (numerical pass)", _yes_no(named.numerical_pass)),
                   ("answer kind", escape(answer)),
                   ("largest n verified", str(named.largest_n_verified)),
                   ("growth", escape(named.growth_text().removeprefix("growth "))),
                   ("physics passed", _yes_no(named.physics)), ("class consistent", _yes_no(named.class_consistent)),
                   ("complexity honest", _yes_no(named.complexity_honest)),
                   ("code length (chars)", str(named.code_length)), ("fitness", f"{named.fitness:.4f}")], "kv score")


def verdict_html(v: Verdict) -> str:
    num = v.numerical
    rungs = "".join(
        f"<tr class='{'ok' if r.passed else 'bad'}'><td>{escape(r.stage)}</td><td>{r.n}</td>"
        f"<td>{'-' if r.rel_err is None else f'{r.rel_err:.2e}'}</td><td>{r.seconds:.3g}</td>"
        f"<td>{'yes' if r.passed else 'no'}</td></tr>" for r in num.rungs)
    physics = "".join(f"<tr class='{'ok' if c.passed else 'bad'}'><td>{escape(c.name)}</td>"
                      f"<td>{'passed' if c.passed else 'FAILED'}</td><td>{escape(c.detail)}</td></tr>"
                      for c in v.physics.checks)
    reasons = rejection_reasons(v)
    parts = [_table([
        ("verdict", f"<b>{escape(v.verdict)}</b>" + (f" ({escape('; '.join(reasons))})" if reasons else "")),
        ("numerical", f"passed {_yes_no(num.passed)}; {num.probes} probes, {num.failed} failed; max rel err "
                      f"{'-' if num.max_rel_err is None else f'{num.max_rel_err:.2e}'}; largest n verified "
                      f"{num.largest_n_verified}"),
        *([("answer", escape(describe(v.answer)))] if v.answer is not None else []),
        ("complexity", f"claimed {escape(str(v.complexity.claimed))}; measured {escape(str(v.complexity.measured))}; "
                       f"honest {_yes_no(v.complexity.honest)}"),
        ("class", f"claimed {escape(str(v.class_.claimed))}; consistent {_yes_no(v.class_.consistent)}"
                  + "".join(f"<br>- {escape(r)}" for r in v.class_.reasons)),
        ("physics", f"passed {_yes_no(v.physics.passed)}"),
        ("sandbox violations", escape("; ".join(v.sandbox.violations)) or "none")])]
    if rungs:
        parts.append("<table class='grid'><tr><th>stage</th><th>n</th><th>rel. error</th><th>seconds</th>"
                     f"<th>passed</th></tr>{rungs}</table>")
    if physics:
        parts.append(f"<table class='grid'><tr><th>physics check</th><th></th><th>detail</th></tr>{physics}</table>")
    return "".join(parts)


def derivation_html(steps: list[dict]) -> str:
    rows = []
    for i, s in enumerate(steps, 1):
        check = s.get("check") or {}
        passed = check.get("passed")
        state = "-" if "check" not in s else "not checked" if passed is None else "passed" if passed else "FAILED"
        detail = ", ".join(f"{k} {check[k]:.1e}" for k in ("in_process", "sandbox")
                           if isinstance(check.get(k), (int, float)))
        if check.get("detail"):
            detail += (": " if detail else "") + str(check["detail"])
        rows.append(f"<tr class='{'bad' if passed is False else 'ok'}'><td>{i}</td><td>{escape(str(s.get('action', '')))}</td>"
                    f"<td>{escape(str(s.get('summary', '')))}</td><td>{escape(str(s.get('params', '')))}</td>"
                    f"<td>{escape(state)}</td><td>{escape(detail)}</td></tr>")
    return ("<table class='grid'><tr><th>#</th><th>action</th><th>what it did</th><th>parameters</th><th>check</th>"
            f"<th>detail</th></tr>{''.join(rows)}</table>")


def _pre(text: str | None, cls: str = "") -> str:
    return f"<pre class='{cls}'>{clip(text)}</pre>"


def _diff(text: str) -> str:
    lines = clip(text).split("\n")
    cls = {"+": "add", "-": "del", "@": "hunk"}
    return "<pre class='diff'>" + "\n".join(
        f"<span class='{cls.get(ln[:1], '')}'>{ln}</span>" if ln[:1] in cls and not ln.startswith(("+++", "---"))
        else ln for ln in lines) + "</pre>"


def program_panel(run: RunView, rec: ProgramRecord, rank: int | None, shown: set[str]) -> str:
    """The collapsible panel of one program (``shown``: the ids that have panels, for links)."""
    c, ev = rec.candidate, rec.evaluation
    named = named_score(ev.score) if ev is not None else None
    head = [f"#{rank}" if rank else "ancestor", escape(c.id), escape(outcome(rec))]
    if named is not None:
        head.append(f"largest n verified {named.largest_n_verified}, fitness {named.fitness:.4f}")
    head.append(escape(f"{c.proposer}/{c.model}" if c.model else str(c.proposer)))
    parents = ", ".join(_link(run, p, shown) for p in c.parent_ids) or "none (written from scratch)"
    meta = [("proposer / model", escape(f"{c.proposer} / {c.model or '-'}")),
            ("generation / slot / niche", f"{rec.generation} / {rec.slot} / {rec.island}"),
            ("parent, then inspirations", parents),
            ("claims", escape(f"class {c.tractable_class}, {c.complexity_O}, confidence {c.confidence}")),
            ("proposed", f"{rec.proposed_s:.1f} s after the run was created")]
    if c.justification:
        meta.append(("justification", clip(c.justification)))
    if rec.extra:
        meta.append(("strategy", escape(", ".join(f"{k} {v}" for k, v in sorted(rec.extra.items())
                                                  if k != "derivation"))))
    if c.prompt_id:
        meta.append(("prompt id", escape(c.prompt_id)))
    cost = f"{c.tokens_in} in / {c.tokens_out} out tokens, ${c.cost_usd:.4f}"
    if c.latency_s is not None:
        cost += f", {c.latency_s:.2f} s"
    meta.append(("cost", cost))
    if ev is not None:
        meta.append(("evaluation", escape(f"{ev.seconds:.1f} s on {ev.worker or '?'}")))
    if rec.duplicate_of is not None:
        meta.append(("duplicate of", _link(run, rec.duplicate_of, shown) if rec.duplicate_of else "an earlier program"))
    if c.parse_error:
        meta.append(("no code", escape(f"{c.error_kind}: ") + clip(c.parse_error)))
    body = [_table(meta)]
    if ev is not None:
        body.append(_fold("Score (named)", score_table(ev.score), open_=True))
    body.append(_fold("Code", _pre(c.code, "code") if c.code else "<p>no code</p>"))
    parent = run.programs.get(rec.parent) if rec.parent else None
    if parent is not None:
        diff = code_diff(parent.candidate.code, c.code, parent.id, c.id)
        body.append(_fold(f"Diff from parent {parent.id}", _diff(diff) if diff else "<p>same code as its parent</p>"))
    if ev is not None:
        body.append(_fold("Verdict", verdict_html(ev.verdict)))
        body.append(_fold("Feedback", _pre(ev.verdict.feedback)))
    if rec.derivation:
        body.append(_fold(f"Derivation ({len(rec.derivation)} steps)", derivation_html(rec.derivation)))
    if rec.negative:
        body.append(_fold(f"Negative-prompt items in force ({len(rec.negative)})",
                          "<ul>" + "".join(f"<li>{clip(x)}</li>" for x in rec.negative) + "</ul>"))
    system = run.system_prompt(rec)
    if system is not None:
        body.append(_fold("System prompt", _pre(system)))
    if c.prompt is not None:
        body.append(_fold("Prompt", _pre(c.prompt)))
    if c.response is not None:
        body.append(_fold("Response", _pre(c.response)))
    if c.notes:
        body.append(_fold("Notes", "<ul>" + "".join(f"<li>{clip(x)}</li>" for x in c.notes) + "</ul>"))
    return (f"<details class='program {escape(outcome(rec)).replace(' ', '-')}' id='{panel_id(c.id)}'>"
            f"<summary>{' &middot; '.join(head)}</summary><div class='body'>{''.join(body)}</div></details>")
