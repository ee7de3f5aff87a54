"""The built site in a headless Chromium (Debian's package; scripts/setup_env.sh docs installs
it): the getting started page, a guide, an API page and the benchmarks page open with every
image loaded, and the site's search finds "reach cone". Screenshots go to build/docs_check/
for a person to look at."""

import pytest
from _browser import Browser, Site, chromium_path
from _site import ROOT, missing

SHOTS = ROOT / "build" / "docs_check"
PAGES = ["getting-started.html", "guides/rig.html", "reference/joints.html", "benchmarks.html"]

#: every <img> of the page once it has loaded or failed: [src, loaded]
IMAGES = """Promise.all(Array.from(document.images).map(img => img.complete ? null :
    new Promise(done => { img.addEventListener('load', done); img.addEventListener('error', done); })))
  .then(() => Array.from(document.images).map(img => [img.src, img.naturalWidth > 0]))"""

#: types a query into the search box and resolves to the titles of the results
SEARCH = """new Promise((resolve, reject) => {
  const toggle = document.querySelector('[data-md-toggle="search"]');   // the search overlay open
  toggle.checked = true;
  toggle.dispatchEvent(new Event('change'));
  const input = document.querySelector('.md-search__input');
  input.focus();
  input.value = 'reach cone';
  for (const type of ['focus', 'input', 'keyup']) input.dispatchEvent(new Event(type, {bubbles: true}));
  const started = Date.now();
  const poll = () => {
    const items = document.querySelectorAll('.md-search-result__item');
    if (items.length) return setTimeout(() => resolve(Array.from(items).map(i => i.innerText)), 500);
    if (Date.now() - started > 20000) return reject('no search results after 20 s');
    setTimeout(poll, 100);
  };
  poll();
})"""


@pytest.fixture(scope="module")
def browser():
    if not chromium_path():
        missing("no chromium on PATH: bash scripts/setup_env.sh docs installs it")
    with Browser() as b:
        yield b


@pytest.fixture(scope="module")
def base_url(site):
    with Site(site) as url:
        yield url


@pytest.mark.parametrize("page", PAGES)
def test_page_opens_with_every_image(page, browser, base_url):
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.goto(base_url + page)
    title = browser.evaluate("document.title")
    assert "404" not in title and "Spline Joints" in title, title
    images = browser.evaluate(IMAGES)
    assert [src for src, ok in images if not ok] == []
    if page in ("getting-started.html", "guides/rig.html"):
        assert len([src for src, _ in images if "/images/" in src]) >= 3, f"{page}: {images}"
    if page.startswith("reference/"):
        assert browser.evaluate("document.querySelectorAll('.doc-heading').length") > 50
    if page == "benchmarks.html":
        assert browser.evaluate("document.querySelectorAll('table').length") > 10
    name = page.replace("/", "_").replace(".html", "")
    browser.screenshot(str(SHOTS / f"{name}.png"))
    if images:                                # and where the page's first picture is
        top = browser.evaluate("document.images[document.images.length > 1 ? 1 : 0]"
                               ".getBoundingClientRect().top + window.scrollY")
        browser.screenshot(str(SHOTS / f"{name}_picture.png"), top=top - 150, max_height=1100)


def test_search_finds_reach_cone(browser, base_url):
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.goto(base_url + "index.html")
    results = browser.evaluate(SEARCH)
    assert any("reach cone" in r.lower() for r in results), results[:5]
    browser.screenshot(str(SHOTS / "search_reach_cone.png"), max_height=900)
