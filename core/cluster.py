"""Dask distributed for work beyond one process: the sweeps of :mod:`core.sweep` and the
batch bakes of ``scripts/bake.py`` connect to a scheduler, start a local cluster and wait for
workers through these functions. ``distributed`` is imported only when one is called, so
the rest of the core (and the extension) does not need it.
"""

from .checks import whole_number
from .errors import InvalidInputError

__all__ = ["CONNECT_TIMEOUT", "distributed_module", "connect", "local_client",
           "wait_for_workers"]

#: seconds to wait for a scheduler to answer, and for its first worker, by default
CONNECT_TIMEOUT = 10.0


def distributed_module():
    """The ``distributed`` module, or InvalidInputError saying how to install it."""
    try:
        import distributed
    except ImportError as err:
        raise InvalidInputError("Dask distributed is not installed in this Python: install "
                                "the pinned requirements.txt (dask[distributed]), or run "
                                "without a scheduler") from err
    return distributed


def connect(address, timeout=CONNECT_TIMEOUT):
    """A ``distributed.Client`` connected to the scheduler at ``address``
    (``"tcp://host:8786"``); InvalidInputError within ``timeout`` seconds when the address is
    malformed or no scheduler answers there."""
    distributed = distributed_module()
    try:
        return distributed.Client(address, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as err:
        detail = " ".join(str(err).split())[:200]
        raise InvalidInputError(
            f"could not reach a Dask scheduler at {address!r} within {timeout:g} s ({detail}); "
            f"start one there with `dask scheduler` and workers with `dask worker "
            f"{address}`, or check the address (tcp://HOST:PORT) and the firewall") from err


def local_client(n_workers):
    """A ``distributed.Client`` of a new LocalCluster of ``n_workers`` processes with one
    thread each (its scheduler's HTTP port chosen free, so several clusters can run on one
    machine); ``client.close()`` also stops the cluster."""
    n_workers = whole_number(n_workers, "a local cluster's number of workers")
    return distributed_module().Client(n_workers=n_workers, threads_per_worker=1,
                                       processes=True, dashboard_address=":0")


def wait_for_workers(client, timeout=CONNECT_TIMEOUT):
    """Return once ``client``'s scheduler has a worker; InvalidInputError after ``timeout``
    seconds without one, saying how to start workers."""
    try:
        client.wait_for_workers(1, timeout=timeout)
    except TimeoutError as err:
        address = client.scheduler.address
        raise InvalidInputError(
            f"no Dask worker joined the scheduler at {address} within {timeout:g} s: start "
            f"workers with `dask worker {address}`") from err
