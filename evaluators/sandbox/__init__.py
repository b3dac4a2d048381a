"""Hardened sandbox for untrusted candidate programs (``Z_efficient(params, n)``, ``log_Z``).

Layers, outermost first: static AST check (``policy``), restricted builtins and module views
(``guards``), PEP 578 audit hook (``audit``), rlimits + seccomp + private signed result pipe
(``child``, ``seccomp``, ``protocol``), whole-process-group kill on timeout (``zygote``), and
a scrubbed environment for the warm fork server (``host``).
"""
from .host import Sandbox
from .policy import ALLOWED_IMPORTS, static_check
from .records import Call, CallResult, Limits, SandboxReport

__all__ = ["ALLOWED_IMPORTS", "Call", "CallResult", "Limits", "Sandbox", "SandboxReport", "static_check"]
