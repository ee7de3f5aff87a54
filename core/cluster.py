"""Dask distributed for work beyond one process: the sweeps of :mod:`core.sweep` and the
batch bakes of ``scripts/bake.py`` connect to a scheduler, start a local cluster and wait for
workers through these functions. ``distributed`` is imported only when one is called, so
the rest of the core (and the extension) does not need it.
"""

import asyncio
from concurrent.futures import ThreadPoolExecutor

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
    malformed, no scheduler answers there, or something else answers there (a web server, a
    scheduler's dashboard port). A refused address leaves no thread behind in this process."""
    distributed = distributed_module()
    try:
        _handshake(distributed, address, timeout)
    except Exception as err:            # noqa: BLE001 - whatever answered, it is not a scheduler
        raise _unreachable(address, timeout, err) from err
    try:
        return distributed.Client(address, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as err:
        raise _unreachable(address, timeout, err) from err


def _unreachable(address, timeout, err):
    """The InvalidInputError of :func:`connect` for the failure ``err``: what went wrong and
    what to do."""
    text = " ".join(str(err).split())[:200]
    if isinstance(err, TimeoutError) and not text:
        reason = "the connection was accepted, but nothing answered distributed's handshake"
    elif isinstance(err, (OSError, ValueError)):
        reason = text
    else:
        reason = f"something answered, but not as a Dask scheduler: {type(err).__name__}: {text}"
    return InvalidInputError(
        f"could not reach a Dask scheduler at {address!r} within {timeout:g} s ({reason}); "
        f"start one there with `dask scheduler` and workers with `dask worker {address}`, or "
        f"check the address (tcp://HOST:PORT; a scheduler listens on port 8786 unless told "
        f"otherwise, and 8787 is its dashboard) and the firewall")


def _handshake(distributed, address, timeout):
    """Open one connection to ``address`` and complete distributed's handshake, then close it;
    raise when that fails or takes more than ``timeout`` seconds.

    A ``distributed.Client`` is made only after this succeeds, because a Client whose start
    fails keeps its IO-loop thread running in this process for good, and its handshake has no
    time limit: a server that accepts the connection and never answers holds it forever. The
    attempt runs on an event loop of its own in a thread of its own, so it also works where the
    calling thread already runs an event loop (Jupyter)."""
    async def attempt():
        comm = await distributed.comm.connect(address, timeout=timeout)
        await comm.close()

    with ThreadPoolExecutor(1, thread_name_prefix="spline_joints_handshake") as pool:
        pool.submit(asyncio.run, asyncio.wait_for(attempt(), timeout)).result()


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
