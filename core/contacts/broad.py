"""Broad phase: candidate pairs of axis-aligned boxes by sweep and prune.

The boxes are sorted by their lower bound along the axis on which their centres spread
most; each box is then compared only with the boxes that start before it ends along that
axis (a binary search gives their range), and kept where the boxes overlap on the other two
axes too. The cost is ``O(n log n + k)`` for n boxes and k overlaps along the sweep axis,
near linear in the number of bodies for scenes that are not piled along one axis.
"""

import numpy as np

__all__ = ["sweep_and_prune"]


def sweep_and_prune(lo, hi):
    """Pairs of overlapping boxes ``lo, hi: (n, 3)`` (lower and upper corners): an ``(k, 2)``
    int array of indices ``i < j``, in increasing ``(i, j)`` order (which does not depend
    on the sweep axis)."""
    n = len(lo)
    if n < 2:
        return np.zeros((0, 2), dtype=int)
    axis = int(np.argmax(np.var(lo + hi, axis=0)))
    order = np.argsort(lo[:, axis], kind="stable")
    start = lo[order, axis]
    ends = np.searchsorted(start, hi[order, axis], side="right")
    other = [a for a in range(3) if a != axis]
    pairs = []
    for k in range(n - 1):
        if ends[k] <= k + 1:
            continue
        i, cand = order[k], order[k + 1:ends[k]]
        ok = np.all((lo[cand][:, other] <= hi[i, other]) & (hi[cand][:, other] >= lo[i, other]),
                    axis=1)
        for j in cand[ok]:
            pairs.append((min(i, j), max(i, j)))
    return np.array(sorted(pairs), dtype=int).reshape(-1, 2)
