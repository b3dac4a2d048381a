"""Double-double arithmetic for numba kernels: a number is an unevaluated sum hi + lo of two
float64 with |lo| <= ulp(hi)/2, about 32 significant digits (unit roundoff 2^-104 ~ 5e-32).

Error-free transformations (Knuth's two-sum, the FMA two-product) and the accurate ("IEEE")
addition of Hida, Li and Bailey's QD library, which stays accurate when hi parts cancel --
the case that matters for the Pfaffian elimination. FMA is LLVM's ``llvm.fma.f64``.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c with a single rounding."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(d, [d, d, d]),
                                            "llvm.fma.f64")
        return builder.call(fn, args)

    return sig, codegen


@njit(cache=True, inline="always")
def two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@njit(cache=True, inline="always")
def quick_two_sum(a, b):
    """Exact s + e = a + b when |a| >= |b|."""
    s = a + b
    return s, b - (s - a)


@njit(cache=True, inline="always")
def dd_add(ah, al, bh, bl):
    s1, s2 = two_sum(ah, bh)
    t1, t2 = two_sum(al, bl)
    s2 += t1
    s1, s2 = quick_two_sum(s1, s2)
    s2 += t2
    return quick_two_sum(s1, s2)


@njit(cache=True, inline="always")
def dd_mul(ah, al, bh, bl):
    p = ah * bh
    e = fma(ah, bh, -p) + (ah * bl + al * bh)
    return quick_two_sum(p, e)


@njit(cache=True, inline="always")
def dd_div(ah, al, bh, bl):
    q1 = ah / bh
    ph, pl = dd_mul(q1, 0.0, bh, bl)
    rh, rl = dd_add(ah, al, -ph, -pl)
    q2 = rh / bh
    ph, pl = dd_mul(q2, 0.0, bh, bl)
    rh, rl = dd_add(rh, rl, -ph, -pl)
    q3 = rh / bh
    q1, q2 = quick_two_sum(q1, q2)
    return dd_add(q1, q2, q3, 0.0)


@njit(cache=True, inline="always")
def dd_axpy2(mh, ml, ah, al, xh, xl, bh, bl, yh, yl):
    """m + a x - b y for double-doubles, to double-double accuracy relative to the largest term
    (the products are split exactly by FMA; only terms of order eps^2 are rounded or dropped)."""
    p1 = ah * xh
    e1 = fma(ah, xh, -p1)
    p2 = bh * yh
    e2 = fma(bh, yh, -p2)
    s, t1 = two_sum(mh, p1)
    s, t2 = two_sum(s, -p2)
    lo = (t1 + t2) + ml + (e1 - e2) + (ah * xl + al * xh) - (bh * yl + bl * yh)
    return two_sum(s, lo)
