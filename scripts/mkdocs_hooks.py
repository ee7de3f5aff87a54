"""MkDocs hooks of the documentation site (mkdocs.yml ``hooks``).

The core's docstrings name objects with Sphinx roles (``:func:`name```), which Markdown leaves
as the role's text before the code span; the API pages show the code span alone."""

import re

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const):(?=<code>)")


def on_page_content(html, **kwargs):
    """The page's HTML with the roles' text before code spans removed."""
    return _ROLE.sub("", html)
