"""`evolve lineage`, `evolve show`, `evolve runs`: look inside run directories (read-only).

They read the journal without taking its append lock, so they work on live runs as well.
"""

from __future__ import annotations

import sys
from pathlib import Path

from evolve.commands.common import UsageError, path_text, print_json


def register(sub) -> None:
    p = sub.add_parser(
        "lineage", help="show the ancestry of a run's best program (or of one program)",
        description=("Print the ancestry of the run's best program (highest score), root first: for each "
                     "ancestor its id, proposer and model, claimed class and complexity, verdict, largest "
                     "verified n, the chain of derivation steps it was rendered from (action, parameters, "
                     "check) when it has one, and the unified diff of its code from its parent."))
    p.add_argument("run_dir", metavar="RUN_DIR", type=path_text, help="a run directory, e.g. runs/20261130-061502-p04-3f9a")
    p.add_argument("--program", metavar="ID", help="follow this program instead of the best one "
                                                   "(a unique prefix of its id is enough; `evolve show` lists ids)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(run=run_lineage)

    p = sub.add_parser(
        "show", help="summarise a run: best programs, counts, cost, time",
        description=("Summarise a run from its journal: the best programs, proposal and evaluation counts, "
                     "failed proposals (and the reason when every proposal failed), cost in USD and tokens, wall "
                     "time and proposals per minute, per-proposer counts, the class labels claimed, the derivation "
                     "chain of each best program rendered from one (one line), and per model "
                     "(--json: under `models`): proposals, parse failures, diffs that did not apply, provider "
                     "failures, evaluations, accepted, tokens in/out, USD, mean latency, preflight."))
    p.add_argument("run_dir", metavar="RUN_DIR", type=path_text, help="a run directory, e.g. runs/20261130-061502-p04-3f9a")
    p.add_argument("--top", type=int, default=5, metavar="K", help="how many best programs to list (default 5)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(run=run_show)

    p = sub.add_parser(
        "runs", help="list run directories, newest first",
        description=("List the run directories under ROOT, newest first, with task, state and counts. "
                     "Broken directories are listed as 'unreadable' with the reason; 'stale' means the run "
                     "claims to be running but no process holds its journal (it can be resumed)."))
    p.add_argument("--root", default="runs", metavar="ROOT", type=path_text, help="directory holding runs (default: runs)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(run=run_runs)


def _guard(fn, *args, **kwargs):
    """Run ``fn``; problems with the run directory become one-line usage errors."""
    from evolve.store.journal import JournalError  # lazy
    from evolve.store.lineage import LineageError  # lazy
    from evolve.store.run_store import RunStoreError  # lazy

    try:
        return fn(*args, **kwargs)
    except (RunStoreError, JournalError, LineageError) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{exc.filename or ''}: {exc.strerror or exc}") from None


def _yes_no(x) -> str:
    return "-" if x is None else ("yes" if x else "no")


def _one_line(a) -> str:
    err = f", max rel err {a.max_rel_err:.1e}" if isinstance(a.max_rel_err, float) else ""
    named = a.named_score
    score = named.text() if named is not None else ("not evaluated" if a.score is None else f"{a.score} (not a program score)")
    return (f"class {a.class_claim or '-'}, {a.complexity_claim or 'O(?)'}; verdict {a.verdict or 'not evaluated'}{err}\n"
            f"      score: {score}")


def run_lineage(args) -> int:
    from evolve.store.lineage import RunIndex, ancestry  # lazy
    from search.derivation.feedback import step_lines  # lazy

    idx = _guard(RunIndex, args.run_dir)
    if idx.damage:
        print(f"evolve lineage: warning: {idx.damage}", file=sys.stderr, flush=True)
    chain = _guard(ancestry, idx, args.program)
    if args.json:
        print_json({"run_dir": str(args.run_dir), "program": chain[-1].id,
                    "ancestors": [a.to_dict() for a in chain]})
        return 0
    what = "" if args.program else " (the best program)"
    print(f"Ancestry of {chain[-1].id}{what} in {args.run_dir}, root first ({len(chain)} generation"
          f"{'s' if len(chain) != 1 else ''}):")
    for i, a in enumerate(chain, 1):
        print(f"\n[{i}/{len(chain)}] {a.id}  {a.proposer or '?'} / {a.model or '-'}")
        print(f"      {_one_line(a)}")
        if a.derivation:
            print(f"      derivation: {a.chain}")
            for line in step_lines(a.derivation):
                print(f"        {line}")
        if not a.parent_ids:
            print("      root (no parent)")
        elif not a.parent_in_run:
            print(f"      parent {a.parent_ids[0]} is not in this run")
        elif not a.diff_from_parent:
            print(f"      same code as parent {a.parent_ids[0]}")
        else:
            extra = f" (inspirations: {', '.join(a.parent_ids[1:])})" if len(a.parent_ids) > 1 else ""
            print(f"      diff from {a.parent_ids[0]}{extra}:")
            for line in a.diff_from_parent.splitlines():
                print(f"        {line}")
    return 0


def _duration(s: float) -> str:
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h {m:02d}m {sec:02d}s" if h else f"{m}m {sec:02d}s"


def _counts(d: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))) or "-"


def run_show(args) -> int:
    if args.top < 0:
        raise UsageError("--top must be >= 0")
    from evolve.store.lineage import RunIndex, run_summary, top_programs  # lazy

    idx = _guard(RunIndex, args.run_dir)
    summary = _guard(run_summary, idx)
    top = _guard(top_programs, idx, args.top)
    if args.json:
        print_json({**summary, "top": [p.to_dict() for p in top]})
        return 0
    s = summary
    state = s["status"] or "unknown"
    if s["finished"]:
        state += f" ({s['finished']})"
    print(f"Run {s['run_id']}  task {s['task']}  {state}  created {s['created']}")
    failed = f" ({s['failed_proposals']} without code: {_counts(s['failed_by_kind'])})" if s["failed_proposals"] else ""
    print(f"proposals {s['proposals']}{failed}; evaluations {s['evaluations']}: "
          f"accepted {s['accepted']}, rejected {s['rejected']}")
    ppm = "-" if s["proposals_per_minute"] is None else f"{s['proposals_per_minute']:.2f}"
    print(f"cost ${s['cost_usd']:.4f}; tokens {s['tokens_in']} in / {s['tokens_out']} out; "
          f"wall {_duration(s['wall_s'])}; proposals per minute {ppm}")
    print(f"proposers: {_counts(s['by_proposer'])}; models: {_counts(s['by_model'])}")
    if s.get("failure"):
        print(f"FAILED: {s['failure']['line']}")
    print(f"class labels claimed: {', '.join(s['class_labels']) or '-'}")
    print(f"promotions {s['promotions']}, migrations {s['migrations']}, resets {s['resets']}, "
          f"snapshots {s['snapshots']}" + ("; the journal has a torn last record (dropped)" if s["journal_torn"] else ""))
    _print_models(s.get("models") or {})
    if s.get("journal_damage"):
        print(f"JOURNAL DAMAGED: {s['journal_damage']}")
    if s.get("journal_lost_records"):
        print(f"the journal LOST {s['journal_lost_records']} record(s) the run had written (more than a torn tail); "
              "this summary lacks them, and `evolve resume` refuses the run unless --accept-loss")
    if not top:
        print("no evaluated programs yet")
        return 0
    if top[0].named_score is not None:
        print(f"best {top[0].id}: {top[0].named_score.text()}")
    print(f"\nbest programs (of {s['evaluations']} evaluated):")
    print(f"  {'#':>2}  {'id':14}  {'status':8}  {'n verified':>10}  {'growth':22}  "
          f"{'physics/class/honest':20}  {'length':>6}  {'fitness':7}  {'class':20}  {'claim O':12}  source")
    for i, p in enumerate(top, 1):
        sc = p.named_score
        n = "-" if p.largest_n_verified is None else str(p.largest_n_verified)
        status, growth, checks, length, fit = (
            (sc.status, sc.growth_text().removeprefix("growth "), "/".join(_yes_no(x) for x in (
                sc.physics, sc.class_consistent, sc.complexity_honest)), str(sc.code_length), f"{sc.fitness:.4f}")
            if sc is not None else (p.verdict or "-", "-", "-", "-", "-"))
        print(f"  {i:>2}  {p.id:14}  {status:8}  {n:>10}  {growth:22}  {checks:20}  {length:>6}  {fit:7}  "
              f"{(p.class_claim or '-'):20}  {(p.complexity_claim or '-'):12}  {p.proposer or '?'}/{p.model or '-'}")
    chains = [(i, p) for i, p in enumerate(top, 1) if p.chain]
    if chains:
        print("\nderivations of the best programs (`evolve lineage --program ID` shows every step's check):")
        for i, p in chains:
            print(f"  {i:>2}  {p.id:14}  {p.chain}")
    print(f"\n`evolve lineage {args.run_dir}` shows the best program's ancestry.")
    return 0


def _print_models(models: dict) -> None:
    """The per-model table of `evolve show` (evolve/store/model_stats.py)."""
    if not models:
        return
    print(f"\n{'model':32}  {'proposals':>9}  {'parse fail':>10}  {'diff fail':>9}  {'api fail':>8}  {'evaluated':>9}  "
          f"{'accepted':>8}  {'tokens in/out':>15}  {'USD':>9}  {'mean latency':>12}")
    for name, m in sorted(models.items()):
        latency = "-" if m["mean_latency_s"] is None else f"{m['mean_latency_s']:.2f} s"
        print(f"{name:32}  {m['proposals']:>9}  {m['parse_failures']:>10}  {m['diff_failures']:>9}  "
              f"{m['api_failures']:>8}  {m['evaluations']:>9}  {m['accepted']:>8}  "
              f"{str(m['tokens_in']) + '/' + str(m['tokens_out']):>15}  {m['usd']:>9.4f}  {latency:>12}")
        if m.get("preflight") and m["preflight"] != "ok":
            print(f"  preflight {m['preflight']}")


def run_runs(args) -> int:
    from evolve.store.run_list import list_runs  # lazy

    root = Path(args.root)
    if not root.is_dir():
        raise UsageError(f"{root} is not a directory (runs are created by `evolve launch`; pick another with --root)")
    runs = list_runs(root)
    if args.json:
        print_json({"root": str(root), "runs": [vars(r) for r in runs]})
        return 0
    if not runs:
        print(f"no runs under {root}")
        return 0
    print(f"{'run id':32}  {'task':5}  {'status':11}  {'created':20}  counts")
    for r in runs:
        counts = "; ".join(x for x in (_run_counts(r.counts), r.reason) if x) or "-"
        print(f"{r.run_id:32}  {r.task or '-':5}  {r.status:11}  {r.created or '-':20}  {counts}")
    return 0


def _run_counts(counts: dict) -> str:
    """A run's status.json counts for people: numbers as counts, money in dollars, time as a duration
    (`--json` keeps the raw values)."""
    def number(key):
        value = counts.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    parts = [f"{int(number(k))} {k.replace('_', ' ')}" for k in ("proposals", "evaluations", "accepted", "duplicates")
             if number(k) is not None]
    if number("failed_proposals"):
        parts.append(f"{int(number('failed_proposals'))} failed proposals")
    if number("usd"):
        parts.append(f"${number('usd'):.4f}")
    if number("elapsed_s"):
        parts.append(_duration(number("elapsed_s")))
    text = ", ".join(parts)
    reason = counts.get("reason")
    return f"{text}; {reason}" if reason and text else str(reason or text)
