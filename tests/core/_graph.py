"""Import circles of a module graph, for the tests that hold the layers' import rules."""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components


def circles(edges):
    """The import circles of ``edges`` (module -> modules it imports): its strongly connected
    components of more than one module, as sets, by scipy's csgraph."""
    names = sorted(set(edges) | {w for targets in edges.values() for w in targets})
    at = {name: i for i, name in enumerate(names)}
    pairs = [(at[v], at[w]) for v, targets in edges.items() for w in targets]
    rows, cols = (np.array(c, dtype=int) for c in zip(*pairs)) if pairs else ([], [])
    graph = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(graph, directed=True, connection="strong")
    groups = {}
    for name, label in zip(names, labels):
        groups.setdefault(label, set()).add(name)
    return [group for group in groups.values() if len(group) > 1]
