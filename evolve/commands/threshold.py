"""`evolve threshold`: the decoding threshold of a Tier 2 decoding task, from the maximum-likelihood
decoder's success over sampled errors at several sizes (evolve/threshold/)."""

from __future__ import annotations

import math
import sys

from evolve.commands.common import (UsageError, check_count, check_seed, path_text, print_json, sigterm_raises,
                                    task_arg)

DEFAULT_SIZES = "16,24,32,48"
DEFAULT_P = "0.100:0.118:7"
DEFAULT_SAMPLES = 20000
DEFAULT_BATCH = 500
MAX_L = 256
DEFAULT_CHI = 8
MAX_CHI = 256
#: the depolarizing decoder's default grid: the boundary MPS costs about 10 ms per sample at L = 6, chi = 8
DEPOLARIZING_DEFAULTS = {"sizes": "3,5,7", "p": "0.15:0.21:7", "samples": 2000}


def register(sub) -> None:
    p = sub.add_parser(
        "threshold",
        help="estimate a decoding task's threshold from sampled errors",
        description=(
            "Draw errors at each (L, p), decode each with the exact maximum-likelihood decoder (or a program), "
            "estimate the success probability with 95% confidence intervals and locate where the curves of "
            "different sizes cross. Batches of samples are journaled in the run directory as they finish (a "
            "rerun with the same settings resumes) and spread over Ray. Prints progress on stderr, then the "
            "result; writes summary.json and report.html (the crossing curves) in the run directory. "
            "Exit status: 0 done, 1 the decoder failed on a batch, 2 usage error."),
    )
    p.add_argument("--task", required=True, help="a Tier 2 decoding task: T21 (the planar surface code)")
    p.add_argument("--noise", choices=("bitflip", "depolarizing"), default="bitflip",
                   help="bitflip (default): the task's own noise, exact decoder; depolarizing: T21's code with X, Y, Z "
                        "each at rate p/3, four classes, decoded by boundary-MPS contraction at bond dimension --chi "
                        "(approximate; the reference is 18.9(3)%%)")
    p.add_argument("--chi", type=int, default=None, metavar="CHI",
                   help=f"the boundary MPS's bond dimension under --noise depolarizing (default {DEFAULT_CHI}); exact "
                        "when chi >= 2^(L-1)")
    p.add_argument("--sizes", default=None, metavar="L1,L2,...",
                   help=f"code distances, at least two (default {DEFAULT_SIZES}; "
                        f"{DEPOLARIZING_DEFAULTS['sizes']} under --noise depolarizing)")
    p.add_argument("--p", default=None, metavar="P1,P2,... | START:STOP:COUNT",
                   help=f"error rates in (0, 0.5), at least three (default {DEFAULT_P}: 7 values from 0.100 to 0.118; "
                        f"{DEPOLARIZING_DEFAULTS['p']} under --noise depolarizing)")
    p.add_argument("--samples", type=int, default=None, metavar="N",
                   help=f"errors drawn at each (L, p) (default {DEFAULT_SAMPLES}; {DEPOLARIZING_DEFAULTS['samples']} under "
                        "--noise depolarizing); a rerun may raise it to add samples")
    p.add_argument("--batch", type=int, default=DEFAULT_BATCH, metavar="N",
                   help=f"samples per batch, the unit of work and of the journal (default {DEFAULT_BATCH})")
    p.add_argument("--seed", type=int, default=0, metavar="K",
                   help="seed of the errors: batch k at (L, p) draws from the stream (K, L, p, k) (default 0)")
    p.add_argument("--out", type=path_text, default=None, metavar="DIR",
                   help="run directory: journal, summary.json, report.html (default ./threshold-TASK)")
    p.add_argument("--program", type=path_text, default=None, metavar="FILE",
                   help="decode with this program (a .py, or a .json in the paper's response schema) in the sandbox, "
                        "calling its log_Z (or Z_efficient) once per class per error, instead of the exact decoder")
    p.add_argument("--method", choices=("crossing", "fss"), default="crossing",
                   help="crossing (default): where the quadratic fits of the two largest sizes cross, error by "
                        "bootstrap; fss: one finite-size-scaling fit of all sizes in x = (p - p_c) L^(1/nu)")
    p.add_argument("--nu", default="1.5", metavar="NU|free",
                   help="the scaling fit's exponent: a number (default 1.5, the Nishimori point's), or 'free' to fit it")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="batches decoded at once (default: the Ray cluster's CPUs)")
    p.add_argument("--address", default=None, metavar="ADDR",
                   help="join this Ray cluster (auto, HOST:PORT or ray://HOST:PORT) instead of starting a local one")
    p.add_argument("--no-ray", action="store_true", help="decode every batch in this process, one after another")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: p_c, p_c_err, sizes, samples (per point), wall_s and the rest of "
                        "summary.json")
    p.set_defaults(run=run)


def _sizes(text: str, min_L: int) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise UsageError(f"--sizes takes comma-separated integers, got {text!r}") from None
    if len(sizes) < 2 or len(set(sizes)) != len(sizes):
        raise UsageError(f"--sizes needs at least two distinct sizes, got {text!r}")
    bad = [L for L in sizes if not min_L <= L <= MAX_L]
    if bad:
        raise UsageError(f"--sizes: every size must lie in [{min_L}, {MAX_L}], got {bad[0]}")
    return tuple(sorted(sizes))


def _ps(text: str) -> tuple[float, ...]:
    try:
        if ":" in text:
            start, stop, count = text.split(":")
            count = int(count)
            if count < 1:
                raise ValueError
            values = [float(start) + k * (float(stop) - float(start)) / max(count - 1, 1) for k in range(count)]
        else:
            values = [float(x) for x in text.split(",")]
    except ValueError:
        raise UsageError(f"--p takes P1,P2,... or START:STOP:COUNT, got {text!r}") from None
    values = sorted({round(v, 12) for v in values})
    if len(values) < 3:
        raise UsageError(f"--p needs at least three distinct error rates, got {text!r}")
    if not all(math.isfinite(v) and 0.0 < v < 0.5 for v in values):
        raise UsageError(f"--p: error rates must lie in (0, 0.5), got {text!r}")
    return tuple(values)


def _nu(text: str) -> float | None:
    if text == "free":
        return None
    try:
        nu = float(text)
    except ValueError:
        raise UsageError(f"--nu takes a number or 'free', got {text!r}") from None
    if not (math.isfinite(nu) and 0.1 <= nu <= 10.0):
        raise UsageError(f"--nu must lie in [0.1, 10], got {text!r}")
    return nu


def _program(path: str | None):
    if path is None:
        return None, "exact"
    import hashlib  # lazy

    from evaluators.submission import SubmissionError, load_submission  # lazy

    try:
        sub = load_submission(path)
    except SubmissionError as exc:
        raise UsageError(str(exc)) from None
    if not sub.defines("Z_efficient") and not sub.defines("log_Z"):
        raise UsageError(f"--program {path} defines neither log_Z nor Z_efficient")
    digest = hashlib.sha256(sub.code.encode()).hexdigest()[:16]
    return (sub.code, sub.defines("log_Z")), f"program:{digest}"


def run(args) -> int:
    from pathlib import Path  # lazy

    from evolve.threshold.records import Settings  # lazy
    from evolve.threshold.run import Options, OutDirectoryError, ThresholdError, run_threshold, threshold_code  # lazy

    task = task_arg(args.task)
    depolarizing = args.noise == "depolarizing"
    if depolarizing and task.id != "T21":
        raise UsageError(f"--noise depolarizing takes --task T21 (the planar code under depolarizing noise), "
                         f"not {task.id}")
    try:
        code = threshold_code(task)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if depolarizing:
        if args.program is not None:
            raise UsageError("--noise depolarizing decodes with the boundary MPS; --program answers T21's bit-flip "
                             "questions, not these")
        chi = DEFAULT_CHI if args.chi is None else args.chi
        check_count(chi, "--chi", 1, MAX_CHI)
    elif args.chi is not None:
        raise UsageError("--chi is the boundary MPS's bond dimension: it goes with --noise depolarizing")
    defaults = DEPOLARIZING_DEFAULTS if depolarizing else {"sizes": DEFAULT_SIZES, "p": DEFAULT_P,
                                                           "samples": DEFAULT_SAMPLES}
    sizes = _sizes(args.sizes or defaults["sizes"], code.min_L)
    ps = _ps(args.p or defaults["p"])
    if args.samples is None:
        args.samples = defaults["samples"]
    check_count(args.samples, "--samples", 2, 10 ** 8)
    check_count(args.batch, "--batch", 1, 10 ** 6)
    check_seed(args.seed, "--seed")
    if args.workers is not None:
        check_count(args.workers, "--workers", 1, 4096)
    if args.no_ray and args.address is not None:
        raise UsageError("--address joins a Ray cluster and --no-ray decodes in this process: give one of them")
    nu = _nu(args.nu)
    program, decoder = _program(args.program)
    if depolarizing:
        decoder = f"mps:chi={chi}"
    settings = Settings(task=task.id, sizes=sizes, ps=ps, samples=args.samples, batch=args.batch, seed=args.seed,
                        decoder=decoder, noise=args.noise, chi=chi if depolarizing else 0)
    out = Path(args.out or (f"threshold-{task.id}-depolarizing-chi{chi}" if depolarizing else f"threshold-{task.id}"))
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    options = Options(out=out, use_ray=not args.no_ray, address=args.address, workers=args.workers,
                      method=args.method, nu=nu, program=program)
    from evolve.engine.termination import Terminated  # lazy

    try:
        with sigterm_raises(Terminated):        # SIGTERM ends the run as Ctrl-C does: journal closed, session noted
            summary = run_threshold(settings, options, **({"log": lambda line: None} if args.quiet else {}))
    except OutDirectoryError as exc:
        raise UsageError(str(exc)) from None
    except ThresholdError as exc:
        print(f"evolve threshold: {exc}", file=sys.stderr)
        return 1
    if args.json:
        from dataclasses import asdict  # lazy

        print_json(asdict(summary))
        return 0
    print(render(summary))
    return 0


def render(s) -> str:
    """The result in a few lines."""
    from evolve.threshold.stats import Z95  # lazy

    sizes = sorted({q["L"] for q in s.points})
    ps = sorted({q["p"] for q in s.points})
    cell = {(q["L"], q["p"]): q for q in s.points}
    lines = ["P_succ (Nishimori estimator, ± 95%) by p (rows) and L (columns):",
             "  p        " + "".join(f"{'L=' + str(L):>19}" for L in sizes)]
    for p in ps:
        lines.append(f"  {p:<8.4g} " + "".join(
            f"{cell[(L, p)]['nishimori']:>11.5f} ±{Z95 * cell[(L, p)]['nishimori_se']:.5f}" if (L, p) in cell
            else f"{'-':>19}" for L in sizes))
    lines.append("crossings of consecutive sizes: " + ", ".join(
        f"L={c['L1']}/{c['L2']}: {c['p']:.5f} ± {c['err']:.5f}" for c in s.crossings))
    fss = s.fss
    lines.append(f"scaling fit: p_c = {fss['p_c']:.5f} ± {fss['p_c_err']:.5f}, nu = {fss['nu']:.3f}"
                 + (f" ± {fss['nu_err']:.3f}" if fss["nu_err"] else " (fixed)") + f", chi2/dof {fss['chi2_dof']:.2f}")
    lines.append("cost per sample (CPU): " + "; ".join(
        f"L={L}: sampling {c['sampling_ms']:.4f} ms, decoding {c['decoding_ms']:.3f} ms" for L, c in s.costs.items()))
    how = "the two largest sizes' crossing" if s.method == "crossing" else "the scaling fit"
    under = "" if getattr(s, "noise", "bitflip") == "bitflip" else f" under {s.noise} noise, decoder {s.decoder}"
    lines.append(f"{s.task}{under}: p_c = {s.p_c:.5f} ± {s.p_c_err:.5f} ({how}, Nishimori estimator; reference "
                 f"{s.reference_p_c}); sizes {', '.join(map(str, s.sizes))}; {s.samples} samples per point, "
                 f"{s.samples_total} in all; {s.wall_s:.0f} s ({s.wall_total_s:.0f} s over every invocation)")
    lines += [f"note: {n}" for n in s.notes]
    lines.append(f"report: {s.report}")
    return "\n".join(lines)
