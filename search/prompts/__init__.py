"""Prompt templates as data files, with per-run overrides.

The files next to this module are the defaults (see ``CITATION.md`` for which ones are the
paper's, verbatim, and which are ours). :func:`load_templates` reads them and lets a directory
given in the run config replace any subset. Slots are ``{name}``; :func:`fill` substitutes only
the names it is given, in one pass, so JSON braces in the templates and braces inside the
values (code, feedback) are left alone.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DIR = Path(__file__).parent

#: every template the prompt builder uses
TEMPLATE_NAMES = (
    "system", "library", "initial", "feedback",  # the paper's (Appendix A)
    "system_evolve", "evolve", "interface", "structure", "parent", "inspiration", "failed_checks", "negative",
    "goal_fresh", "goal_mutation", "goal_crossover", "format_full", "format_diff",
    "format_chain", "parent_chain", "inspiration_chain",
)


@dataclass(frozen=True)
class Templates:
    texts: dict  # name -> template text (trailing newlines stripped)
    sources: dict  # name -> file path it came from

    def __getitem__(self, name: str) -> str:
        try:
            return self.texts[name]
        except KeyError:
            raise KeyError(f"unknown prompt template {name!r}; known: {', '.join(sorted(self.texts))}") from None

    def digest(self, name: str) -> str:
        """First 8 hex digits of the template's sha256."""
        return hashlib.sha256(self[name].encode()).hexdigest()[:8]

    def prompt_id(self, *names: str) -> str:
        """``name@digest`` of each template that made a prompt, joined by '+'."""
        return "+".join(f"{n}@{self.digest(n)}" for n in names)


def text_digest(text: str) -> str:
    """First 16 hex digits of the sha256 of a prompt's text (names a system prompt in the journal)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_templates(directory: str | Path | None = None) -> Templates:
    """The default templates, with any file ``<name>.txt`` in ``directory`` taking precedence.

    A ``directory`` that does not exist is an error (a typo in a config must not silently
    fall back to the defaults).
    """
    texts, sources = {}, {}
    override = Path(directory) if directory is not None else None
    if override is not None and not override.is_dir():
        raise FileNotFoundError(f"prompt template directory not found: {override}")
    for name in TEMPLATE_NAMES:
        path = DEFAULT_DIR / f"{name}.txt"
        if override is not None and (override / f"{name}.txt").is_file():
            path = override / f"{name}.txt"
        texts[name] = path.read_text(encoding="utf-8").rstrip("\n")
        sources[name] = str(path)
    return Templates(texts, sources)


def fill(template: str, **slots: str) -> str:
    """Replace ``{name}`` for every given name, once; other braces stay as they are.

    Raises KeyError when the template lacks a given slot, so a renamed slot in an overriding
    template is caught instead of silently dropping the content.
    """
    missing = [k for k in slots if "{" + k + "}" not in template]
    if missing:
        raise KeyError(f"template has no slot(s) {', '.join('{' + k + '}' for k in missing)}")
    if not slots:
        return template
    pattern = re.compile(r"\{(" + "|".join(re.escape(k) for k in slots) + r")\}")
    return pattern.sub(lambda m: str(slots[m.group(1)]), template)


def slots_of(template: str) -> set[str]:
    """Names that look like slots (``{identifier}``) in a template."""
    return set(re.findall(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", template))
