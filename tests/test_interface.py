"""The interface block of the evolve prompt, derived from the task object: keys, shapes in n or L
(checked at sizes the derivation never sampled), values, the overflow size (checked against exact
log Z), the checks that apply; the same for paraphrases and user task files; gold never read;
goal wording for fresh drafts, mutations and crossovers; the paper's prompts untouched."""

import copy
import math
import re
from pathlib import Path

import numpy as np
import pytest

from evaluators.oracle_cache import reference
from search.interface import FLOAT_MAX_LOG, task_interface
from search.prompt_builder import ProgramView, PromptBuilder
from search.prompts import fill, load_templates
from search.proposers import ProposerContext
from search.proposers.llm import LLM, LLMOptions
from search.records import ProposalRequest
from search.llm.config import LLMConfig, ModelSpec
from tasks import registry
from tasks.registry import all_tasks, get_task, register_task_file

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "tasks" / "diamond_chain.py"
#: sizes of the same form as each task's own, that the derivation never samples
UNSAMPLED = {"P01": 37, "P02": 21, "P03": 49, "P04": 25, "P05": 17, "P06": 12, "T07": 9, "T08": 18, "T09": 23,
             "T10": 11, "T11": 15, "T12": 49, "T13": 25, "T14": 36, "T15": 216, "T16": 49, "T17": 20, "T18": 49,
             "T19": 36, "T20": 36, "T21": 49, "T22": 12, "T23": 216, "T24": 49, "T25": 25,
             "DIAMOND": 16}


def shape_at(shape: str, n: int, params: dict) -> tuple:
    """Evaluate a shape text such as "(L, L-1)" or "((n-1)/3, 4)" at size n; m and len(...) from ``params``."""
    body = shape.split(" where ")[0].strip()[1:-1]
    square, cube = math.isqrt(n), round(n ** (1 / 3))
    L = square if square * square == n else cube
    out = []
    for dim in [d.strip() for d in body.split(",") if d.strip()]:
        expr = re.sub(r"(\d)([nL])", r"\1*\2", dim)
        expr = re.sub(r'len\(params\["(\w+)"\]\)', lambda m: str(len(params[m.group(1)])), expr)
        out.append(expr)
    return tuple(out), L


def check_shapes(task, seed=11):
    iface = task_interface(task)
    n = UNSAMPLED[task.id]
    task.check_size(n)
    params = task.probe_params(n, seed, 0)
    assert [p.key for p in iface.params] == list(params), "every key, in order"
    for spec in iface.params:
        value = params[spec.key]
        if spec.shape is None:
            assert not isinstance(value, (list, tuple)), spec
            continue
        exprs, L = shape_at(spec.shape, n, params)
        if "m" in exprs:          # a dimension that varies with the instance
            continue
        expected = tuple(int(eval(e, {}, {"n": n, "L": L})) for e in exprs)   # noqa: S307 - test-only arithmetic
        assert np.asarray(value).shape == expected, (task.id, spec.key, spec.shape, n)
    return iface


@pytest.mark.parametrize("task_id", [t.id for t in all_tasks()])
def test_the_interface_states_every_key_with_a_shape_that_holds_at_unsampled_sizes(task_id):
    iface = check_shapes(get_task(task_id))
    text = iface.text()
    for spec in iface.params:
        assert f'params["{spec.key}"]' in text
    assert "Z_efficient(params, n)" in text and f"n = {', '.join(map(str, iface.probe_sizes))}" in text
    if iface.beta_key:
        assert "beta may be any positive float" in text


def test_p04_states_the_grid_shapes_couplings_and_log_z():
    iface = task_interface(get_task("P04"))
    specs = {p.key: p for p in iface.params}
    assert specs["Jh"].shape == "(L, L-1)" and specs["Jv"].shape == "(L-1, L)"
    assert specs["Jh"].values == "entries in {-1.0, 1.0}" and specs["beta"].shape is None
    assert iface.size_relation == "n = L*L (L = isqrt(n))"
    text = iface.text()
    assert "log_Z(params, n)" in text and "64, 256, 1024, 4096" in text
    for check in ("complexity audit", "class consistency", "physical assertions", "gauge_invariance", "beta_zero"):
        assert check in text
    assert "spin_flip" not in text            # P04 has no fields to negate


def test_edges_and_their_couplings_are_tied_when_their_count_varies():
    specs = {p.key: p for p in task_interface(get_task("T17")).params}
    assert specs["edges"].shape.startswith("(m, 2)") and specs["edges"].values.endswith("(spin indices)")
    assert specs["J"].shape == '(len(params["edges"]),)'
    assert {p.key: p.shape for p in task_interface(get_task("P06")).params}["edges"] == "(3n/2, 2)"


def test_the_overflow_size_agrees_with_exact_log_z():
    """Below the possible size every sample's exact log Z fits a float; at the certain size none does."""
    task = get_task("P02")
    iface = task_interface(task)
    assert iface.overflow_possible == 1000 and iface.overflow_certain == 10000
    for n in (100, iface.overflow_certain):
        samples = 5 if n in task.probe_sizes else 1
        values = [reference(task, task.probe_params(n, 0, k), n).log_z for k in range(samples)]
        if n < iface.overflow_possible:
            assert max(values) < FLOAT_MAX_LOG
        else:
            assert min(values) > FLOAT_MAX_LOG
    assert f"from n = {iface.overflow_certain}" in iface.log_z_text()


def test_quantities_other_than_z_say_what_is_returned_and_which_checks_apply():
    t19 = task_interface(get_task("T19"))
    assert not t19.positive and "Only Z_efficient(params, n) is called" in t19.text()
    assert [a for a, _ in t19.assertions] == ["unseen_parameters"] and "beta_zero" not in t19.text()
    t18 = task_interface(get_task("T18"))
    assert t18.positive and "natural log of the quantity" in t18.text()
    assert {p.key: p.shape for p in t18.params} == {"p": None, "syndrome": "(L, L)", "homology": "(2,)"}


def test_a_user_task_file_gets_its_interface_from_its_own_sampler(monkeypatch):
    monkeypatch.setattr(registry, "_user", {})
    task = register_task_file(EXAMPLE)
    iface = check_shapes(task)
    shapes = {p.key: p.shape for p in iface.params}
    assert shapes["J"] == "((n-1)/3, 4)" and shapes["h_node"] == "((n+2)/3,)"


class Trap:
    def __getattr__(self, name):
        raise AssertionError("the gold answer was read")


def test_nothing_reads_the_gold_answer():
    task = copy.copy(get_task("P04"))
    task.gold = Trap()
    assert task_interface(task).text()
    llm = LLMConfig(models=(ModelSpec("openai/x"),))
    proposer = LLM(task, LLMOptions(weight=1.0), ProposerContext(llm=llm))
    prompt = proposer.prompt(ProposalRequest(id="a", generation=0, slot=0, proposer="llm"))
    assert "the interface your program must meet" in prompt.messages[1]["content"]


def test_a_paraphrase_keeps_the_interface_of_the_task():
    task = get_task("P04")
    llm = LLMConfig(models=(ModelSpec("openai/x"),))
    canonical = LLM(task, LLMOptions(weight=1.0), ProposerContext(llm=llm))
    paraphrased = LLM(task, LLMOptions(weight=1.0), ProposerContext(llm=llm, variant="paraphrased"))
    request = ProposalRequest(id="a", generation=0, slot=0, proposer="llm")
    a, b = canonical.prompt(request).messages[1]["content"], paraphrased.prompt(request).messages[1]["content"]
    assert task.paraphrased in b and task.canonical not in b
    block = task_interface(task).text()
    assert block in a and block in b


def test_goal_wording_fits_fresh_drafts_mutations_and_crossovers():
    b = PromptBuilder()
    parent = ProgramView("par", "def Z_efficient(params, n):\n    return 1.0\n", "gauge", "O(n)", 0.5)
    other = ProgramView("oth", "def Z_efficient(params, n):\n    return 2.0\n", "pfaffian", "O(n)", 0.5)
    fresh = b.evolve("the task", interface="IFACE")
    mutation = b.evolve("the task", parent, interface="IFACE")
    crossover = b.evolve("the task", parent, [other], interface="IFACE")
    t = load_templates()
    users = [p.messages[1]["content"] for p in (fresh, mutation, crossover)]
    assert [p.meta["mode"] for p in (fresh, mutation, crossover)] == ["fresh", "mutation", "crossover"]
    assert t["goal_fresh"] in users[0] and "parent" not in users[0].lower()
    assert "Improve on the parent" not in users[0]
    assert t["goal_mutation"] in users[1] and t["goal_crossover"] in users[2]
    assert all("IFACE" in u for u in users) and "interface@" in fresh.prompt_id
    system = fresh.messages[0]["content"]
    assert "log_Z(params, n)" in system and "collections" in system and "{ALLOWED}" not in system


def test_the_papers_prompts_are_unchanged():
    t = load_templates()
    b = PromptBuilder()
    p = b.paper_initial("the task")
    assert p.messages == [{"role": "system", "content": fill(t["system"], LIBRARY=t["library"])},
                          {"role": "user", "content": fill(t["initial"], task_description="the task")}]
    assert "interface" not in p.messages[1]["content"]
    # the digests of the files as landed from the paper (search/prompts/CITATION.md)
    assert [t.digest(n) for n in ("system", "library", "initial", "feedback")] == ["53468b3d", "f07affc2", "c3d0afe3",
                                                                                 "13e4d9b7"]
