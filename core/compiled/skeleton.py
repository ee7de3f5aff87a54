"""The seed-001 skeleton step (:class:`core.maximal.skeleton.Skeleton`) as one compiled call
on the numba backend: accelerations, the momentum (or the seed's, or the second-order
"heun") update and the post-stabilization in one kernel.

The constraint system (6) of the skeleton, ``(J M^-1 Jf^T) lam = rhs``, is solved in its
saddle-point form over bodies and joints,

    [ M    -Jf^T ] [acc]   [ F     ]
    [ J     0    ] [lam] = [ -bias ],

whose block graph is the skeleton's tree (a body node per body, a joint node per joint, an
edge between a joint and each of its two bodies; the fixed world is no node). Block
elimination from the leaves to the roots and back-substitution (Baraff's linear-time
factorization) solve it in O(N) with 6x6 and 5x5 blocks. The tree is rooted at the joints
to the world (each such joint a root) and, in a free-floating part, at one of its bodies,
so every leaf is a body and every pivot block is invertible (a body's mass, or ``J M^-1
Jf^T`` of a joint over its child). The joints' rows and forces are those of the numpy path
(point rows at the levers, forces at the joint midpoint, two axis rows per hinge in the
basis of :meth:`Skeleton._axis_basis`), so both paths solve the same system and differ by
rounding only.

:func:`packed` builds the tree and the work arrays once per skeleton (None when the joints
do not form a tree: the numpy path then solves the system); :func:`step` and
:func:`accelerations` call the kernels and return None when a pivot is singular or the
state is not finite, so that the numpy path raises its own error.

Mirrors (reference -> twin; parity test in ``tests/core/test_skeleton_numba.py``):

* ``Skeleton.accelerations`` -> :func:`accelerations`:
  ``::test_accelerations_and_forces_match_numpy``;
* ``Skeleton.step`` and ``steps`` -> :func:`step`: ``::test_trajectories_match_numpy``,
  ``::test_steps_is_repeated_step``, ``::test_divergence_raises_the_numpy_error_on_numba``.
"""

import math

import numpy as np

from .kernels.options import jit
from .kernels.spatial import invert

__all__ = ["packed", "step", "accelerations"]

#: update codes of the step kernel
UPDATE_CODES = {"momentum": 0, "paper": 1, "heun": 2}


def _tree(E, N):
    """``(order, parent, side)`` over the ``N + n`` nodes (bodies, then joints), children
    before parents, or None when the joints do not form a tree (a loop, also through the
    world)."""
    n = E.shape[0]
    adj = [[] for _ in range(N + n)]
    roots = []
    for j in range(n):
        for s in range(2):
            b = int(E[j, s])
            if b >= 0:
                adj[b].append((N + j, s))
                adj[N + j].append((b, s))
        if E[j, 0] < 0 or E[j, 1] < 0:
            roots.append(N + j)
    parent = np.full(N + n, -2, dtype=np.int64)        # -2: not reached yet
    side = np.zeros(N + n, dtype=np.int64)
    preorder = []
    for start in roots + list(range(N)):
        if parent[start] != -2:
            if start >= N:
                return None             # a root joint reached from another: a loop
            continue
        parent[start] = -1
        stack = [start]
        while stack:
            k = stack.pop()
            preorder.append(k)
            for other, s in adj[k]:
                if other == parent[k]:
                    continue
                if parent[other] != -2:
                    return None         # reached twice: a loop
                parent[other], side[other] = k, s
                stack.append(other)
    return np.array(preorder[::-1], dtype=np.int64), parent, side


class Packed:
    """A skeleton's arrays for the kernels and their preallocated work arrays."""

    def __init__(self, skel, tree):
        N, n = skel.N, skel.n
        self.order, self.parent, self.side = tree
        self.E = np.ascontiguousarray(skel.E, dtype=np.int64)
        self.hinge = skel.hinge.astype(np.int64)
        self.lever = np.ascontiguousarray(skel.lever)
        self.axis = np.ascontiguousarray(skel.axis)
        self.mu = np.ascontiguousarray(skel.mu)
        self.motor = np.ascontiguousarray(skel.motor)
        self.mass = np.ascontiguousarray(skel.mass)
        self.inertia = np.ascontiguousarray(skel.inertia)
        self.iinv = np.ascontiguousarray(np.linalg.inv(skel.inertia))
        nn = N + n
        self.Jb = np.zeros((n, 2, 5, 6))
        self.Fb = np.zeros((n, 2, 5, 6))
        self.B = np.zeros((n, 2, 3))
        self.x = np.zeros((nn, 6))
        self.y = np.zeros((nn, 6))
        self.buf = np.zeros(72 * nn + 84)     # D, D^-1, the inverse's tableau, geometry
        self.tmp = np.zeros((3, 6, 6))
        self.F = np.zeros((N, 6))
        self.zero_fext = np.zeros((N, 3))


def packed(skel):
    """The skeleton's :class:`Packed` arrays (built on first use, kept in ``skel.packed``),
    or None when its joints do not form a tree."""
    if skel.packed is None:
        tree = _tree(skel.E, skel.N)
        skel.packed = False if tree is None else Packed(skel, tree)
    return skel.packed or None


def _args(pk):
    """The kernels' leading arguments: the skeleton's arrays and the work arrays."""
    return (pk.E, pk.hinge, pk.lever, pk.axis, pk.mu, pk.motor, pk.mass, pk.inertia, pk.iinv,
            pk.order, pk.parent, pk.side, pk.Jb, pk.Fb, pk.B, pk.x, pk.y, pk.buf, pk.tmp, pk.F)


def _inputs(pk, state, f_ext, N):
    """``(p, R, v, w, fext)`` as contiguous float arrays (views where they already are)."""
    fext = pk.zero_fext if f_ext is None else np.ascontiguousarray(
        np.broadcast_to(np.asarray(f_ext, dtype=float), (N, 3)))
    return (np.ascontiguousarray(state.p, float), np.ascontiguousarray(state.R, float),
            np.ascontiguousarray(state.v, float), np.ascontiguousarray(state.w, float), fext)


def accelerations(skel, state, f_ext):
    """``(a, dw, c, d)`` of :meth:`Skeleton.accelerations` from one kernel call, or None
    (not a tree, a singular pivot or a non-finite result)."""
    pk = packed(skel)
    if pk is None:
        return None
    N, n = skel.N, skel.n
    p, R, v, w, fext = _inputs(pk, state, f_ext, N)
    acc, c, d = np.empty((N, 6)), np.empty((n, 3)), np.empty((n, 3))
    if _accelerations(*_args(pk), p, R, v, w, fext, acc, c, d):
        return None
    return acc[:, 3:], acc[:, :3], c, d


def step(skel, state, h, f_ext, update, stabilize, tol, iterations, count=1):
    """``(p, R, v, w, c, d, separation before, after, stabilization iterations)`` after
    ``count`` :meth:`Skeleton.step` s (``update`` "momentum", "paper" or "heun"; the forces
    and separations of the last) from one kernel call, or None (not a tree, a singular
    pivot or a non-finite state in any of them)."""
    pk = packed(skel)
    if pk is None:
        return None
    n = skel.n
    p, R, v, w, fext = _inputs(pk, state, f_ext, skel.N)
    p, R, v, w = p.copy(), R.copy(), v.copy(), w.copy()      # the kernel updates in place
    c, d, info = np.empty((n, 3)), np.empty((n, 3)), np.zeros(3)
    if _steps(*_args(pk), p, R, v, w, fext, float(h), UPDATE_CODES[update], bool(stabilize),
              float(tol), int(iterations), c, d, info, int(count)):
        return None
    return p, R, v, w, c, d, info[0], info[1], int(info[2])


# -- kernels ----------------------------------------------------------------------------------
@jit
def _rodrigues(x, y, z):
    """The nine entries (row-major) of ``exp([x, y, z])`` (Rodrigues' formula)."""
    t2 = x * x + y * y + z * z
    if t2 < 1e-6:
        ka = 1.0 - t2 / 6.0 + t2 * t2 / 120.0
        kb = 0.5 - t2 / 24.0 + t2 * t2 / 720.0
    else:
        t = math.sqrt(t2)
        ka = math.sin(t) / t
        sh = math.sin(0.5 * t)
        kb = 2.0 * sh * sh / t2
    return (1.0 + kb * (x * x - t2), kb * x * y - ka * z, kb * x * z + ka * y,
            kb * x * y + ka * z, 1.0 + kb * (y * y - t2), kb * y * z - ka * x,
            kb * x * z - ka * y, kb * y * z + ka * x, 1.0 + kb * (z * z - t2))


@jit
def _times(R, i, e):
    """``R[i] = R[i] E`` in place for ``E`` given by its nine entries ``e`` (row-major)."""
    for r in range(3):
        a0, a1, a2 = R[i, r, 0], R[i, r, 1], R[i, r, 2]
        R[i, r, 0] = a0 * e[0] + a1 * e[3] + a2 * e[6]
        R[i, r, 1] = a0 * e[1] + a1 * e[4] + a2 * e[7]
        R[i, r, 2] = a0 * e[2] + a1 * e[5] + a2 * e[8]


@jit
def _rot(R, b, x, out, o):
    """``out[o:o+3] = R_b x`` (identity for the world, ``b < 0``)."""
    if b < 0:
        out[o], out[o + 1], out[o + 2] = x[0], x[1], x[2]
    else:
        for r in range(3):
            out[o + r] = R[b, r, 0] * x[0] + R[b, r, 1] * x[1] + R[b, r, 2] * x[2]


@jit
def _point_rows(R, b, l0, l1, l2, sg, out):
    """The three rows ``sg [R_b hat(l), -1]`` on ``[w; v]`` of body ``b`` (``-sg`` times
    the velocity of its point at lever ``l``, object axes) into ``out[:3]``."""
    for r in range(3):
        R0, R1, R2 = R[b, r, 0], R[b, r, 1], R[b, r, 2]
        out[r, 0] = sg * (R1 * l2 - R2 * l1)
        out[r, 1] = sg * (R2 * l0 - R0 * l2)
        out[r, 2] = sg * (R0 * l1 - R1 * l0)
        for k in range(3):
            out[r, 3 + k] = -sg if r == k else 0.0


@jit
def _rows(E, hinge, lever, axis, p, R, Jb, Fb, B, g, j, with_force):
    """Joint ``j``'s geometry into ``g`` (a1, a2, n1, n2, 12 floats) and its blocks: ``Jb[j,
    s]`` the velocity rows (3 point rows, 2 axis rows of a hinge) on body ``E[j, s]``, and,
    ``with_force``, ``Fb[j, s]`` the force map (midpoint levers, mean axis); ``B[j]`` the
    axis basis."""
    for s in range(2):
        b = E[j, s]
        _rot(R, b, lever[j, s], g, 3 * s)
        _rot(R, b, axis[j, s], g, 6 + 3 * s)
        if b >= 0:
            for k in range(3):
                g[3 * s + k] += p[b, k]
    hj = hinge[j]
    if hj:
        n0, n1_, n2_ = g[6], g[7], g[8]
        if abs(n0) < 0.9:
            b1 = (0.0, n2_, -n1_)            # n x e_x
        else:
            b1 = (-n2_, 0.0, n0)             # n x e_y
        nb = math.sqrt(b1[0] * b1[0] + b1[1] * b1[1] + b1[2] * b1[2])
        if nb > 0:
            B[j, 0, 0], B[j, 0, 1], B[j, 0, 2] = b1[0] / nb, b1[1] / nb, b1[2] / nb
        else:
            B[j, 0, 0], B[j, 0, 1], B[j, 0, 2] = 0.0, 0.0, 0.0
        B[j, 1, 0] = n1_ * B[j, 0, 2] - n2_ * B[j, 0, 1]
        B[j, 1, 1] = n2_ * B[j, 0, 0] - n0 * B[j, 0, 2]
        B[j, 1, 2] = n0 * B[j, 0, 1] - n1_ * B[j, 0, 0]
    mid0 = 0.5 * (g[0] + g[3])
    mid1 = 0.5 * (g[1] + g[4])
    mid2 = 0.5 * (g[2] + g[5])
    nbar0 = 0.5 * (g[6] + g[9])
    nbar1 = 0.5 * (g[7] + g[10])
    nbar2 = 0.5 * (g[8] + g[11])
    for s in range(2):
        b = E[j, s]
        if b < 0:
            continue
        sg = -1.0 if s == 0 else 1.0
        _point_rows(R, b, lever[j, s, 0], lever[j, s, 1], lever[j, s, 2], sg, Jb[j, s])
        if with_force:
            # midpoint lever in object axes: R^T (mid - p)
            d0, d1, d2 = mid0 - p[b, 0], mid1 - p[b, 1], mid2 - p[b, 2]
            t0 = R[b, 0, 0] * d0 + R[b, 1, 0] * d1 + R[b, 2, 0] * d2
            t1 = R[b, 0, 1] * d0 + R[b, 1, 1] * d1 + R[b, 2, 1] * d2
            t2 = R[b, 0, 2] * d0 + R[b, 1, 2] * d1 + R[b, 2, 2] * d2
            _point_rows(R, b, t0, t1, t2, sg, Fb[j, s])
        if hj:
            z0, z1, z2 = axis[j, s, 0], axis[j, s, 1], axis[j, s, 2]
            for q in range(2):
                u0, u1, u2 = B[j, q, 0], B[j, q, 1], B[j, q, 2]
                # u^T R (row vector), then (u^T R) hat(z)
                c0 = u0 * R[b, 0, 0] + u1 * R[b, 1, 0] + u2 * R[b, 2, 0]
                c1 = u0 * R[b, 0, 1] + u1 * R[b, 1, 1] + u2 * R[b, 2, 1]
                c2 = u0 * R[b, 0, 2] + u1 * R[b, 1, 2] + u2 * R[b, 2, 2]
                Jb[j, s, 3 + q, 0] = sg * (c1 * z2 - c2 * z1)
                Jb[j, s, 3 + q, 1] = sg * (c2 * z0 - c0 * z2)
                Jb[j, s, 3 + q, 2] = sg * (c0 * z1 - c1 * z0)
                for k in range(3):
                    Jb[j, s, 3 + q, 3 + k] = 0.0
                if with_force:
                    # u^T hat(nbar) R, with u^T hat(nbar) = (u x nbar)^T
                    e0 = u1 * nbar2 - u2 * nbar1
                    e1 = u2 * nbar0 - u0 * nbar2
                    e2 = u0 * nbar1 - u1 * nbar0
                    for k in range(3):
                        Fb[j, s, 3 + q, k] = sg * (e0 * R[b, 0, k] + e1 * R[b, 1, k]
                                                   + e2 * R[b, 2, k])
                        Fb[j, s, 3 + q, 3 + k] = 0.0


@jit
def _edge(k, pn, N, hinge, side, Jb, Fb, Hpk, Hkp):
    """The blocks ``H[parent, k]`` and ``H[k, parent]`` of the saddle-point matrix into
    ``Hpk`` and ``Hkp``; returns ``(size of k, size of the parent)``."""
    if k < N:
        j, s = pn - N, side[k]
        m = 3 + 2 * hinge[j]
        for r in range(m):
            for c in range(6):
                Hpk[r, c] = Jb[j, s, r, c]
                Hkp[c, r] = -Fb[j, s, r, c]
        return 6, m
    j, s = k - N, side[k]
    m = 3 + 2 * hinge[j]
    for r in range(m):
        for c in range(6):
            Hpk[c, r] = -Fb[j, s, r, c]
            Hkp[r, c] = Jb[j, s, r, c]
    return m, 6


@jit
def _solve(N, hinge, mass, inertia, order, parent, side, Jb, Fb, x, y, buf, tmp):
    """Solve the saddle-point system with right-hand side ``x`` (rows per node, modified)
    into ``y`` by block elimination over the tree; False if a pivot is singular."""
    nn = order.shape[0]
    gj = 72 * nn
    for k in range(nn):
        o = 36 * k
        for i in range(36):
            buf[o + i] = 0.0
        if k < N:
            for r in range(3):
                for c in range(3):
                    buf[o + 6 * r + c] = inertia[k, r, c]
                buf[o + 6 * (3 + r) + 3 + r] = mass[k]
    Hpk, Hkp, G = tmp[0], tmp[1], tmp[2]
    for idx in range(nn):
        k = order[idx]
        sk = 6 if k < N else 3 + 2 * hinge[k - N]
        if not invert(buf, 36 * k, sk, int(6), 36 * (nn + k), int(6), gj):
            return False
        pn = parent[k]
        if pn < 0:
            continue
        sk, sp = _edge(k, pn, N, hinge, side, Jb, Fb, Hpk, Hkp)
        di = 36 * (nn + k)
        for r in range(sp):                      # G = H_pk D_k^-1
            for c in range(sk):
                acc = 0.0
                for i in range(sk):
                    acc += Hpk[r, i] * buf[di + 6 * i + c]
                G[r, c] = acc
        op = 36 * pn
        for r in range(sp):                      # D_p -= G H_kp, x_p -= G x_k
            for c in range(sp):
                acc = 0.0
                for i in range(sk):
                    acc += G[r, i] * Hkp[i, c]
                buf[op + 6 * r + c] -= acc
            acc = 0.0
            for i in range(sk):
                acc += G[r, i] * x[k, i]
            x[pn, r] -= acc
    for idx in range(nn - 1, -1, -1):
        k = order[idx]
        pn = parent[k]
        if pn >= 0:
            sk, sp = _edge(k, pn, N, hinge, side, Jb, Fb, Hpk, Hkp)
            for r in range(sk):                  # x_k -= H_kp y_p
                acc = 0.0
                for i in range(sp):
                    acc += Hkp[r, i] * y[pn, i]
                x[k, r] -= acc
        else:
            sk = 6 if k < N else 3 + 2 * hinge[k - N]
        di = 36 * (nn + k)
        for r in range(sk):
            acc = 0.0
            for i in range(sk):
                acc += buf[di + 6 * r + i] * x[k, i]
            y[k, r] = acc
    return True


@jit
def _wxwx(R, b, w, x):
    """``R_b (w_b x (w_b x x))`` as three floats (zero for the world, ``b < 0``)."""
    if b < 0:
        return 0.0, 0.0, 0.0
    w0, w1, w2 = w[b, 0], w[b, 1], w[b, 2]
    c0 = w1 * x[2] - w2 * x[1]
    c1 = w2 * x[0] - w0 * x[2]
    c2 = w0 * x[1] - w1 * x[0]
    e0 = w1 * c2 - w2 * c1
    e1 = w2 * c0 - w0 * c2
    e2 = w0 * c1 - w1 * c0
    return (R[b, 0, 0] * e0 + R[b, 0, 1] * e1 + R[b, 0, 2] * e2,
            R[b, 1, 0] * e0 + R[b, 1, 1] * e1 + R[b, 1, 2] * e2,
            R[b, 2, 0] * e0 + R[b, 2, 1] * e1 + R[b, 2, 2] * e2)


@jit
def _acc(E, hinge, lever, axis, mu, motor, mass, inertia, iinv, order, parent, side, Jb, Fb,
         B, x, y, buf, tmp, F, p, R, v, w, fext):
    """System (6) at ``(p, R, v, w)``: accelerations ``[dw; a]`` per body in ``y[:N]``,
    multipliers per joint in ``y[N:]``; False if a pivot is singular."""
    N, n = mass.shape[0], E.shape[0]
    g = buf[72 * order.shape[0] + 72:]
    for i in range(N):                           # gyroscopic torque, external force
        I = inertia[i]
        w0, w1, w2 = w[i, 0], w[i, 1], w[i, 2]
        L0 = I[0, 0] * w0 + I[0, 1] * w1 + I[0, 2] * w2
        L1 = I[1, 0] * w0 + I[1, 1] * w1 + I[1, 2] * w2
        L2 = I[2, 0] * w0 + I[2, 1] * w1 + I[2, 2] * w2
        F[i, 0] = -(w1 * L2 - w2 * L1)
        F[i, 1] = -(w2 * L0 - w0 * L2)
        F[i, 2] = -(w0 * L1 - w1 * L0)
        for k in range(3):
            F[i, 3 + k] = fext[i, k]
    for j in range(n):
        b1, b2 = E[j, 0], E[j, 1]
        e0 = e1 = e2 = 0.0
        for s in range(2):                       # -mu (R1 w1 - R2 w2)
            b = E[j, s]
            if b >= 0:
                sg = -mu[j] if s == 0 else mu[j]
                e0 += sg * (R[b, 0, 0] * w[b, 0] + R[b, 0, 1] * w[b, 1] + R[b, 0, 2] * w[b, 2])
                e1 += sg * (R[b, 1, 0] * w[b, 0] + R[b, 1, 1] * w[b, 1] + R[b, 1, 2] * w[b, 2])
                e2 += sg * (R[b, 2, 0] * w[b, 0] + R[b, 2, 1] * w[b, 1] + R[b, 2, 2] * w[b, 2])
        if motor[j] != 0.0:
            _rot(R, b1, axis[j, 0], g, int(0))
            e0 += motor[j] * g[0]
            e1 += motor[j] * g[1]
            e2 += motor[j] * g[2]
        for s in range(2):
            b = E[j, s]
            if b >= 0:
                sg = 1.0 if s == 0 else -1.0
                for k in range(3):
                    F[b, k] += sg * (R[b, 0, k] * e0 + R[b, 1, k] * e1 + R[b, 2, k] * e2)
        _rows(E, hinge, lever, axis, p, R, Jb, Fb, B, g, j, bool(True))
        k = N + j                                # -bias
        c0, c1, c2 = _wxwx(R, b1, w, lever[j, 0])
        d0, d1, d2 = _wxwx(R, b2, w, lever[j, 1])
        x[k, 0], x[k, 1], x[k, 2] = d0 - c0, d1 - c1, d2 - c2
        if hinge[j]:
            c0, c1, c2 = _wxwx(R, b1, w, axis[j, 0])
            d0, d1, d2 = _wxwx(R, b2, w, axis[j, 1])
            for q in range(2):
                x[k, 3 + q] = (B[j, q, 0] * (d0 - c0) + B[j, q, 1] * (d1 - c1)
                               + B[j, q, 2] * (d2 - c2))
    for i in range(N):
        for k in range(6):
            x[i, k] = F[i, k]
    return _solve(N, hinge, mass, inertia, order, parent, side, Jb, Fb, x, y, buf, tmp)


@jit
def _forces(N, E, hinge, B, y, c, d):
    """Constraint forces ``c, d`` (world) from the multipliers in ``y[N:]``."""
    for j in range(E.shape[0]):
        k = N + j
        for i in range(3):
            c[j, i] = y[k, i]
            d[j, i] = (B[j, 0, i] * y[k, 3] + B[j, 1, i] * y[k, 4]) if hinge[j] else 0.0


@jit
def _accelerations(E, hinge, lever, axis, mu, motor, mass, inertia, iinv, order, parent, side,
                   Jb, Fb, B, x, y, buf, tmp, F, p, R, v, w, fext, acc, c, d):
    """:meth:`Skeleton.accelerations`: ``acc (N, 6) = [dw; a]``, ``c, d``; returns 0, or 1
    if a pivot is singular or a result is not finite."""
    N = mass.shape[0]
    if not _acc(E, hinge, lever, axis, mu, motor, mass, inertia, iinv, order, parent, side,
                Jb, Fb, B, x, y, buf, tmp, F, p, R, v, w, fext):
        return 1
    for i in range(N):
        for k in range(6):
            acc[i, k] = y[i, k]
            if not math.isfinite(y[i, k]):
                return 1
    _forces(N, E, hinge, B, y, c, d)
    return 0


@jit
def _separation(E, hinge, lever, axis, p, R, Jb, Fb, B, g):
    """Largest joint gap and axis misalignment ``|n1 x n2|``, the larger of the two."""
    worst = 0.0
    for j in range(E.shape[0]):
        _rows(E, hinge, lever, axis, p, R, Jb, Fb, B, g, j, bool(False))
        a0, a1, a2 = g[0] - g[3], g[1] - g[4], g[2] - g[5]
        worst = max(worst, math.sqrt(a0 * a0 + a1 * a1 + a2 * a2))
        x0 = g[7] * g[11] - g[8] * g[10]
        x1 = g[8] * g[9] - g[6] * g[11]
        x2 = g[6] * g[10] - g[7] * g[9]
        worst = max(worst, math.sqrt(x0 * x0 + x1 * x1 + x2 * x2))
    return worst


@jit
def _finite(p, R, v, w):
    """True if the state holds no NaN or inf."""
    for i in range(p.shape[0]):
        for k in range(3):
            if not (math.isfinite(p[i, k]) and math.isfinite(v[i, k])
                    and math.isfinite(w[i, k]) and math.isfinite(R[i, k, 0])
                    and math.isfinite(R[i, k, 1]) and math.isfinite(R[i, k, 2])):
                return False
    return True


@jit
def _position_errors(N, E, hinge, lever, axis, p, R, Jb, B, x, g):
    """Load ``x`` with the right-hand side of the position projection at ``(p, R)``: zero
    body rows, minus the constraint errors (point gaps, the hinges' axis gaps in their
    basis) as joint rows, with ``Jb`` the joints' rows there; returns the largest error."""
    worst = 0.0
    for j in range(E.shape[0]):
        _rows(E, hinge, lever, axis, p, R, Jb, Jb, B, g, j, bool(False))
        k = N + j
        for i in range(3):
            x[k, i] = -(g[i] - g[3 + i])
            worst = max(worst, abs(x[k, i]))
        if hinge[j]:
            for q in range(2):
                x[k, 3 + q] = -(B[j, q, 0] * (g[6] - g[9]) + B[j, q, 1] * (g[7] - g[10])
                                + B[j, q, 2] * (g[8] - g[11]))
                worst = max(worst, abs(x[k, 3 + q]))
    for i in range(N):
        for k in range(6):
            x[i, k] = 0.0
    return worst


@jit
def _heun(E, hinge, lever, axis, mu, motor, mass, inertia, iinv, order, parent, side, Jb, Fb,
          B, x, y, buf, tmp, F, p, R, v, w, fext, h):
    """The "heun" update in place on ``(p, R, v, w)`` from the accelerations ``[dw; a]`` at
    the state in ``y[:N]``: the Euler prediction ``(p + h v, R exp(h w), v + h a, w + h
    dw)``, system (6) again there, then ``p += h (v + v_pred) / 2``, ``v += h (a + a_pred) /
    2``, ``w += h (dw + dw_pred) / 2`` and ``R exp(h (w + w_pred) / 2)`` (as
    :meth:`Skeleton._step`). False if a pivot is singular."""
    N = mass.shape[0]
    p0, R0, v0, w0, y0 = p.copy(), R.copy(), v.copy(), w.copy(), y[:N].copy()
    for i in range(N):
        for k in range(3):
            p[i, k] = p0[i, k] + h * v0[i, k]
            v[i, k] = v0[i, k] + h * y0[i, 3 + k]
            w[i, k] = w0[i, k] + h * y0[i, k]
        _times(R, i, _rodrigues(h * w0[i, 0], h * w0[i, 1], h * w0[i, 2]))
    if not _acc(E, hinge, lever, axis, mu, motor, mass, inertia, iinv, order, parent, side,
                Jb, Fb, B, x, y, buf, tmp, F, p, R, v, w, fext):
        return False
    for i in range(N):
        e = _rodrigues(0.5 * h * (w0[i, 0] + w[i, 0]), 0.5 * h * (w0[i, 1] + w[i, 1]),
                       0.5 * h * (w0[i, 2] + w[i, 2]))
        for k in range(3):
            p[i, k] = p0[i, k] + 0.5 * h * (v0[i, k] + v[i, k])
            v[i, k] = v0[i, k] + 0.5 * h * (y0[i, 3 + k] + y[i, 3 + k])
            w[i, k] = w0[i, k] + 0.5 * h * (y0[i, k] + y[i, k])
            for j in range(3):
                R[i, k, j] = R0[i, k, j]
        _times(R, i, e)
    return True


@jit
def _step(E, hinge, lever, axis, mu, motor, mass, inertia, iinv, order, parent, side, Jb, Fb,
          B, x, y, buf, tmp, F, p, R, v, w, fext, h, update, stabilize, tol, iterations, c, d,
          info):
    """:meth:`Skeleton.step` with update 0 "momentum", 1 "paper" or 2 "heun", in place on
    ``(p, R, v, w)``; ``c, d`` the constraint forces, ``info = [separation before, after,
    stabilization iterations]``. Returns 0, or 1 if a pivot is singular or the state is not
    finite."""
    N = mass.shape[0]
    if not _acc(E, hinge, lever, axis, mu, motor, mass, inertia, iinv, order, parent, side,
                Jb, Fb, B, x, y, buf, tmp, F, p, R, v, w, fext):
        return 1
    _forces(N, E, hinge, B, y, c, d)
    if update == 2:
        if not _heun(E, hinge, lever, axis, mu, motor, mass, inertia, iinv, order, parent,
                     side, Jb, Fb, B, x, y, buf, tmp, F, p, R, v, w, fext, h):
            return 1
    for i in range(0 if update == 2 else N):                # heun: updated above
        for k in range(3):
            v[i, k] += h * y[i, 3 + k]
            p[i, k] += h * v[i, k]
        if update == 1:
            for k in range(3):
                w[i, k] += h * y[i, k]
            _times(R, i, _rodrigues(h * w[i, 0], h * w[i, 1], h * w[i, 2]))
            continue
        I, Ii = inertia[i], iinv[i]
        w0, w1, w2 = w[i, 0], w[i, 1], w[i, 2]
        # pi = I w + h (I dw + w x I w): body momentum after the non-gyroscopic impulse
        L0 = I[0, 0] * w0 + I[0, 1] * w1 + I[0, 2] * w2
        L1 = I[1, 0] * w0 + I[1, 1] * w1 + I[1, 2] * w2
        L2 = I[2, 0] * w0 + I[2, 1] * w1 + I[2, 2] * w2
        g0, g1, g2 = -(w1 * L2 - w2 * L1), -(w2 * L0 - w0 * L2), -(w0 * L1 - w1 * L0)
        dw0, dw1, dw2 = y[i, 0], y[i, 1], y[i, 2]
        P0 = L0 + h * (I[0, 0] * dw0 + I[0, 1] * dw1 + I[0, 2] * dw2 - g0)
        P1 = L1 + h * (I[1, 0] * dw0 + I[1, 1] * dw1 + I[1, 2] * dw2 - g1)
        P2 = L2 + h * (I[2, 0] * dw0 + I[2, 1] * dw1 + I[2, 2] * dw2 - g2)
        t0 = Ii[0, 0] * P0 + Ii[0, 1] * P1 + Ii[0, 2] * P2
        t1 = Ii[1, 0] * P0 + Ii[1, 1] * P1 + Ii[1, 2] * P2
        t2 = Ii[2, 0] * P0 + Ii[2, 1] * P1 + Ii[2, 2] * P2
        e = _rodrigues(h * t0, h * t1, h * t2)                      # Rinc
        q0 = e[0] * P0 + e[3] * P1 + e[6] * P2                         # Rinc^T pi
        q1 = e[1] * P0 + e[4] * P1 + e[7] * P2
        q2 = e[2] * P0 + e[5] * P1 + e[8] * P2
        _times(R, i, e)
        w[i, 0] = Ii[0, 0] * q0 + Ii[0, 1] * q1 + Ii[0, 2] * q2
        w[i, 1] = Ii[1, 0] * q0 + Ii[1, 1] * q1 + Ii[1, 2] * q2
        w[i, 2] = Ii[2, 0] * q0 + Ii[2, 1] * q1 + Ii[2, 2] * q2
    if not _finite(p, R, v, w):
        return 1
    g = buf[72 * order.shape[0] + 72:]
    before = _separation(E, hinge, lever, axis, p, R, Jb, Fb, B, g)
    info[0] = info[1] = before
    info[2] = 0.0
    if not stabilize:
        return 0
    it = 0
    for it in range(1, iterations + 1):
        if _position_errors(N, E, hinge, lever, axis, p, R, Jb, B, x, g) <= tol:
            break
        if not _solve(N, hinge, mass, inertia, order, parent, side, Jb, Jb, x, y, buf, tmp):
            return 1
        for i in range(N):
            for k in range(3):
                p[i, k] += y[i, 3 + k]
            _times(R, i, _rodrigues(y[i, 0], y[i, 1], y[i, 2]))
    # velocities onto eq. (2): the rows of J at the final positions
    for j in range(E.shape[0]):
        _rows(E, hinge, lever, axis, p, R, Jb, Jb, B, g, j, bool(False))
        k = N + j
        for r in range(3 + 2 * hinge[j]):
            acc = 0.0
            for s in range(2):
                b = E[j, s]
                if b >= 0:
                    for q in range(3):
                        acc += Jb[j, s, r, q] * w[b, q] + Jb[j, s, r, 3 + q] * v[b, q]
            x[k, r] = -acc
    for i in range(N):
        for k in range(6):
            x[i, k] = 0.0
    if not _solve(N, hinge, mass, inertia, order, parent, side, Jb, Jb, x, y, buf, tmp):
        return 1
    for i in range(N):
        for k in range(3):
            w[i, k] += y[i, k]
            v[i, k] += y[i, 3 + k]
    if not _finite(p, R, v, w):
        return 1
    info[1] = _separation(E, hinge, lever, axis, p, R, Jb, Fb, B, g)
    info[2] = it
    return 0


@jit
def _steps(E, hinge, lever, axis, mu, motor, mass, inertia, iinv, order, parent, side, Jb, Fb,
           B, x, y, buf, tmp, F, p, R, v, w, fext, h, update, stabilize, tol, iterations, c, d,
           info, count):
    """``count`` calls of :func:`_step`; stops at the first failure (its status)."""
    for _ in range(count):
        st = _step(E, hinge, lever, axis, mu, motor, mass, inertia, iinv, order, parent, side,
                   Jb, Fb, B, x, y, buf, tmp, F, p, R, v, w, fext, h, update, stabilize, tol,
                   iterations, c, d, info)
        if st:
            return st
    return 0
