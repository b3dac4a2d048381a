"""Every shape of model answer becomes code plus claims, or a ParseFailure with a reason;
the Candidate record round-trips through msgpack."""

import json
import random

import msgpack
import pytest

from conftest import FIXTURES, fixture_candidates
from search.candidate import SCHEMA, Candidate
from search.parsing import ParsedResponse, ParseFailure, class_from_prose, complexity_from_prose, parse_response

CODE = (FIXTURES / "p01_correct.py").read_text()
CLAIMS = {"tractable_class": "transfer_matrix", "complexity_O": "O(n)", "confidence": 0.9,
          "justification": "Bond variables are independent."}
PAPER_JSON = json.dumps({**CLAIMS, "code": CODE}, indent=2)


def ok(result) -> ParsedResponse:
    assert isinstance(result, ParsedResponse), result
    return result


def assert_claims(p: ParsedResponse):
    assert p.code == CODE
    assert (p.tractable_class, p.complexity_O, p.confidence) == ("transfer_matrix", "O(n)", 0.9)
    assert p.justification == "Bond variables are independent."


def test_the_papers_json_object():
    p = ok(parse_response(PAPER_JSON))
    assert p.format == "json"
    assert_claims(p)


def test_json_in_a_markdown_fence():
    p = ok(parse_response(f"Here you go.\n```json\n{PAPER_JSON}\n```\n"))
    assert p.format == "json_fenced"
    assert_claims(p)


def test_json_with_trailing_and_leading_prose():
    p = ok(parse_response(f"{PAPER_JSON}\n\nI hope this helps! The {{key}} idea is gauge-free."))
    assert p.format == "json_prose"
    assert_claims(p)
    p = ok(parse_response(f"Thinking about it... the chain is 1D.\n{PAPER_JSON}\nDone."))
    assert_claims(p)


def test_json_with_literal_newlines_inside_the_code_string():
    raw = '{"tractable_class": "transfer_matrix", "complexity_O": "O(n)", "confidence": 0.9, ' \
          '"justification": "Bond variables are independent.", "code": "' + CODE.replace('"', '\\"') + '"}'
    assert "\n" in raw  # not valid strict JSON
    assert_claims(ok(parse_response(raw)))


def test_reasoning_scratchpad_and_drafts_are_skipped_for_the_final_answer():
    draft = json.dumps({**CLAIMS, "tractable_class": "pfaffian", "code": "def Z_efficient(p, n):\n    return 0.0\n"})
    text = f"<think>first try: {draft} -- no, wrong</think>\nDraft:\n{draft}\nFinal answer:\n{PAPER_JSON}\n"
    p = ok(parse_response(text))
    assert_claims(p)
    fenced = f"```json\n{draft}\n```\nCorrected:\n```json\n{PAPER_JSON}\n```"
    assert_claims(ok(parse_response(fenced)))
    assert "only reasoning" in parse_response("<think>hmm</think>").reason


def test_class_label_spelling_is_normalised_to_the_library():
    p = ok(parse_response(json.dumps({**CLAIMS, "tractable_class": "Transfer-Matrix", "code": CODE})))
    assert p.tractable_class == "transfer_matrix" and "read as the library label" in p.notes[0]
    p = ok(parse_response(json.dumps({**CLAIMS, "tractable_class": "Bethe ansatz", "code": CODE})))
    assert p.tractable_class == "Bethe ansatz" and not p.notes  # not a label: kept for the class check to judge


def test_code_string_wrapped_in_its_own_fence_is_unwrapped():
    raw = json.dumps({**CLAIMS, "code": f"```python\n{CODE}```"})
    assert ok(parse_response(raw)).code.strip() == CODE.strip()


def test_a_python_block_with_the_claims_in_prose():
    text = ("This is a 1D chain, so the class is transfer_matrix and the cost is O(n) time.\n"
            f"```python\n{CODE}```\nConfidence: 0.8")
    p = ok(parse_response(text))
    assert p.format == "python_prose"
    assert p.code == CODE
    assert (p.tractable_class, p.complexity_O, p.confidence) == ("transfer_matrix", "O(n)", 0.8)


def test_prose_explicit_class_wins_and_percent_confidence():
    text = (f"It is not pfaffian. tractable_class: gauge. Complexity: O(n^3) overall; sorting is O(n log n).\n"
            f"I am 75% sure, confidence 75%.\n```python\n{CODE}```")
    p = ok(parse_response(text))
    assert p.tractable_class == "gauge"
    assert p.complexity_O == "O(n^3)"
    assert p.confidence == 0.75


def test_prose_helpers():
    assert class_from_prose("we use free_fermion methods; transfer_matrix is too slow") == "free_fermion"
    assert class_from_prose("nothing here") is None
    assert class_from_prose("my_pfaffian_helper is a name") is None  # labels are whole words
    assert complexity_from_prose("it costs O(L * 2^(2L)) per sample") == "O(L * 2^(2L))"
    assert complexity_from_prose("no big-O here") is None


def test_python_fence_chosen_is_the_one_defining_z_efficient():
    text = f"```python\nimport numpy as np\nx = 1\n```\nand the solution\n```python\n{CODE}```"
    assert ok(parse_response(text)).code == CODE


@pytest.mark.parametrize("text,reason", [
    ("", "empty"),
    ("   \n", "empty"),
    (None, "empty"),
    ('{"tractable_class": "gauge", "code": "def Z_efficient(params, n):\n return 1", ', "not valid JSON"),
    ('```json\n{"tractable_class": "gauge", "complexity_O": O(n)}\n```', "not valid JSON"),
    ('{"tractable_class": "gauge", "complexity_O": "O(n)"}', "no non-empty 'code'"),
    ('{"tractable_class": "gauge", "code": ""}', "no non-empty 'code'"),
    ("I think this is a transfer matrix problem, Z = 2 (2 cosh K)^(n-1).", "no JSON object"),
])
def test_unparseable_answers_are_failures_with_a_reason(text, reason):
    out = parse_response(text)
    assert isinstance(out, ParseFailure) and out.kind == "parse"
    assert reason in out.reason


def test_diff_against_a_parent_with_claims_in_json():
    text = ('{"tractable_class": "transfer_matrix", "complexity_O": "O(n)", "confidence": 0.7}\n'
            "<<<<<<< SEARCH\n    return math.exp(log_Z(params, n))\n=======\n"
            "    return float(math.exp(log_Z(params, n)))\n>>>>>>> REPLACE\n")
    p = ok(parse_response(text, CODE, {"tractable_class": "gauge", "justification": "old"}))
    assert p.format == "diff"
    assert "return float(math.exp(log_Z(params, n)))" in p.code
    assert (p.tractable_class, p.confidence, p.justification) == ("transfer_matrix", 0.7, "old")


def test_diff_inherits_the_parents_claims_when_none_are_given():
    text = "<<<<<<< SEARCH\nimport math\n=======\nimport math\nimport numpy\n>>>>>>> REPLACE"
    p = ok(parse_response(text, CODE, CLAIMS))
    assert p.code.startswith("# P01") and "import numpy" in p.code
    assert (p.tractable_class, p.complexity_O, p.confidence) == ("transfer_matrix", "O(n)", 0.9)


def test_diff_that_does_not_apply_is_a_diff_failure_with_the_nearest_match():
    text = "<<<<<<< SEARCH\n    return math.exp(logZ(params, n))\n=======\n    return 1.0\n>>>>>>> REPLACE"
    out = parse_response(text, CODE, CLAIMS)
    assert isinstance(out, ParseFailure) and out.kind == "diff"
    assert "Diff block 1" in out.reason and "return math.exp(log_Z(params, n))" in out.reason


def test_diff_without_a_parent_is_a_failure():
    out = parse_response("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE", None)
    assert isinstance(out, ParseFailure) and "no parent" in out.reason


def test_fixture_candidates_round_trip_through_the_paper_schema():
    for name, claims in fixture_candidates().items():
        code = (FIXTURES / name).read_text()
        claims = {k: v for k, v in claims.items() if k != "task"}
        p = ok(parse_response(json.dumps({**claims, "code": code})))
        assert p.code == code and p.tractable_class == claims["tractable_class"]


def test_random_garbage_never_raises():
    rng = random.Random(7)
    alphabet = '{}[]":,`\n <>=SEARCHREPLACE#01abc\\O()python'
    pieces = [PAPER_JSON[:50], "```python\n", "```", "<<<<<<< SEARCH\n", "=======\n", ">>>>>>> REPLACE\n", "def Z_efficient(params, n):\n"]
    for _ in range(400):
        text = "".join(rng.choice(pieces) if rng.random() < 0.3 else rng.choice(alphabet) for _ in range(rng.randint(0, 120)))
        out = parse_response(text, parent_code=CODE if rng.random() < 0.5 else None)
        assert isinstance(out, (ParsedResponse, ParseFailure))
        if isinstance(out, ParseFailure):
            assert out.reason


# -- the Candidate record -------------------------------------------------------------------

def test_candidate_round_trips_through_msgpack_and_makes_a_submission():
    c = Candidate(id="c1", task="P01", code=CODE, model="openai/x", prompt_id="system@1+initial@2",
                  parent_ids=["p0", "i1"], tokens_in=10, tokens_out=20, cost_usd=0.5, prompt_meta={"negative": True},
                  **CLAIMS)
    d = msgpack.unpackb(msgpack.packb(c.to_dict()))
    back = Candidate.from_dict(d)
    assert back == c and back.schema == SCHEMA
    sub = back.to_submission()
    assert (sub.code, sub.tractable_class, sub.confidence) == (CODE, "transfer_matrix", 0.9)


def test_failed_candidate_has_no_submission_and_unknown_schema_is_refused():
    f = Candidate.failed("c2", "P01", "the response was empty", "parse")
    assert not f.ok
    with pytest.raises(ValueError, match="no code"):
        f.to_submission()
    with pytest.raises(ValueError, match="schema"):
        Candidate.from_dict({**f.to_dict(), "schema": 99})
    with pytest.raises(ValueError, match="error_kind"):
        Candidate(id="c3", task="P01", error_kind="bogus")


def test_verify_and_a_run_read_one_answer_the_same(tmp_path):
    """One reader of the answer schema: a percentage confidence, a label written another way and a fenced
    code string read alike by `evolve verify` on a file and by a run's parser of the same answer."""
    import json

    from evaluators.submission import load_submission
    from search.parsing import parse_response

    answer = {"tractable_class": "Transfer-Matrix", "complexity_O": "O(n)", "confidence": "90%",
              "justification": "rows", "code": "```python\ndef Z_efficient(params, n):\n    return 1.0\n```"}
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(answer))
    sub, parsed = load_submission(path), parse_response(json.dumps(answer))
    assert (sub.tractable_class, sub.confidence, sub.code) == ("transfer_matrix", 0.9,
                                                               "def Z_efficient(params, n):\n    return 1.0")
    assert (parsed.tractable_class, parsed.complexity_O, parsed.confidence, parsed.code) == \
        (sub.tractable_class, sub.complexity_O, sub.confidence, sub.code)
