"""The documentation site built once per test session, strict, with the docs environment
(.venv-docs, ``bash scripts/setup_env.sh docs``; scripts/test.sh creates it). Without that
environment the site's tests skip and say how to create it, except in CI (``CI`` set), where
scripts/test.sh has created it and a missing one fails."""

import pytest
from _site import MKDOCS, build_site, missing


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The folder of the built site."""
    if not MKDOCS.exists():
        missing("no docs environment: bash scripts/setup_env.sh docs")
    site_dir = tmp_path_factory.mktemp("site")
    run = build_site(site_dir)
    assert run.returncode == 0, f"the strict docs build failed:\n{run.stderr[-4000:]}"
    return site_dir

