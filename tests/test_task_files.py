"""User task files: the worked example (examples/tasks/diamond_chain.py) against its own formula and
independent methods, `evolve --task-file` on the commands, the clear errors, config `task_files`,
the run directory's copy, Ray workers that get the task as text, and the worked example in docs/tasks.md."""

import itertools
import json
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from evaluators.oracles.brute import brute_log_z
from evolve import cli
from evolve.config import ConfigError, config_from_dict, load_config
from tasks import registry
from tasks.registry import TaskFileError, get_task, register_task_file, register_task_payloads

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "tasks" / "diamond_chain.py"
CANDIDATE_PY = ROOT / "examples" / "tasks" / "diamond_chain_candidate.py"
CANDIDATE_JSON = ROOT / "examples" / "tasks" / "diamond_chain_candidate.json"
CONFIG = ROOT / "examples" / "tasks" / "diamond_chain.yaml"


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    """Every test starts with no user task registered, and leaves none behind for other modules."""
    monkeypatch.setattr(registry, "_user", {})


@pytest.fixture
def diamond():
    return register_task_file(EXAMPLE)


def all_states(n: int) -> np.ndarray:
    return np.array(list(itertools.product([1.0, -1.0], repeat=n)))


def description_energy(p: dict, states: np.ndarray) -> np.ndarray:
    """H of the canonical description, term by term: sigma_k = spin 3k, a_k = 3k+1, b_k = 3k+2."""
    L = len(p["K"])
    sig, a, b = states[:, 0::3], states[:, 1::3], states[:, 2::3]
    H = np.zeros(len(states))
    for k in range(L):
        J = p["J"][k]
        H -= (J[0] * sig[:, k] * a[:, k] + J[1] * sig[:, k] * b[:, k] + J[2] * a[:, k] * sig[:, k + 1]
              + J[3] * b[:, k] * sig[:, k + 1] + p["K"][k] * a[:, k] * b[:, k])
        H -= p["h_dec"][k][0] * a[:, k] + p["h_dec"][k][1] * b[:, k]
    for k in range(L + 1):
        H -= p["h_node"][k] * sig[:, k]
    return H


def paraphrase_log_z(p: dict, n: int) -> float:
    """log Z of the paraphrased description, with its own variables: hubs x, sides y, z in the order
    (x_0, y_0, z_0, x_1, ...), the exponent +beta * (sum of weighted products)."""
    L = len(p["K"])
    total = []
    for s in itertools.product([1, -1], repeat=n):
        x, y, z = s[0::3], s[1::3], s[2::3]
        e = sum(p["J"][k][0] * x[k] * y[k] + p["J"][k][1] * x[k] * z[k] + p["J"][k][2] * y[k] * x[k + 1]
                + p["J"][k][3] * z[k] * x[k + 1] + p["K"][k] * y[k] * z[k]
                + p["h_dec"][k][0] * y[k] + p["h_dec"][k][1] * z[k] for k in range(L))
        e += sum(p["h_node"][k] * x[k] for k in range(L + 1))
        total.append(p["beta"] * e)
    return float(np.logaddexp.reduce(total))


# -- the example task ---------------------------------------------------------------------------

@pytest.mark.parametrize("n", [7, 10])
def test_ir_is_the_descriptions_formula(diamond, n):
    from evaluators.oracles.registry import exact_log_z

    for sample in range(2):
        p = diamond.probe_params(n, seed=5, sample=sample)
        model = diamond.to_model(p, n)
        states = all_states(n)
        H = description_energy(p, states)
        np.testing.assert_allclose(model.energy(states), H, rtol=0, atol=1e-12)
        log_z = float(np.logaddexp.reduce(-p["beta"] * H))
        assert exact_log_z(model).log_z == pytest.approx(log_z, rel=1e-12)
        assert paraphrase_log_z(p, n) == pytest.approx(log_z, rel=1e-12)


def test_structure_analysis_picks_oracles_and_classes(diamond):
    """Nothing in the framework names DIAMOND: the analysis of its models decides."""
    from evaluators.checks.classes import admissible, polynomial_classes
    from evaluators.oracles.registry import exact_log_z, oracle_for
    from tasks.family import family_structure

    fam = family_structure(diamond, sizes=(7, 13, 301, 1501))
    assert fam.pathwidth_growth == "bounded" and fam.treewidth_growth == "bounded" and fam.has_fields
    # a chain of diamonds is outerplanar: one ghost spin joined to every site keeps it planar, so the fields
    # are no obstacle to a Pfaffian (pfaffian and its alias free_fermion are admitted beside the transfer matrix)
    assert fam.ghost_planar
    assert set(polynomial_classes(fam)) == {"transfer_matrix", "treewidth_bounded", "pfaffian", "free_fermion"}
    assert admissible(diamond.gold.tractable_class, fam)[0]
    for wrong in ("gauge", "no_efficient_known"):
        assert not admissible(wrong, fam)[0], wrong

    small = diamond.to_model(diamond.probe_params(13, 0, 0), 13)
    brute = exact_log_z(small, "brute").log_z
    assert exact_log_z(small, "transfer_matrix").log_z == pytest.approx(brute, rel=1e-12)
    assert exact_log_z(small, "tensor_network").log_z == pytest.approx(brute, rel=1e-12)

    p = diamond.probe_params(301, 0, 0)
    big = diamond.to_model(p, 301)
    assert oracle_for(big) == "elimination"                         # width 2: variable elimination
    reference = runpy.run_path(str(CANDIDATE_PY))["log_Z"](p, 301)   # decoration-iteration, in-process
    assert exact_log_z(big).log_z == pytest.approx(reference, rel=1e-11)
    assert exact_log_z(big, "transfer_matrix").log_z == pytest.approx(reference, rel=1e-11)


def test_reader_agrees_with_to_model_and_feeds_the_structural_proposer(diamond):
    from search.structural import StructuralProposer
    from search.structural.readers import reader_disagreement

    for n in (*diamond.probe_sizes, 301):
        assert reader_disagreement(diamond, diamond.probe_params(n, 3, 1), n) is None
    cand = StructuralProposer(0).propose(diamond)
    assert cand.code and cand.tractable_class == "transfer_matrix"


def test_reference_candidate_files_agree():
    claims = json.loads(CANDIDATE_JSON.read_text())
    assert claims["code"] == CANDIDATE_PY.read_text(), "regenerate diamond_chain_candidate.json from the .py"
    assert claims["tractable_class"] == "transfer_matrix" and claims["complexity_O"] == "O(n)"


# -- the command line ---------------------------------------------------------------------------

def test_verify_accepts_the_reference_candidate(capsys):
    rc = cli.main(["verify", "--task-file", str(EXAMPLE), "--task", "DIAMOND", "--samples", "1", "--json",
                   str(CANDIDATE_JSON)])
    verdict = json.loads(capsys.readouterr().out)
    assert rc == 0 and verdict["verdict"] == "accept" and verdict["task"] == "DIAMOND", verdict
    assert verdict["numerical"]["largest_n_verified"] == 4501
    assert verdict["class"]["consistent"] is True and verdict["physics"]["passed"] is True
    assert verdict["complexity"]["honest"] is not False   # None when timings are too noisy to fit


def test_verify_rejects_a_candidate_that_forgets_the_dimer_coupling(tmp_path, capsys):
    code = CANDIDATE_PY.read_text()
    assert "+ cell(K) * a * b" in code
    wrong = tmp_path / "no_dimer.py"
    wrong.write_text(code.replace("+ cell(K) * a * b", ""))
    rc = cli.main(["verify", "--task", "diamond", "--task-file", str(EXAMPLE), "--samples", "1", "--json", str(wrong)])
    verdict = json.loads(capsys.readouterr().out)
    assert rc == 1 and verdict["verdict"] == "reject" and not verdict["numerical"]["passed"]


def test_tasks_lists_the_user_task_with_tier_gold_and_sizes(capsys):
    assert cli.main(["--task-file", str(EXAMPLE), "tasks"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    (row,) = [r for r in rows if r and r[0] == "DIAMOND"]
    assert row[1:] == ["1", "Z", "transfer_matrix", "O(n)", "7,10,13", "301,1501,4501"]
    assert "P01" in [r[0] for r in rows if r], "the catalogue is still listed"


def test_oracle_and_task_file_after_the_command(capsys):
    rc = cli.main(["oracle", "--task-file", str(EXAMPLE), "--task", "DIAMOND", "--n", "10", "--seed", "2", "--json"])
    assert rc == 0
    got = json.loads(capsys.readouterr().out)
    task = get_task("DIAMOND")
    p = task.probe_params(10, 2, 0)
    assert got["log_z"] == pytest.approx(float(np.logaddexp.reduce(-p["beta"] * description_energy(p, all_states(10)))),
                                         rel=1e-12)


def test_without_the_file_the_task_is_unknown_and_the_message_says_how(capsys):
    assert cli.main(["oracle", "--task", "DIAMOND", "--n", "7", "--seed", "0"]) == 2
    assert "--task-file" in capsys.readouterr().err


def variant(tmp_path: Path, old: str, new: str, name: str = "task.py") -> Path:
    text = EXAMPLE.read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return path


BROKEN = {
    "missing": (None, r"task file not found: .*nowhere\.py"),
    "no TASK": (("TASK = DiamondChain()", ""), r"defines no TASK; end it with TASK = YourTask\(\)"),
    "TASK a class": (("TASK = DiamondChain()", "TASK = DiamondChain"), r"TASK is the class DiamondChain, not an instance"),
    "TASK a number": (("TASK = DiamondChain()", "TASK = 3"), r"TASK is a int, not an instance"),
    "catalogued id": (('id = "DIAMOND"', 'id = "P01"'), r"id P01 is already the catalogued task"),
    "syntax error": (("def cells(n: int) -> int:", "def cells(n: int) -> int"), r"line 15: syntax error"),
    "error on import": (("import numpy as np\n", "import numpy as np\nnp.frobnicate()\n"),
                        r"line 9: AttributeError: .*frobnicate"),
    "abstract": (("    def to_model(self, params, n):", "    formula = None\n\n    def to_model_(self, params, n):"),
                 r"TypeError: Can't instantiate abstract class DiamondChain"),       # neither to_model nor formula
    "bad model": (("return IsingModel.from_arrays(n, beta, edges, couplings, h)", "return None"),
                  r"to_model\(params, 7\) must return a tasks.model.IsingModel"),
    "bad ladder": (("(301, 1501, 4501)", "(301, 1500)"), r"n=1500 of probe_sizes/ladder_sizes is refused by check_size"),
    "bad gold": (('Gold("transfer_matrix", "O(n)")', 'Gold("transfer matrix", "O(n)")'), r"gold must be Gold\("),
    "lower-case id": (('id = "DIAMOND"', 'id = "diamond"'), r"task id 'diamond' must be 1-32 upper-case"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_task_files_give_one_clear_line_and_exit_2(tmp_path, capsys, case):
    edit, message = BROKEN[case]
    path = tmp_path / "nowhere.py" if edit is None else variant(tmp_path, *edit)
    with pytest.raises(TaskFileError, match=message):
        register_task_file(path)
    assert cli.main(["--task-file", str(path), "tasks"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err), err
    assert str(path.name) in err


def test_a_task_file_without_to_model_reads_its_formula(tmp_path, diamond):
    """The worked example with its to_model removed: the model comes from the formula's compiled reader,
    the same couplings, fields and log Z as the hand-written to_model at every probe size."""
    text = EXAMPLE.read_text().replace("    def to_model(self, params, n):", "    def to_model_(self, params, n):")
    path = tmp_path / "formula_only.py"
    path.write_text(text.replace('id = "DIAMOND"', 'id = "DIAMOND_F"'))
    task = register_task_file(path)
    for n in task.probe_sizes:
        params = diamond.probe_params(n, 3, 0)
        got, want = task.to_model(params, n), diamond.to_model(params, n)
        assert got.beta == want.beta and np.allclose(got.fields, want.fields, rtol=0, atol=1e-15)
        assert brute_log_z(got) == pytest.approx(brute_log_z(want), rel=1e-13)


GRID_IN_A_FIELD = '''
from tasks.base import Gold, Task, sample_beta
from tasks.formula import Derived, Formula, Param, term


class GridInAField(Task):
    id = "USER_GRID_H"
    title = "2D Ising ferromagnet in a uniform field"
    canonical = paraphrased = "Z of an open L x L Ising ferromagnet in a uniform field H."
    gold = Gold("no_efficient_known", "O(2^sqrt(n))")
    probe_sizes = (9, 16)
    ladder_sizes = (64, 256)
    formula = Formula(
        shape=("L", "L"),
        params=(Param("beta", "a real number"), Param("J", "a real number"), Param("H", "a real number")),
        terms=(term("J * s[r][c] * s[r][c + 1]", ("r", "0", "L - 1"), ("c", "0", "L - 2")),
               term("J * s[r][c] * s[r + 1][c]", ("r", "0", "L - 2"), ("c", "0", "L - 1")),
               term("H * s[r][c]", ("r", "0", "L - 1"), ("c", "0", "L - 1"))),
        derived=(Derived("L", "isqrt(n)"),),
    )

    def sample_params(self, rng, n):
        return {"beta": sample_beta(rng), "J": 1.0, "H": float(rng.uniform(-1, 1))}


TASK = GridInAField()
'''


def test_l_in_a_claim_about_a_user_grid_is_the_side_of_the_grid(tmp_path):
    """A formula-only task on an L x L array that does not set ``square_lattice``: "L" in a claim is
    sqrt(n), as for the catalogue's grids. The derived program's O(L^2 2^(L)), priced with L = n, had
    its n = 64 rung refused as 1e12 s (256 spins x 2^8 states: well under a second)."""
    from evaluators.checks.claimed_cost import claimed_price
    from tasks.family import side_is_sqrt_n

    path = tmp_path / "grid_in_a_field.py"
    path.write_text(GRID_IN_A_FIELD)
    task = register_task_file(path)
    assert not task.square_lattice and side_is_sqrt_n(task, "O(L^2 2^(L))")
    assert not side_is_sqrt_n(task, "O(n^3)")                       # no L to read
    price = claimed_price("O(L^2 2^(L))", side_is_sqrt_n(task, "O(L^2 2^(L))"), [(16, 0.004)])
    assert price.seconds_at(64) < 1.0            # 0.004 s x (64 / 16) x 2^(8 - 4) = 0.26 s
    assert price.too_costly(64, 20.0) is None
    decorated = register_task_file(ROOT / "examples" / "tasks" / "decorated_torus.py")   # an L x 3L array
    assert not side_is_sqrt_n(decorated, "O(L^2 2^(L))")


def test_loading_is_idempotent_by_content_and_ids_stay_unique(tmp_path, diamond):
    assert register_task_file(EXAMPLE) is diamond
    copy = tmp_path / "copy.py"
    shutil.copy(EXAMPLE, copy)
    assert register_task_file(copy) is diamond, "the same text from elsewhere is the same task"
    other = variant(tmp_path, "(7, 10, 13)", "(7, 10)", name="other.py")
    with pytest.raises(TaskFileError, match=r"id DIAMOND is already registered .*diamond_chain\.py defines it too"):
        register_task_file(other)
    assert [f.task_id for f in registry.registered_task_files()] == ["DIAMOND"]
    assert diamond.citation != registry.STATMECHBENCH_CITATION


def test_payloads_register_without_the_file_and_refuse_tampering(tmp_path):
    copy = tmp_path / "diamond.py"
    shutil.copy(EXAMPLE, copy)
    payload = register_task_file(copy) and registry.user_task_file("DIAMOND").payload()
    copy.unlink()
    registry._user.clear()
    (task,) = register_task_payloads([payload])
    assert task.id == "DIAMOND" and get_task("diamond") is task
    with pytest.raises(TaskFileError, match="does not match its SHA-256"):
        register_task_payloads([{**payload, "source": payload["source"] + "\n# edited\n"}])


# -- configs and run directories ----------------------------------------------------------------

def test_config_task_files_are_relative_to_the_config_file(tmp_path, monkeypatch):
    (tmp_path / "tasks").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "tasks" / "diamond.py")
    cfg_path = tmp_path / "run.yaml"
    cfg_path.write_text(yaml.safe_dump({"task": "diamond", "task_files": ["tasks/diamond.py"]}))
    monkeypatch.chdir(ROOT)
    cfg = load_config(cfg_path)
    assert cfg.task_files == [str(tmp_path / "tasks" / "diamond.py")]
    assert get_task("DIAMOND").gold.tractable_class == "transfer_matrix"
    assert load_config(CONFIG).task == "DIAMOND", "the shipped config loads"


@pytest.mark.parametrize("raw,match", [
    ({"task": "DIAMOND", "task_files": "x.py"}, r"`task_files` must be list"),
    ({"task": "DIAMOND", "task_files": [3]}, r"`task_files\[0\]` must be str"),
    ({"task": "DIAMOND", "task_files": ["nowhere.py"]}, r"`task_files\[0\]`: task file not found"),
    ({"task": "DIAMOND"}, r"`task`: unknown task 'DIAMOND'"),
])
def test_config_errors_name_the_key(tmp_path, raw, match):
    with pytest.raises(ConfigError, match=match):
        config_from_dict(raw, base_dir=tmp_path)


def test_run_directory_keeps_the_task_file_for_resume(tmp_path):
    from evolve.store.journal import read_header
    from evolve.store.run_store import RunStore, read_config

    original = tmp_path / "mine" / "diamond.py"
    original.parent.mkdir()
    shutil.copy(EXAMPLE, original)
    cfg = config_from_dict({"task": "DIAMOND", "task_files": [str(original)]})
    with RunStore.create(tmp_path / "runs", cfg.to_dict(), cfg.task) as store:
        run_dir = store.path
    manifest = json.loads((run_dir / "task_files" / "manifest.json").read_text())
    assert (run_dir / "task_files" / "diamond.py").read_text() == EXAMPLE.read_text()
    assert manifest[0]["sha256"] == registry.user_task_file("DIAMOND").sha256 == \
        read_header(run_dir / "journal.msgpack")["task_file_sha256"]
    stored = read_config(run_dir)
    assert stored["task_files"] == ["task_files/diamond.py"]
    original.unlink()                               # the user moved or edited their file
    registry._user.clear()                          # as in a new `evolve resume` process
    resumed = config_from_dict(stored, base_dir=run_dir)
    assert resumed.task == "DIAMOND" and get_task("DIAMOND").probe_sizes == (7, 10, 13)


# -- workers in other processes -------------------------------------------------------------------

WORKER_SCRIPT = """
import json, sys
from tasks.registry import task_ids
from evaluators.verify import VerifyOptions
from evolve.engine.evaluator_worker import EvaluatorWorker
from evolve.engine.proposer_worker import ProposerWorker
from search.proposers import ProposerContext
from search.proposers.structural import StructuralOptions
from search.records import ProposalRequest

assert "DIAMOND" not in task_ids()
files = json.load(sys.stdin)
proposer = ProposerWorker("DIAMOND", {"structural": StructuralOptions()}, ProposerContext(), task_files=files)
candidate = proposer.propose(ProposalRequest("g0000s00", 0, 0, "structural"))
evaluator = EvaluatorWorker("DIAMOND", VerifyOptions(samples=1, ladder=False, judge=False), task_files=files)
try:
    print(json.dumps(evaluator.evaluate(candidate).verdict.to_dict()))
finally:
    evaluator.close()
"""


def test_workers_in_a_fresh_process_get_the_task_as_text(tmp_path):
    """What drive() ships to Ray actors: a process that never saw the file proposes and judges."""
    from evolve.engine.runtime import task_file_payloads

    register_task_file(EXAMPLE)
    files = task_file_payloads("DIAMOND")
    assert task_file_payloads("P01") == []
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run([sys.executable, "-c", WORKER_SCRIPT], input=json.dumps(files), cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    verdict = json.loads(out.stdout.strip().splitlines()[-1])
    assert verdict["task"] == "DIAMOND" and verdict["verdict"] == "accept", verdict



@pytest.fixture(scope="module")
def ray_cluster(ray_session):
    """The session's Ray (tests/conftest.py): one ray.init per worker, not one per file."""


@pytest.mark.slow
def test_launch_on_a_user_task_whose_file_is_gone(ray_cluster, tmp_path):
    """The workers are other processes: they get the task file's text from the driver, so the
    structural proposer writes a program for DIAMOND and an evaluator accepts it after the file is
    deleted from disk."""
    from evolve.store.journal import read_journal
    from evolve.engine.progress import Progress
    from evolve.store.run_store import RunStore
    from evolve.engine.runtime import drive

    copy = tmp_path / "diamond.py"
    shutil.copy(EXAMPLE, copy)
    raw = {**yaml.safe_load(CONFIG.read_text()), "task_files": [str(copy)],
           "budgets": {"proposals": 1, "evaluations": 1, "wall_time_s": 300},
           "evaluator": {"samples": 1, "ladder": False, "judge": False},
           "ray": {"num_evaluators": 1, "num_proposers": 1, "batch_size": 1, "evaluator_cpus": 1.0}}
    cfg = config_from_dict(raw)
    copy.unlink()
    store = RunStore.create(tmp_path / "runs", cfg.to_dict(), cfg.task)
    try:
        drive(cfg, store, progress=Progress(cfg.budgets, stream=open(os.devnull, "w")))
    finally:
        store.close()
    evals = [r for r in read_journal(store.path / "journal.msgpack").records if r["kind"] == "evaluation"]
    assert len(evals) == 1 and evals[0]["verdict"]["verdict"] == "accept", evals
    assert evals[0]["verdict"]["task"] == "DIAMOND"


# -- the worked example in docs/tasks.md ----------------------------------------------------------

DOC = ROOT / "docs" / "tasks.md"
DOC_FILES = ("examples/tasks/diamond_chain.py", "examples/tasks/diamond_chain_candidate.py", "examples/tasks/diamond_chain.yaml")


def doc_blocks() -> dict[str, str]:
    """path -> the fenced block that follows `<!-- file: path -->` in docs/tasks.md."""
    text = DOC.read_text()
    found = re.findall(r"<!-- file: (\S+) -->\s*\n```[a-z]*\n(.*?)^```", text, flags=re.S | re.M)
    return dict(found)


def test_the_documented_worked_example_is_the_example_files():
    blocks = doc_blocks()
    for path in DOC_FILES:
        assert path in blocks, f"docs/tasks.md lost the block for {path}"
        assert blocks[path] == (ROOT / path).read_text(), f"docs/tasks.md's copy of {path} differs from the file"


def test_the_documented_commands_parse_and_name_existing_files():
    text = DOC.read_text()
    match = re.search(r"<!-- user-task-commands -->\s*\n```[a-z]*\n(.*?)^```", text, flags=re.S | re.M)
    assert match is not None, "docs/tasks.md lost its `<!-- user-task-commands -->` block"
    commands = [line[len("$ "):] for line in match.group(1).splitlines() if line.startswith("$ evolve ")]
    assert len(commands) >= 4
    parser = cli.build_parser()
    for command in commands:
        argv = shlex.split(command.split("#")[0])[1:]
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"docs/tasks.md's command no longer parses: {command}")
        for word in argv:
            if word.endswith((".py", ".json", ".yaml")):
                assert (ROOT / word).is_file(), f"{command}: {word} does not exist"
