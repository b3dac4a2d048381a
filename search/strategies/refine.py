"""StatMechBench-v0's propose-verify-revise loop as a strategy (``strategy: refine``).

Each slot of a generation is one *chain*: a trial of the paper's loop (Section 3). Round 0 asks
for a program from scratch with the paper's initial prompt; every later round sends the paper's
feedback prompt with the previous round's raw response and its verifier feedback (a response
without code gets the paper's branch (a), "Your code did not run"). A trial ends at its first
accepted program, after ``rounds`` rounds (the paper's k = 5), or when the provider failed for
good; the slot then starts a new trial. Every round is judged, repeated code included, as in
the paper. ``prompts: evolve`` sends this project's prompts instead (the interface generated from
the task, the previous round as the parent with its Verdict and every failed check). ``evolve bench`` runs one trial per model x task x variant this way (one slot,
``budgets.proposals`` = k, ``stop_when_accepted``).
"""

from __future__ import annotations

from dataclasses import dataclass

from search.records import STYLES, JudgedProgram, Selection
from search.strategies import StrategyContext, register


@dataclass(frozen=True)
class RefineOptions:
    rounds: int = 5                      # the paper's k: rounds per trial
    trials: int | None = None            # stop after this many trials have ended (None: run to the budgets)
    prompts: str = "paper"               # paper (StatMechBench-v0's prompts) | evolve (ours)

    def __post_init__(self):
        if self.prompts not in STYLES:
            raise ValueError(f"prompts must be one of {', '.join(STYLES)}, got {self.prompts!r}")
        if self.rounds < 1:
            raise ValueError("rounds must be at least 1")
        if self.trials is not None and self.trials < 1:
            raise ValueError("trials must be at least 1 (or null)")


@dataclass
class Chain:
    trial: int                           # trial number, in order of start across slots
    round: int = 0                       # rounds done in this trial
    last: JudgedProgram | None = None    # the previous round (the next prompt's parent)


@register
class RefineStrategy:
    name = "refine"
    Options = RefineOptions
    rejudge_duplicates = True
    overlaps_generations = False  # each round revises the previous round: no lag allowed

    def __init__(self, options: RefineOptions, context: StrategyContext):
        self.rounds = options.rounds
        self.max_trials = options.trials
        self.style = options.prompts
        self.chains: list[Chain] = []
        self.trials = 0                  # trials started
        self.ended: list[str] = []       # how each ended trial ended, in order of ending

    def _new_chain(self) -> Chain:
        self.trials += 1
        return Chain(trial=self.trials - 1)

    def select(self, generation: int, slots: int) -> list[Selection]:
        while len(self.chains) < slots:
            self.chains.append(self._new_chain())
        return [Selection(c.last, style=self.style, journal={"trial": c.trial, "round": c.round})
                for c in self.chains[:slots]]

    def absorb(self, slot: int, selection: Selection, program: JudgedProgram) -> None:
        chain = self.chains[slot]
        chain.round += 1
        if program.accepted:
            self.ended.append("accepted")
        elif program.candidate.error_kind == "api":
            self.ended.append(f"api error: {program.candidate.parse_error}")
        elif chain.round >= self.rounds:
            self.ended.append("rounds exhausted")
        else:
            chain.last = program
            return
        self.chains[slot] = self._new_chain()

    def end_generation(self, generation: int) -> list:
        return []

    def finished(self) -> str | None:
        if self.max_trials is not None and len(self.ended) >= self.max_trials:
            return f"{len(self.ended)} trial(s) ended, the last: {self.ended[-1]}"
        return None

    def state(self) -> dict:
        return {"trials": self.trials, "ended": list(self.ended),
                "chains": [{"trial": c.trial, "round": c.round, "last": None if c.last is None else c.last.to_dict()}
                           for c in self.chains]}

    def load(self, state: dict) -> None:
        self.trials = int(state["trials"])
        self.ended = list(state["ended"])
        self.chains = [Chain(int(c["trial"]), int(c["round"]),
                             None if c["last"] is None else JudgedProgram.from_dict(c["last"]))
                       for c in state["chains"]]
