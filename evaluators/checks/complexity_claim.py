"""Read a proposer's ``complexity_O`` string as a :class:`Growth` of running time in n.

The string is free text written by a language model ("O(n 2^sqrt(n))", "O(L 2^{2L})",
"poly(L) * 2^L", "O(n^3) where n is the number of rows", "exponential"). A light, purely
lexical normalisation (unicode, braces, ``O(...)`` wrappers, log bases, trailing prose) is
followed by a sympy parse; the growth class is then read off the leading term of log f as
n -> infinity (sympy's Gruntz limits), never by pattern matching on the formula.

Conventions (documented choices):
* n (or N) is the number of spins. L is the side of the lattice: n = L^2 when ``lattice`` is
  True; on a non-lattice task (a chain) L is read as n itself, so "O(L)" there means O(n).
  A clause "where L = sqrt(n)" / "with n = L^2" / "where w = sqrt(n)" overrides both.
* Log factors never change the class: "log^2 n" is read as log n, and poly degrees ignore logs.
* "polynomial" / "poly(n)" / "poly(L)" is a polynomial of unstated degree: rate = inf, so any
  measured polynomial is consistent with it (and any exponential is not).
* Prose after the formula is ignored ("O(n^3) where n is the number of rows" is n^3); an
  unknown symbol inside the formula ("O(n m)", "O(|E|)") is a parse error, never guessed.
* Only a small vocabulary of names reaches sympy's parser (which evaluates its input), and
  numeric power towers are refused, so a hostile claim cannot run code or exhaust memory.
"""

from __future__ import annotations

import io
import keyword
import math
import re
import tokenize
import unicodedata
import warnings
from functools import lru_cache

import sympy as sp
from sympy.parsing.sympy_parser import (convert_xor, implicit_multiplication_application, parse_expr,
                                        rationalize, standard_transformations)
from sympy.series.gruntz import gruntz

from evaluators.checks.growth import Growth


class ClaimParseError(ValueError):
    """The claim cannot be read as a growth rate; ``reason`` is one line of plain words."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


N_SYM = sp.Symbol("n", positive=True)      # number of spins
L_SYM = sp.Symbol("L", positive=True)      # lattice side
DEGREE = sp.Symbol("k_unstated", positive=True)  # degree of "poly(...)"
_X = sp.Symbol("x", positive=True)         # n = x^2, so sqrt(n) is polynomial in x

_TRANSFORMS = standard_transformations + (implicit_multiplication_application, convert_xor, rationalize)
_z = sp.Dummy("z", positive=True)
_FUNCS = {
    "log": sp.log, "ln": sp.log, "lg": sp.log, "log2": sp.log, "log10": sp.log, "exp": sp.exp,
    "sqrt": sp.sqrt, "factorial": sp.factorial,
    "poly": sp.Lambda(_z, _z ** DEGREE), "polylog": sp.Lambda(_z, sp.log(_z) ** DEGREE),
    "O": sp.Lambda(_z, _z), "Theta": sp.Lambda(_z, _z), "Omega": sp.Lambda(_z, _z),
}
_CONSTS = {"e": sp.E, "E": sp.E, "pi": sp.pi}
_VARS = {"n": N_SYM, "N": N_SYM, "L": L_SYM}
_NO_CLAIM = {"", "-", "--", "n/a", "na", "none", "unknown", "?", "null", "not applicable", "tbd"}
_WORDS = {"linear": "({})", "quadratic": "({})^2", "cubic": "({})^3", "constant": "1",
          "polynomial": "poly({})", "exponential": "2^({})", "exp": "2^({})"}
_SUPERSCRIPT = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ⁿᴸˡ", "0123456789+-()nLl"))
_MAX_LEN, _MAX_NUMBER = 300, 1000.0


def parse_claim(text: str | None, lattice: bool) -> Growth:
    """The growth class of the running time claimed by ``text`` (n = number of spins)."""
    return classify(claim_expression(text, lattice), lattice)


def claim_expression(text: str | None, lattice: bool) -> sp.Expr:
    """The claim as a sympy expression in n, L (and the unstated degree of poly(.))."""
    s = _normalise(text)
    m = re.match(r"^(linear|quadratic|cubic|constant|polynomial|exponential|exp)\b(?!\s*\()"
                 r"(?:\s*(?:time|cost|scaling))?(?:\s*(?:in|of))?\s*(.*)$", s, re.I)
    if m:
        rest = m.group(2).strip()
        inner = "n"
        if rest:
            try:
                _parse_formula(rest, {}, strict=True)
                inner = rest
            except ClaimParseError:
                pass
        s = _WORDS[m.group(1).lower()].format(inner)
    lead = re.search(r"\bO\(", s)
    if lead and lead.start() > 0 and all(len(w) > 2 for w in re.findall(r"\w+", s[:lead.start()])) \
            and re.fullmatch(r"[A-Za-z\s:,\-]*", s[:lead.start()]):
        s = s[lead.start():]  # "Time: O(n)", "Overall O(n^3)"
    formula, clauses = _split_clauses(s)
    defs = _definitions(clauses)
    expr = _parse_formula(formula, defs, strict=False)
    for name, value in defs.items():
        expr = expr.subs(sp.Symbol(name, positive=True), value)
    if not lattice and "L" not in defs:
        expr = expr.subs(L_SYM, N_SYM)
    bad = expr.free_symbols - {N_SYM, L_SYM, DEGREE}
    if bad:
        raise ClaimParseError(f"unknown symbol(s) {', '.join(sorted(map(str, bad)))} in the claim")
    return expr


def _normalise(text: str | None) -> str:
    if text is None or not isinstance(text, str):
        raise ClaimParseError("no complexity claim was given")
    text = text[:2 * _MAX_LEN]  # longer claims fail the length check below; no work on megabytes
    s = re.sub(f"[{''.join(_SUPERSCRIPT)}]+",                          # "2ⁿ", "n³" -> "2^(n)", "n^(3)"
               lambda m: "^(" + "".join(_SUPERSCRIPT[c] for c in m.group(0)) + ")", text.strip())
    s = unicodedata.normalize("NFKC", s)
    for a, b in (("×", "*"), ("·", "*"), ("⋅", "*"), ("∙", "*"), ("•", "*"), ("√", " sqrt "),
                 ("−", "-"), ("–", "-"), ("Θ", "O"), ("θ", "O"), ("Ω", "O"), ("𝒪", "O"),
                 ("{", "("), ("}", ")"), ("[", "("), ("]", ")"), ("π", "pi"), ("`", "")):
        s = s.replace(a, b)
    s = re.sub(r"\blog\s*_\s*\(?\s*(?:\d+|e)\s*\)?", "log", s)      # log_2, log_{2}, log_e
    s = re.sub(r"\b(log|ln|lg)\s*(?:\^|\*\*)\s*\(?\s*\d+\s*\)?", r"\1", s)  # log^2 n -> log n
    s = re.sub(r"\b(big-?)?o\s*\(", "O(", s, flags=re.I)
    s = re.sub(r"\b(n|N|L)log(n|N|L)\b", r"\1*log(\2)", s)           # "nlogn"
    s = re.sub(r"\blog(n|N|L)\b", r"log(\1)", s)                      # "logn"
    s = re.sub(r"\b(sqrt|log|ln|lg|log2|log10|exp)\s+(?!(?:sqrt|log|ln|lg|exp)\b)([A-Za-z]\w*|\d+(?:\.\d+)?)\b", r"\1(\2)", s)  # "log n"
    s = re.sub(r"\b([nNL])(\d+)(?=\s*(?:\^|\*\*))", r"\1*\2", s)         # "n2^n" -> "n*2^n"
    s = s.strip().rstrip(".")
    if s.lower() in _NO_CLAIM or set(s) <= set("-—_ ."):
        raise ClaimParseError(f"no complexity claim was given ({text.strip()!r})")
    if len(s) > _MAX_LEN:
        raise ClaimParseError(f"the claim is longer than {_MAX_LEN} characters")
    return s


def _split_clauses(s: str) -> tuple[str, list[str]]:
    """Formula before the first 'where'/'with'/';', and the clause texts after it."""
    parts = re.split(r"\s*(?:\bwhere\b|\bwith\b|;|\bfor\b(?=\s+\w+\s*=))\s*", s, maxsplit=1, flags=re.I)
    return parts[0], (re.split(r"\s*(?:,|\band\b|;)\s*", parts[1]) if len(parts) > 1 else [])


def _definitions(clauses: list[str]) -> dict[str, sp.Expr]:
    """'L = sqrt(n)' -> {'L': sqrt(n)}; 'n = L^2' -> {'L': sqrt(n)}; prose is ignored."""
    defs: dict[str, sp.Expr] = {}
    for c in clauses:
        m = re.match(r"^\s*([A-Za-z]\w{0,2})\s*(?:=|:=|~)\s*(.+?)\s*$", c)
        if not m:
            continue
        name, rhs = m.group(1), m.group(2)
        if keyword.iskeyword(name) or name in _FUNCS or name in _CONSTS:
            continue
        try:
            value = _parse_formula(rhs, defs, strict=True)
        except ClaimParseError:
            continue
        if name in ("n", "N"):
            if L_SYM in value.free_symbols:
                sols = [v for v in sp.solve(sp.Eq(value, N_SYM), L_SYM) if v.is_positive is not False]
                if sols:
                    defs["L"] = sols[0]
            continue
        if value.free_symbols <= {N_SYM, L_SYM}:
            defs[name] = value
    return defs


def _parse_formula(s: str, defs: dict, strict: bool) -> sp.Expr:
    """Parse one formula after checking every token; stops at prose unless ``strict``."""
    kept = _vetted_tokens(s, set(defs), strict)
    if not kept.strip():
        raise ClaimParseError(f"no formula found in {s.strip()!r}")
    names = dict(_FUNCS, **_CONSTS, **_VARS)
    names.update({k: sp.Symbol(k, positive=True) for k in defs})
    try:
        with warnings.catch_warnings():  # sympy deprecation noise on odd inputs such as "e()"
            warnings.simplefilter("ignore")
            _check_magnitudes(parse_expr(kept, local_dict=dict(names), transformations=_TRANSFORMS, evaluate=False))
            expr = parse_expr(kept, local_dict=dict(names), transformations=_TRANSFORMS)
    except ClaimParseError:
        raise
    except Exception as exc:  # sympy raises many kinds on malformed input
        raise ClaimParseError(f"cannot read {s.strip()!r} as a formula ({type(exc).__name__})") from None
    if not isinstance(expr, sp.Expr) or isinstance(expr, sp.Lambda):
        raise ClaimParseError(f"{s.strip()!r} is not a formula in n")
    return expr


def _vetted_tokens(s: str, defined: set, strict: bool) -> str:
    """The formula's tokens up to trailing prose, with parentheses balanced; raises on anything
    that is neither a known name, a number nor an arithmetic operator inside the formula."""
    allowed = set(_FUNCS) | set(_CONSTS) | set(_VARS) | defined
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(s).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        raise ClaimParseError(f"cannot split {s.strip()!r} into symbols") from None
    out, depth = [], 0
    for tok in toks:
        if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT):
            continue
        if tok.type == tokenize.NUMBER:
            try:
                value = float(tok.string)
            except ValueError:
                raise ClaimParseError(f"cannot read the number {tok.string!r}") from None
            if not math.isfinite(value) or abs(value) > _MAX_NUMBER or "j" in tok.string.lower():
                raise ClaimParseError(f"the number {tok.string} is out of the range a claim needs")
            out.append(tok.string)
        elif tok.type == tokenize.NAME and tok.string in allowed:
            out.append(tok.string)
        elif tok.string in ("+", "-", "*", "/", "^", "**", "(", ")", "!"):  # "!" is an ERRORTOKEN in 3.11
            depth += (tok.string == "(") - (tok.string == ")")
            if depth < 0:
                break
            out.append(tok.string)
        elif not strict and depth == 0 and out and (tok.type != tokenize.NAME or len(tok.string) > 2):
            break  # prose after the formula: "O(n) time", "O(n^3), for the determinant"
        elif tok.type == tokenize.NAME:
            raise ClaimParseError(f"unknown symbol {tok.string!r} (the audit reads n, N, L, sqrt, log, "
                                  f"exp, poly and powers such as 2^L)")
        else:
            raise ClaimParseError(f"unexpected {tok.string!r} in the claim")
    while out and out[-1] in ("+", "-", "*", "/", "^", "**", "("):
        if out[-1] == "(":
            depth -= 1
        out.pop()
    return " ".join(out) + ")" * max(depth, 0)


def _check_magnitudes(expr) -> float:
    """log10 of the size of a number-only subexpression; refuses numbers beyond 10^1000 so
    evaluating a tower like 9^9^9 cannot hang the host. Returns nan for symbolic parts."""
    if not isinstance(expr, sp.Basic) or not expr.args:
        try:
            v = abs(float(expr))
            return math.log10(v) if v > 0 else 0.0
        except (TypeError, ValueError):
            return math.nan
    logs = [_check_magnitudes(a) for a in expr.args]
    if any(map(math.isnan, logs)):
        return math.nan
    if isinstance(expr, sp.Pow):
        if 10 ** min(logs[1], 6) * max(logs[0], 0.0) > 1000:
            raise ClaimParseError("the claim contains a number too large to evaluate")
        return 10 ** min(logs[1], 6) * max(logs[0], 0.0)
    return sum(max(v, 0.0) for v in logs) if isinstance(expr, sp.Mul) else max(logs, default=0.0) + 1


def classify(expr: sp.Expr, lattice: bool = True) -> Growth:
    """Growth class of f(n) as n -> infinity, from the leading term of log f. With n = x^2
    (L = x on a lattice, else L = n): log f ~ a x^2 is exp with rate a/ln 2, ~ b x exp_sqrt
    with rate b/ln 2, ~ 2 d log x poly of degree d; a rate set by poly(.)'s degree is inf."""
    expr = sp.sympify(expr)
    if not lattice:
        expr = expr.subs(L_SYM, N_SYM)
    return _classify_cached(expr.subs(L_SYM, sp.sqrt(N_SYM)))


@lru_cache(maxsize=512)
def _classify_cached(expr: sp.Expr) -> Growth:
    f = expr.subs(N_SYM, _X ** 2)
    f = f.replace(sp.factorial, lambda z: sp.sqrt(2 * sp.pi * z) * (z / sp.E) ** z)  # Stirling
    if f.free_symbols - {_X, DEGREE}:
        raise ClaimParseError(f"the claim depends on {sorted(map(str, f.free_symbols - {_X, DEGREE}))}")
    if _X not in f.free_symbols:
        if f.is_positive is False or f.is_zero:
            raise ClaimParseError(f"{expr} is not a positive running time")
        return Growth("poly", 0.0)
    if f.is_polynomial(_X):  # fast path: no limits needed
        return Growth("poly", float(sp.degree(f, _X)) / 2.0)
    g = sp.expand_log(sp.log(f), force=True)
    for den, kind in ((_X ** 2, "exp"), (_X, "exp_sqrt")):
        lim = _limit(g / den)
        if lim == sp.oo:
            return Growth(kind, math.inf)
        if lim.is_positive:
            return Growth(kind, math.inf if lim.free_symbols else float(lim / sp.log(2)))
        if lim.is_negative:
            raise ClaimParseError(f"{expr} shrinks as n grows; it is not a running time")
    lim = _limit(g / sp.log(_X))
    if lim == sp.oo:  # faster than any polynomial, slower than 2^(c sqrt n): 2^(log^2 n), n^log n
        return Growth("exp_sqrt", 0.0)
    if lim.free_symbols:
        return Growth("poly", math.inf)
    return Growth("poly", max(float(lim) / 2.0, 0.0))


def _limit(e: sp.Expr) -> sp.Expr:
    """lim_{x -> oo} e, term by term when e is a sum (much faster), whole when that fails."""
    try:
        parts = [gruntz(t, _X, sp.oo) for t in sp.Add.make_args(sp.expand(e))]
        total = sp.Add(*parts)
        if total is sp.nan or any(p.has(sp.AccumBounds) for p in parts):
            total = gruntz(e, _X, sp.oo)
    except Exception:
        try:
            total = sp.limit(e, _X, sp.oo)
        except Exception:
            total = sp.nan
    if total is sp.nan or total.has(sp.zoo) or total.has(sp.AccumBounds) or (total.is_extended_real is False):
        raise ClaimParseError("cannot determine how the claim grows with n")
    return total
