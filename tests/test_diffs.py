"""SEARCH/REPLACE diffs are applied strictly: exact whole-line matches, in order, every
failure named with the nearest passage, nothing skipped silently."""

import pytest

from search.diffs import DiffBlock, DiffError, apply_diff, apply_diff_blocks, nearest_passage, parse_diff_blocks

PARENT = """import math


def helper(K):
    return 2.0 * math.cosh(K)


def Z_efficient(params, n):
    K = params["beta"] * params["J"]
    return helper(K) ** n
"""


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def test_one_block_replaces_exactly_the_matched_lines():
    out = apply_diff(PARENT, block("    return helper(K) ** n", "    return 2.0 * helper(K) ** (n - 1)"))
    assert "return 2.0 * helper(K) ** (n - 1)" in out
    assert "return helper(K) ** n\n" not in out
    assert out.replace("2.0 * helper(K) ** (n - 1)", "helper(K) ** n") == PARENT


def test_blocks_apply_in_order_each_to_the_result_of_the_previous():
    text = "prose before\n" + block("    return helper(K) ** n", "    return helper(K) ** (n - 1)") + "between\n" \
        + block("    return helper(K) ** (n - 1)", "    return 2.0 * helper(K) ** (n - 1)")
    out = apply_diff(PARENT, text)
    assert "    return 2.0 * helper(K) ** (n - 1)\n" in out
    # the second block only matches after the first was applied: order matters
    with pytest.raises(DiffError):
        apply_diff_blocks(PARENT, list(reversed(parse_diff_blocks(text))))


def test_a_block_that_does_not_match_names_itself_and_shows_the_nearest_passage():
    text = block("def helper(K):", "def helper(K, scale=1.0):") + block(
        "    return helper(k) ** n", "    return helper(K) ** (n - 1)")
    with pytest.raises(DiffError) as info:
        apply_diff(PARENT, text)
    err = info.value
    assert len(err.problems) == 1
    msg = err.problems[0]
    assert msg.startswith("Diff block 2:") and "does not occur" in msg
    assert "    | " + "    return helper(K) ** n" in msg  # the nearest passage, quoted
    assert "lines 10-10" in msg and "similarity" in msg


def test_a_failing_block_is_never_skipped_even_when_others_apply():
    text = block("import math", "import math\nimport numpy as np") + block("no such line", "x = 1")
    with pytest.raises(DiffError) as info:
        apply_diff(PARENT, text)
    assert [p.split(":")[0] for p in info.value.problems] == ["Diff block 2"]


def test_every_failing_block_is_reported():
    text = block("nope one", "a") + block("import math", "import math  # ok") + block("nope three", "c")
    with pytest.raises(DiffError) as info:
        apply_diff(PARENT, text)
    assert [p.split(":")[0] for p in info.value.problems] == ["Diff block 1", "Diff block 3"]


def test_ambiguous_match_is_an_error_listing_the_lines():
    code = "x = 1\ny = 2\nx = 1\n"
    with pytest.raises(DiffError) as info:
        apply_diff(code, block("x = 1", "x = 3"))
    msg = str(info.value)
    assert "occurs 2 times" in msg and "lines 1, 3" in msg


def test_partial_line_is_not_a_match():
    with pytest.raises(DiffError, match="does not occur"):
        apply_diff(PARENT, block("return helper(K)", "return 1"))  # a fragment of a line, not whole lines
    with pytest.raises(DiffError, match="does not occur"):
        apply_diff(PARENT, block("    K = params[\"beta\"]", "    K = 0"))


def test_whitespace_must_match():
    with pytest.raises(DiffError):
        apply_diff(PARENT, block("  return helper(K) ** n", "  return 0"))


def test_multiline_search_and_deletion():
    out = apply_diff(PARENT, block("def helper(K):\n    return 2.0 * math.cosh(K)\n\n", ""))
    assert "def helper" not in out and "def Z_efficient" in out


def test_crlf_responses_are_normalised():
    text = block("    return helper(K) ** n", "    return 0.0").replace("\n", "\r\n")
    assert "    return 0.0\n" in apply_diff(PARENT, text)


@pytest.mark.parametrize("bad,expected", [
    ("<<<<<<< SEARCH\nimport math\n>>>>>>> REPLACE\n", "not followed by a '======='"),
    ("<<<<<<< SEARCH\nimport math\n=======\nimport numpy\n", "not closed"),
    (block("", "x = 1"), "SEARCH section is empty"),
    ("no blocks at all", "no SEARCH/REPLACE blocks"),
])
def test_malformed_blocks_are_errors(bad, expected):
    with pytest.raises(DiffError, match=expected):
        apply_diff(PARENT, bad)


def test_parse_keeps_block_order_and_content():
    blocks = parse_diff_blocks(block("a\nb", "c") + "text\n" + block("d", "e\nf"))
    assert blocks == [DiffBlock(1, "a\nb", "c"), DiffBlock(2, "d", "e\nf")]


def test_nearest_passage_finds_the_most_similar_window():
    start, ratio, passage = nearest_passage("    K = params['beta'] * params['J']", PARENT)
    assert passage == '    K = params["beta"] * params["J"]'
    assert start == 8 and 0.8 < ratio < 1.0
