"""A scripted model whose first answers are wrong, for comparing search strategies on P01.

The scripted model (served by :class:`doubles.scripted_server.ScriptedServer`) behaves like a
fallible LLM on the open Ising chain. Its answers to a prompt *without* a previous program
(a first attempt, or a revision of an answer that had no code) never pass:

- ``hybrid``: exact enumeration up to a small n, a second-order high-temperature series beyond.
  It passes every probe (n <= 14) and fails the promotion ladder at n = 100, so it scores above
  the wrong formula (it was verified further) but no revision fixes it: shown as the parent,
  the model "fixes" it by raising the enumeration threshold (16, 24, ..., 96, then repeating
  itself), which fails the same way. A deceptive dead end.
- ``wrong formula``: Z = (2 cosh K)^n, the periodic chain's answer; fails the probes.
- ``no JSON``: prose without the JSON object (a parse failure, nothing to judge).

Revisions depend on what the prompt shows as the previous program (the parent block of the
islands/tree prompt, or the previous response of the paper's feedback prompt):

- the wrong formula, with the verifier saying it *disagrees with brute force* ->
  ``fixed formula`` Z = 2 (2 cosh K)^(n-1): accepted, but it overflows a float past n of a few
  hundred, so the ladder verifies it only to n = 100;
- the fixed formula -> ``log space``: log Z = log 2 + (n-1) log(2 cosh K) with ``log_Z``:
  accepted and verified to n = 100000, the best program of the scenario;
- the log-space program -> itself (a converged model repeats its answer).

First attempts are drawn with a seeded generator (``hybrid`` 1/2, ``wrong formula`` 1/4,
``no JSON`` 1/4), so different seeds are different samples of the same model. Rules match the
last user message only; see :func:`rules`.
"""

from __future__ import annotations

import json
import re

import numpy as np

from doubles.scripted_server import Rule

TASK = "P01"
CLASS, COMPLEXITY = "transfer_matrix", "O(n)"
FIRST_ATTEMPTS = (("hybrid", 0.5), ("wrong formula", 0.25), ("no JSON", 0.25))
# below the ladder's first rung (n = 100): past it the enumeration would run at n = 100 until the rung
# times out; the last threshold is repeated (a duplicate, never judged twice by islands or tree)
HYBRID_THRESHOLDS = tuple(range(16, 100, 8))
FIRST_ATTEMPT_DRAWS = 512

# markers: text of each program that identifies it inside a prompt (in code or in JSON-escaped code)
WRONG_MARK = "Z = (2 cosh K)^n for the chain"
FIXED_MARK = "Z = 2 (2 cosh K)^(n-1), exact for the open chain"
LOG_MARK = "log Z = log 2 + (n-1) log(2 cosh K), in log space"
FEEDBACK_NEEDED = "disagrees with brute force"   # the fix comes only when the verifier says so


def hybrid_mark(threshold: int) -> str:
    return f"exact enumeration up to n = {threshold}, high-temperature series beyond"


def hybrid_code(threshold: int) -> str:
    return f'''import itertools
import math


def Z_efficient(params, n):
    # {hybrid_mark(threshold)}
    K = params["beta"] * params["J"]
    if n <= {threshold}:
        return sum(math.exp(K * sum(s[i] * s[i + 1] for i in range(n - 1)))
                   for s in itertools.product((-1, 1), repeat=n))
    return math.exp(n * math.log(2.0) + (n - 1) * K * K / 2.0)
'''


WRONG_CODE = f'''import math


def Z_efficient(params, n):
    # {WRONG_MARK}
    K = params["beta"] * params["J"]
    return (2.0 * math.cosh(K)) ** n
'''

FIXED_CODE = f'''import math


def Z_efficient(params, n):
    # {FIXED_MARK}
    K = params["beta"] * params["J"]
    return 2.0 * (2.0 * math.cosh(K)) ** (n - 1)
'''

LOG_CODE = f'''import math


def log_Z(params, n):
    # {LOG_MARK}
    K = abs(params["beta"] * params["J"])
    return math.log(2.0) + (n - 1) * (K + math.log1p(math.exp(-2.0 * K)))


def Z_efficient(params, n):
    return math.exp(log_Z(params, n))
'''

NO_JSON = "The chain is solved by a transfer matrix; the partition function follows from its eigenvalues."


def answer(code: str, justification: str, confidence: float = 0.8) -> str:
    """The model's reply: the JSON object the system prompt asks for."""
    return json.dumps({"tractable_class": CLASS, "complexity_O": COMPLEXITY, "confidence": confidence,
                       "justification": justification, "code": code})


def previous_contains(marker: str, then: str = "") -> str:
    """A pattern for: the previous program shown in the prompt contains ``marker`` (and the text
    ``then`` follows somewhere after it). The previous program is the parent block of an evolve
    prompt or the previous response of the paper's feedback prompt, not an inspiration."""
    m = re.escape(marker)
    previous = (rf"(?:--- parent program [^\n]*---(?:(?!--- end parent program).)*?{m}"
                rf"|Your previous response was:(?:(?!The verifier reports:).)*?{m})")
    return previous + (rf".*{re.escape(then)}" if then else "")


def first_attempts(seed: int, count: int = FIRST_ATTEMPT_DRAWS) -> list[str]:
    """The kinds of the model's first attempts, in the order it gives them, for ``seed``."""
    kinds = [k for k, _ in FIRST_ATTEMPTS]
    p = [w for _, w in FIRST_ATTEMPTS]
    return [kinds[i] for i in np.random.default_rng(seed).choice(len(kinds), size=count, p=p)]


def rules(seed: int) -> list[Rule]:
    """The scripted model for ``seed``: revision rules first, then the seeded first attempts."""
    first = {"hybrid": answer(hybrid_code(HYBRID_THRESHOLDS[0]), "Enumerate small chains exactly; for long "
                              "chains the high-temperature expansion of log(2 cosh K) is accurate."),
             "wrong formula": answer(WRONG_CODE, "Each spin contributes a factor 2 cosh K."),
             "no JSON": NO_JSON}
    out = [Rule(previous_contains(LOG_MARK), [answer(LOG_CODE, "Already optimal.", 0.95)], repeat_last=True),
           Rule(previous_contains(FIXED_MARK), [answer(LOG_CODE, "Same formula, computed as log Z so it does not "
                                                       "overflow for long chains.", 0.95)], repeat_last=True),
           Rule(previous_contains(WRONG_MARK, then=FEEDBACK_NEEDED),
                [answer(FIXED_CODE, "Bond variables b_i = s_i s_{i+1} are independent: n-1 bonds, and a "
                        "factor 2 for the first spin.", 0.9)], repeat_last=True)]
    last = HYBRID_THRESHOLDS[-1]
    for low, high in zip(HYBRID_THRESHOLDS, HYBRID_THRESHOLDS[1:] + (last,)):
        out.append(Rule(previous_contains(hybrid_mark(low)),
                        [answer(hybrid_code(high), f"Enumerate exactly up to n = {high} to be safe.")],
                        repeat_last=True))
    out.append(Rule(r"[\s\S]", [first[k] for k in first_attempts(seed)]))
    return out


def program_kind(code: str | None) -> str:
    """Which scenario program ``code`` is (for reports): hybrid, wrong formula, fixed formula,
    log space, or no code."""
    if not code:
        return "no code"
    for kind, mark in (("log space", LOG_MARK), ("fixed formula", FIXED_MARK), ("wrong formula", WRONG_MARK)):
        if mark in code:
            return kind
    return "hybrid" if "exact enumeration up to n =" in code else "other"
