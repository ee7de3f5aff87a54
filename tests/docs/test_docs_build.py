"""The documentation site: the strict build (a broken link, a missing page, a cross-reference
without a target or a docstring that does not render fails it), the API reference covering
every public module of core/, the README's links, and the changelog's version."""

import re
import shutil
import tomllib

from _site import ROOT, build_site

DOCS = ROOT / "docs"


def public_modules():
    """Every module of core/ whose dotted path has no part starting with an underscore."""
    out = set()
    for path in (ROOT / "core").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(p.startswith("_") for p in parts):
            out.add(".".join(parts))
    return out


def test_the_site_builds_strict(site):
    for page in ("index.html", "getting-started.html", "guides/knee.html", "benchmarks.html",
                 "reference/joints.html", "search/search_index.json"):
        assert (site / page).is_file(), page


def test_a_broken_link_fails_the_build(tmp_path, site):
    """The strict build is a check that can fail: a page with a dead link and a cross-reference
    to a missing object, built from a copy of the docs."""
    copy = tmp_path / "repo"
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    (copy / "core").symlink_to(ROOT / "core")
    (copy / "scripts").symlink_to(ROOT / "scripts")
    with open(copy / "docs" / "changelog.md", "a") as f:
        f.write("\n[a page that is not there](nowhere.md) and [core.no_such_module][]\n")
    run = build_site(tmp_path / "out", root=copy)
    assert run.returncode != 0
    assert "nowhere.md" in run.stderr and "core.no_such_module" in run.stderr


def test_the_api_reference_covers_every_public_module():
    documented = set()
    for page in (DOCS / "reference").glob("*.md"):
        documented |= set(re.findall(r"^::: ([\w.]+)$", page.read_text(), re.M))
    assert public_modules() - documented == set(), "add these modules to a page of docs/reference/"
    assert documented - public_modules() == set(), "these modules are not in core/"


def test_the_readme_links_resolve():
    text = (ROOT / "README.md").read_text()
    links = [l for l in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if "://" not in l]
    assert links and [l for l in links if not (ROOT / l).exists()] == []
    assert len(text.splitlines()) <= 250


def test_the_changelog_names_the_manifest_version():
    version = tomllib.loads((ROOT / "blender_manifest.toml").read_text())["version"]
    headings = re.findall(r"^## \[([^\]]+)\]", (DOCS / "changelog.md").read_text(), re.M)
    assert headings and headings[0] in (version, "Unreleased"), headings
    assert version in headings, f"the changelog has no entry for version {version}"


def test_every_list_item_renders_as_one(site):
    """Python-Markdown takes a list item for text when no blank line separates it from a
    paragraph, or a step for part of the sub-list before it; the site must show every item of
    a page's Markdown as a list item."""
    item = re.compile(r"^ *(\d+\.|[-*]) \S")
    for page in sorted(DOCS.rglob("*.md")):
        if page.parent.name == "reference" or page.name in ("troubleshooting.md",):
            continue
        fence, items = False, 0
        for line in page.read_text().splitlines():
            if line.lstrip().startswith("```"):
                fence = not fence
            elif not fence and item.match(line):
                items += 1
        html = (site / page.relative_to(DOCS)).with_suffix(".html").read_text()
        assert html.count("<li>") == items, page.relative_to(DOCS)
