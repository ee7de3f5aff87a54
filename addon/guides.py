"""Where a panel's help button takes the user: the guide page of the documentation site for the
panel (a path under docs/, such as ``guides/knee.md``).

The first of these that exists is opened:

1. the site at the *Docs URL* of the add-on's preferences (``<url>/<page>.html``), when set;
2. the site built beside the extension (``build/site/<page>.html``: a checkout after
   ``bash scripts/docs.sh``);
3. the page's Markdown in the extension's ``docs/`` folder (a checkout);
4. the site at the ``website`` of ``blender_manifest.toml``, when it names one.

No bpy here: the operator (operators/guides.py) reads the preference and opens the URL.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

#: the extension's folder: blender_manifest.toml, addon/, core/ (and docs/ in a checkout)
ROOT = Path(__file__).resolve().parents[1]


def manifest_website(root=ROOT):
    """The manifest's ``website`` (str), or "" when it has none."""
    try:
        with open(root / "blender_manifest.toml", "rb") as f:
            return str(tomllib.load(f).get("website", "")).strip()
    except (OSError, tomllib.TOMLDecodeError):
        return ""


def guide_url(page, docs_url="", root=ROOT):
    """The URL that shows the documentation page ``page`` (``"guides/knee.md"``); ``docs_url``
    is the preference's site address ("" when unset). ValueError when nothing can show it."""
    if not page.endswith(".md") or page.startswith(("/", ".")):
        raise ValueError(f"{page!r} is not a page of the documentation (a path such as "
                         f"guides/knee.md)")
    html = page[:-len(".md")] + ".html"
    if docs_url.strip():
        return docs_url.strip().rstrip("/") + "/" + html
    for local in (root / "build" / "site" / html, root / "docs" / page):
        if local.is_file():
            return local.as_uri()
    website = manifest_website(root)
    if website:
        return website.rstrip("/") + "/" + html
    raise ValueError("this installation has no copy of the documentation and no site address: "
                     "set Docs URL in Edit > Preferences > Add-ons > Spline Joints to the "
                     "documentation site's address, or build the site in a checkout with "
                     "bash scripts/docs.sh")
