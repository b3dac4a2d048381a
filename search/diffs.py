"""SEARCH/REPLACE diff blocks against a parent program, applied strictly.

Format (the AlphaEvolve / OpenEvolve convention)::

    <<<<<<< SEARCH
    exact lines of the parent
    =======
    the lines that replace them
    >>>>>>> REPLACE

Blocks are applied in order, each to the result of the ones before. A SEARCH text must occur
exactly once, as whole lines: no match is an error that names the block and quotes the nearest passage of the
program (difflib) so the model can correct itself; several matches are an error too (ambiguous).
Nothing is ever skipped silently: if any block fails, no code is produced and
:class:`DiffError` lists every failing block.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_SEARCH = re.compile(r"^<{5,9} ?SEARCH\s*$")
_DIVIDER = re.compile(r"^={5,9}\s*$")
_REPLACE = re.compile(r"^>{5,9} ?REPLACE\s*$")


@dataclass(frozen=True)
class DiffBlock:
    index: int  # 1-based, in the order the model wrote them
    search: str
    replace: str


class DiffError(ValueError):
    """The diff cannot be applied. ``problems`` has one message per failing block."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n\n".join(self.problems))


def has_diff_blocks(text: str) -> bool:
    return any(_SEARCH.match(line) for line in _lines(text))


def parse_diff_blocks(text: str) -> list[DiffBlock]:
    """Every SEARCH/REPLACE block in ``text``; DiffError for a block with missing markers."""
    lines = _lines(text)
    blocks: list[DiffBlock] = []
    problems: list[str] = []
    i = 0
    while i < len(lines):
        if not _SEARCH.match(lines[i]):
            i += 1
            continue
        index = len(blocks) + len(problems) + 1
        j = i + 1
        while j < len(lines) and not _DIVIDER.match(lines[j]) and not _SEARCH.match(lines[j]):
            j += 1
        if j >= len(lines) or not _DIVIDER.match(lines[j]):
            problems.append(f"Diff block {index}: the SEARCH section is not followed by a '=======' line.")
            i = j
            continue
        k = j + 1
        while k < len(lines) and not _REPLACE.match(lines[k]) and not _SEARCH.match(lines[k]):
            k += 1
        if k >= len(lines) or not _REPLACE.match(lines[k]):
            problems.append(f"Diff block {index}: the REPLACE section is not closed by a '>>>>>>> REPLACE' line.")
            i = k
            continue
        blocks.append(DiffBlock(index, "\n".join(lines[i + 1:j]), "\n".join(lines[j + 1:k])))
        i = k + 1
    if problems:
        raise DiffError(problems)
    return blocks


def apply_diff_blocks(code: str, blocks: list[DiffBlock]) -> str:
    """``code`` with every block applied in order; DiffError naming each block that fails.

    After a failing block the remaining ones are still tried against the text so far, so the
    error reports all of them at once; the result is an error whenever any block failed.
    """
    if not blocks:
        raise DiffError(["The response contains no SEARCH/REPLACE blocks."])
    text = _normalise(code)
    problems: list[str] = []
    for block in blocks:
        search, replace = _normalise(block.search), _normalise(block.replace)
        if not search.strip():
            problems.append(f"Diff block {block.index}: the SEARCH section is empty; it must quote lines of the parent program.")
            continue
        found = occurrences(search, text)
        if len(found) == 1:
            text = text[:found[0]] + replace + text[found[0] + len(search):]
        elif not found:
            problems.append(_no_match_message(block, search, text))
        else:
            problems.append(_ambiguous_message(block, search, text, found))
    if problems:
        raise DiffError(problems)
    return text


def apply_diff(code: str, response: str) -> str:
    """Parse the blocks in ``response`` and apply them to ``code`` (DiffError on any problem)."""
    return apply_diff_blocks(code, parse_diff_blocks(response))


# -- messages -------------------------------------------------------------------------------

def _no_match_message(block: DiffBlock, search: str, text: str) -> str:
    start, ratio, passage = nearest_passage(search, text)
    head = f"Diff block {block.index}: the SEARCH text does not occur in the parent program (it must match exactly, whitespace included)."
    quoted = _indent(search)
    if passage is None:
        return f"{head}\nSEARCH text:\n{quoted}"
    return (f"{head}\nSEARCH text:\n{quoted}\n"
            f"Nearest passage of the parent (lines {start + 1}-{start + passage.count(chr(10)) + 1}, similarity {ratio:.2f}):\n"
            f"{_indent(passage)}")


def occurrences(search: str, text: str) -> list[int]:
    """Offsets where ``search`` occurs in ``text`` as whole lines (starting and ending at line breaks)."""
    out, pos = [], text.find(search)
    while pos != -1:
        end = pos + len(search)
        if (pos == 0 or text[pos - 1] == "\n") and (end == len(text) or text[end] == "\n" or search.endswith("\n")):
            out.append(pos)
        pos = text.find(search, pos + 1)
    return out


def _ambiguous_message(block: DiffBlock, search: str, text: str, found: list[int]) -> str:
    where = ", ".join(str(text.count("\n", 0, pos) + 1) for pos in found)
    return (f"Diff block {block.index}: the SEARCH text occurs {len(found)} times in the parent program "
            f"(starting at lines {where}); include more surrounding lines so it matches exactly once.\n"
            f"SEARCH text:\n{_indent(search)}")


def nearest_passage(search: str, text: str) -> tuple[int, float, str | None]:
    """(0-based start line, similarity ratio, passage) of the window of ``text`` most like ``search``.

    Windows have the same number of lines as ``search`` (at least one).
    """
    lines = text.split("\n")
    width = max(1, len(search.split("\n")))
    if not text.strip():
        return 0, 0.0, None
    best = (0, -1.0, None)
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(search)
    for s in range(0, max(1, len(lines) - width + 1)):
        window = "\n".join(lines[s:s + width])
        matcher.set_seq1(window)
        if matcher.real_quick_ratio() <= best[1] or matcher.quick_ratio() <= best[1]:
            continue
        r = matcher.ratio()
        if r > best[1]:
            best = (s, r, window)
    return best


def _lines(text: str) -> list[str]:
    return _normalise(text).split("\n")


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _indent(text: str) -> str:
    return "\n".join("    | " + line for line in text.split("\n"))
