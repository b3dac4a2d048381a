"""A stochastic scripted model of the open Ising chain (P01) that knows several routes, for the
bandit, negative-prompting, replay and soak tests.

Each answer is a JSON object in the paper's schema (or a deliberately broken one). Routes:

- right: ``closed_form`` (Z only: overflows a float past n of a few hundred), ``closed_form_log``
  (log Z), ``transfer_matrix`` (2x2 matrices in log space), ``message_passing`` (belief
  propagation with log messages), ``tensor_network`` (einsum along the chain), ``brute_force``
  (honest enumeration claimed as no_efficient_known);
- wrong: ``periodic`` ((2 cosh K)^n), ``curie_weiss`` (a magnetisation sum that ignores the chain);
- ``dishonest``: enumeration over bit patterns claimed as an O(n) transfer matrix;
- ``hostile``: code that imports os, opens files or spins forever;
- ``malformed``: truncated JSON, prose, an empty answer;
- ``diff``: SEARCH/REPLACE blocks against the log-space program (one that applies, one that does not).

:class:`NoisyModel` mixes all of these with transport faults (429, 5xx, timeouts, dropped
connections, bodies that are not JSON) for the soak test. :class:`RouteModel` answers a request: with a negative-prompting block in the prompt it avoids,
with probability ``comply``, the families the block names (as a model that follows instructions
would); otherwise it draws a route by its prior. All draws come from one seeded generator.
"""

from __future__ import annotations

import json
import re
import threading

import numpy as np

from doubles.scripted_server import Reply
from search.negative import METHOD_FAMILIES

CLOSED_FORM = '''import math


def Z_efficient(params, n):
    K = params["beta"] * params["J"]
    return 2.0 * (2.0 * math.cosh(K)) ** (n - 1)
'''

CLOSED_FORM_LOG = '''import math


def log_Z(params, n):
    K = abs(params["beta"] * params["J"])
    return math.log(2.0) + (n - 1) * (K + math.log1p(math.exp(-2.0 * K)))


def Z_efficient(params, n):
    return math.exp(log_Z(params, n))
'''

TRANSFER_MATRIX = '''import math

import numpy as np


def log_Z(params, n):
    K = params["beta"] * params["J"]
    T = np.array([[math.exp(K), math.exp(-K)], [math.exp(-K), math.exp(K)]])
    v = np.ones(2)
    log_scale = 0.0
    for _ in range(n - 1):
        v = T @ v
        top = v.max()
        v = v / top
        log_scale += math.log(top)
    return log_scale + math.log(v.sum())


def Z_efficient(params, n):
    return math.exp(log_Z(params, n))
'''

MESSAGE_PASSING = '''import math

import numpy as np


def log_Z(params, n):
    # belief propagation: log messages passed along the chain
    K = params["beta"] * params["J"]
    message = np.zeros(2)
    spins = np.array([1.0, -1.0])
    for _ in range(n - 1):
        message = np.logaddexp(message[0] + K * spins, message[1] - K * spins)
    return float(np.logaddexp(message[0], message[1]))


def Z_efficient(params, n):
    return math.exp(log_Z(params, n))
'''

TENSOR_NETWORK = '''import math

import numpy as np


def log_Z(params, n):
    K = params["beta"] * params["J"]
    bond = np.array([[math.exp(K), math.exp(-K)], [math.exp(-K), math.exp(K)]])
    edge = np.ones(2)
    log_norm = 0.0
    for _ in range(n - 1):
        edge = np.einsum("i,ij->j", edge, bond)
        s = edge.sum()
        edge = edge / s
        log_norm += math.log(s)
    return log_norm + math.log(edge.sum())


def Z_efficient(params, n):
    return math.exp(log_Z(params, n))
'''

BRUTE_FORCE = '''import itertools
import math


def Z_efficient(params, n):
    K = params["beta"] * params["J"]
    return sum(math.exp(K * sum(s[i] * s[i + 1] for i in range(n - 1)))
               for s in itertools.product((-1, 1), repeat=n))
'''

PERIODIC = '''import math


def Z_efficient(params, n):
    K = params["beta"] * params["J"]
    return (2.0 * math.cosh(K)) ** n
'''

CURIE_WEISS = '''import math


def Z_efficient(params, n):
    K = params["beta"] * params["J"]
    return sum(math.comb(n, k) * math.exp(K * (n - 2 * k) ** 2 / n) for k in range(n + 1))
'''

HOSTILE = {
    "imports os": 'import os\n\n\ndef Z_efficient(params, n):\n    os.system("echo hi")\n    return 1.0\n',
    "reads a file": 'def Z_efficient(params, n):\n    return float(len(open("/etc/passwd").read()))\n',
    "spins forever": 'def Z_efficient(params, n):\n    while True:\n        pass\n',
}

#: route -> (code, class, complexity, method family it is)
ROUTES = {
    "closed_form": (CLOSED_FORM, "transfer_matrix", "O(1)", "closed form"),
    "closed_form_log": (CLOSED_FORM_LOG, "transfer_matrix", "O(1)", "closed form"),
    "transfer_matrix": (TRANSFER_MATRIX, "transfer_matrix", "O(n)", "chain transfer matrix"),
    "message_passing": (MESSAGE_PASSING, "treewidth_bounded", "O(n)", "dynamic programming"),
    "tensor_network": (TENSOR_NETWORK, "treewidth_bounded", "O(n)", "tensor network"),
    "brute_force": (BRUTE_FORCE, "no_efficient_known", "O(n 2^n)", "enumeration"),
    "periodic": (PERIODIC, "transfer_matrix", "O(1)", "closed form"),
    "curie_weiss": (CURIE_WEISS, "gauge", "O(n)", "gauge + magnetisation sum"),
}
#: the model's prior over routes when nothing steers it (a model with a favourite answer)
PRIOR = {"closed_form": 0.35, "closed_form_log": 0.2, "transfer_matrix": 0.15, "periodic": 0.1,
         "message_passing": 0.06, "tensor_network": 0.05, "brute_force": 0.05, "curie_weiss": 0.04}
#: a model with a long tail: three routes it almost never proposes unprompted (1% each)
LONG_TAIL = {"closed_form": 0.5, "closed_form_log": 0.2, "periodic": 0.1, "transfer_matrix": 0.12,
             "brute_force": 0.05, "message_passing": 0.01, "tensor_network": 0.01, "curie_weiss": 0.01}
PRIORS = {"skewed": PRIOR, "long-tail": LONG_TAIL}

NEGATIVE_HEAD = "Approaches already tried on this problem:"


def answer(route: str, confidence: float = 0.8) -> str:
    code, label, complexity, family = ROUTES[route]
    return json.dumps({"tractable_class": label, "complexity_O": complexity, "confidence": confidence,
                       "justification": f"The {family} route for the open chain.", "code": code})


def hostile(kind: str) -> str:
    return json.dumps({"tractable_class": "transfer_matrix", "complexity_O": "O(n)", "confidence": 0.5,
                       "justification": "Trust me.", "code": HOSTILE[kind]})


MALFORMED = ('{"tractable_class": "transfer_matrix", "code": "def Z_efficient(p, n): return 1",',
             "The chain is solved by a transfer matrix; Z follows from its eigenvalues.",
             "")

DIFF_APPLIES = ('{"tractable_class": "transfer_matrix", "complexity_O": "O(1)", "confidence": 0.9, '
                '"justification": "Same formula, clearer names."}\n'
                "<<<<<<< SEARCH\n    K = abs(params[\"beta\"] * params[\"J\"])\n=======\n"
                "    coupling = abs(params[\"beta\"] * params[\"J\"])\n    K = coupling\n>>>>>>> REPLACE")
DIFF_FAILS = ('{"tractable_class": "transfer_matrix", "complexity_O": "O(1)", "confidence": 0.9, '
              '"justification": "Edit."}\n'
              "<<<<<<< SEARCH\n    K = params['beta'] * params['J'] * 2\n=======\n    K = 0\n>>>>>>> REPLACE")


def named_families(prompt: str) -> set[str]:
    """The method families a prompt's negative-prompting block lists."""
    if NEGATIVE_HEAD not in prompt:
        return set()
    block = prompt.split(NEGATIVE_HEAD, 1)[1].split("Propose an approach", 1)[0]
    return {f for f in METHOD_FAMILIES if re.search(re.escape(f), block)}


class RouteModel:
    """``respond(body)`` for :class:`doubles.scripted_server.Rule`: a seeded stochastic model."""

    def __init__(self, seed: int, comply: float = 0.8, prior: dict | None = None):
        self.rng = np.random.default_rng(seed)
        self.comply = comply
        self.prior = dict(prior or PRIOR)
        self.lock = threading.Lock()
        self.routes: list[str] = []          # what it answered, in order

    def draw(self, prompt: str) -> str:
        avoid = named_families(prompt)
        routes = list(self.prior)
        weights = np.array([self.prior[r] for r in routes])
        if avoid and self.rng.random() < self.comply:
            keep = np.array([ROUTES[r][3] not in avoid for r in routes])
            if keep.any():
                weights = weights * keep
        return routes[int(self.rng.choice(len(routes), p=weights / weights.sum()))]

    def __call__(self, body: dict) -> str:
        prompt = (body.get("messages") or [{}])[-1].get("content", "")
        with self.lock:
            route = self.draw(prompt)
            self.routes.append(route)
        return answer(route)


DISHONEST = '''def Z_efficient(params, n):
    K = params["beta"] * params["J"]
    total = 0.0
    for c in range(1 << n):
        e = 0
        for i in range(n - 1):
            e += 1 if ((c >> i) & 1) == ((c >> (i + 1)) & 1) else -1
        total += pow(2.718281828459045, K * e)
    return total
'''

#: what the noisy model does, with its probability: answers, then transport faults
NOISE = (("right", 0.30), ("overflowing", 0.05), ("wrong", 0.10), ("dishonest", 0.05), ("hostile", 0.05),
         ("malformed", 0.10), ("diff", 0.10), ("429", 0.05), ("500", 0.04), ("503", 0.03), ("timeout", 0.02),
         ("drop", 0.04), ("not json", 0.07))


class NoisyModel:
    """``respond(body)``: right, wrong, dishonest, overflowing, hostile and malformed answers,
    diffs (that apply or not) against the parent shown, and transport faults, drawn by a seeded
    generator per request. ``delay_s`` is longer than the client's timeout for "timeout"."""

    def __init__(self, seed: int, timeout_delay_s: float = 1.5):
        self.rng = np.random.default_rng(seed)
        self.delay = timeout_delay_s
        self.lock = threading.Lock()
        self.drawn: list[str] = []

    def __call__(self, body: dict):
        user = (body.get("messages") or [{}])[-1].get("content", "")
        with self.lock:
            kinds, p = zip(*NOISE)
            kind = kinds[int(self.rng.choice(len(kinds), p=np.array(p) / sum(p)))]
            pick = self.rng.random()
            self.drawn.append(kind)
        if kind == "right":
            return answer(("closed_form_log", "transfer_matrix", "message_passing", "tensor_network",
                           "brute_force")[int(pick * 5)])
        if kind == "overflowing":
            return answer("closed_form")
        if kind == "wrong":
            return answer("periodic" if pick < 0.5 else "curie_weiss")
        if kind == "dishonest":
            return json.dumps({"tractable_class": "transfer_matrix", "complexity_O": "O(n)", "confidence": 0.95,
                               "justification": "A transfer matrix along the chain.", "code": DISHONEST})
        if kind == "hostile":
            return hostile(sorted(HOSTILE)[int(pick * len(HOSTILE))])
        if kind == "malformed":
            return MALFORMED[int(pick * len(MALFORMED))]
        if kind == "diff":
            return DIFF_APPLIES if pick < 0.5 and "--- parent program" in user else DIFF_FAILS
        if kind in ("429", "500", "503"):
            return Reply(status=int(kind), headers={"Retry-After": "0"} if kind == "429" else {})
        if kind == "timeout":
            return Reply(answer("closed_form_log"), delay_s=self.delay)
        if kind == "drop":
            return Reply(drop=True)
        return Reply(raw_body=b'{"choices": [truncated')
