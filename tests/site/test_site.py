"""The built website, read in headless Chromium: whole, offline, and as _toc.yml says.

Every page of _toc.yml (the intro, each chapter, the API page) is opened once, with every
request recorded, and checked below; a chapter added to _toc.yml is covered at once.
A full-page screenshot of each goes to _build/screenshots/ (not in `make test`: TX_SCREENSHOTS=0).
"""

from __future__ import annotations

import json
import re
import zipfile
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest

from sitekit import (
    EXTRA_PAGES, HTML, WIDGET_VIEW, book_config, is_notebook, open_page, toc_pages,
)

PAGES = toc_pages()
NOTEBOOKS = [p for p in PAGES if is_notebook(p)]
CHAPTERS = [p for p in NOTEBOOKS if p.startswith("chapters/")]


def test_toc_lists_pages():
    assert PAGES[0] == "intro" and "api" in PAGES, PAGES
    assert CHAPTERS, "no chapter notebook in _toc.yml"
    missing = [p for p in PAGES if not (HTML / f"{p}.html").is_file()]
    assert not missing, f"pages of _toc.yml missing from the build: {missing}"


# --------------------------------------------------------------------------- offline


@pytest.mark.parametrize("docname", PAGES)
def test_page_loads_everything_from_the_site(visits, docname):
    """No request leaves 127.0.0.1, none fails, and nothing logs an error."""
    visit = visits(docname)
    assert visit.requests, "no request recorded"
    assert not visit.problems(), "\n".join(visit.problems())


# Every icon of the page's header and sidebars, as the reader sees it: drawn in Font Awesome's
# font (its glyph named in the stylesheet, the font loaded), not by the theme's script
ICONS_JS = """() => [...document.querySelectorAll('i[class*="fa-"], span[class*="fa-"]')]
    .filter(i => i.getClientRects().length)
    .map(i => ({icon: i.className.replace(/\\s+/g, ' '),
                glyph: getComputedStyle(i, '::before').content,
                font: getComputedStyle(i).fontFamily,
                loaded: document.fonts.check('900 16px "Font Awesome 6 Free"'),
                hidden: i.getAttribute('aria-hidden'),
                width: i.getBoundingClientRect().width}))"""


@pytest.mark.parametrize("width", ["visits", "phone_visits"], ids=["desktop", "phone"])
def test_icons_are_drawn_from_the_font_without_the_icon_script(request, width):
    visit = request.getfixturevalue(width)(CHAPTERS[0])
    assert not [u for u in visit.requests if "fontawesome" in u and u.endswith(".js")], visit.requests
    icons = visit.page.evaluate(ICONS_JS)
    assert len(icons) >= 4, icons  # the sidebar's, the download's, full screen, the theme switch
    bad = [i for i in icons if i["glyph"] in ("none", "normal", '""') or "Font Awesome" not in i["font"]
           or not i["loaded"] or i["width"] < 8 or i["hidden"] != "true"]  # a screen reader skips the glyph
    assert not bad, bad


def test_a_request_for_another_host_is_recorded_and_goes_nowhere(browser, site):
    """What the test above relies on: a page's request for another host is recorded as external,
    and it fails in the browser (no other host resolves) instead of leaving the machine."""
    visit = open_page(browser, site, "intro.html", settle=False)
    try:
        said = visit.page.evaluate("""() => fetch('http://example.com/tx-probe.js')
            .then(r => 'answered ' + r.status, e => 'failed: ' + e.message)""")
        assert said.startswith("failed"), said
        assert visit.external == ["http://example.com/tx-probe.js"], visit.requests
        assert "external request: http://example.com/tx-probe.js" in visit.problems()
    finally:
        visit.context.close()


@pytest.mark.parametrize("docname", EXTRA_PAGES)
def test_generated_page_loads_everything_from_the_site(browser, site, docname):
    visit = open_page(browser, site, f"{docname}.html")
    try:
        assert not visit.problems(), "\n".join(visit.problems())
    finally:
        visit.context.close()


class _Assets(HTMLParser):
    """Every URL an HTML page loads by itself (not links, which a reader follows)."""

    LOADS = {"script": "src", "img": "src", "iframe": "src", "source": "src", "video": "src",
             "audio": "src", "embed": "src", "object": "data", "track": "src", "input": "src"}
    LINK_RELS = {"stylesheet", "preload", "modulepreload", "prefetch", "icon", "shortcut",
                 "manifest", "apple-touch-icon", "dns-prefetch", "preconnect"}

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in self.LOADS and attrs.get(self.LOADS[tag]):
            self.urls.append(attrs[self.LOADS[tag]])
        if tag == "link" and set((attrs.get("rel") or "").split()) & self.LINK_RELS:
            self.urls.append(attrs.get("href") or "")
        for attr in ("srcset", "data-src"):
            if attrs.get(attr):
                self.urls.append(attrs[attr])
        style = attrs.get("style") or ""
        self.urls += re.findall(r"url\(\s*['\"]?([^'\")]+)", style)


def _is_remote(url: str) -> bool:
    return bool(re.match(r"^\s*([a-z][a-z0-9+.-]*:)?//", url, re.I))


def test_no_page_or_stylesheet_names_another_host():
    """Every .html and .css file of the site, not only the pages above."""
    offenders = []
    for path in sorted(HTML.rglob("*.html")):
        parser = _Assets()
        parser.feed(path.read_text(encoding="utf-8", errors="replace"))
        offenders += [f"{path.relative_to(HTML)}: {u}" for u in parser.urls if _is_remote(u)]
    for path in sorted(HTML.rglob("*.css")):
        text = path.read_text(encoding="utf-8", errors="replace")
        urls = re.findall(r"url\(\s*['\"]?([^'\")]+)", text)
        urls += re.findall(r"@import\s+['\"]([^'\"]+)", text)
        offenders += [f"{path.relative_to(HTML)}: {u}" for u in urls if _is_remote(u)]
    assert not offenders, "\n".join(offenders)


# --------------------------------------------------------------------------- content

HEADINGS_JS = """() => {
    const text = el => {
        const copy = el.cloneNode(true);
        copy.querySelectorAll('.headerlink').forEach(a => a.remove());
        return copy.textContent.replace(/\\s+/g, ' ').trim();
    };
    return [...document.querySelectorAll('article h1, article h2, article h3, article h4, article h5, article h6')]
        .map(h => ({tag: h.tagName, text: text(h),
                    folded: !!h.closest('.admonition.dropdown, details'),
                    visible: h.checkVisibility()}));
}"""


@pytest.mark.parametrize("docname", PAGES)
def test_title_and_headings(visits, docname):
    page = visits(docname).page
    headings = page.evaluate(HEADINGS_JS)
    h1 = [h for h in headings if h["tag"] == "H1"]
    assert len(h1) == 1, headings
    title = page.title()
    assert title.startswith(h1[0]["text"]), (title, h1[0]["text"])
    assert book_config()["title"] in title
    for h in headings:
        assert h["text"], f"empty {h['tag']}"
        assert h["visible"] or h["folded"], f"{h['tag']} {h['text']!r} is not shown"


MATH_JS = """() => {
    const math = [...document.querySelectorAll('article .math')];
    return {
        formulas: math.length,
        typeset: math.filter(m => m.querySelector('mjx-container')).length,
        containers: document.querySelectorAll('article mjx-container').length,
        errors: [...document.querySelectorAll('mjx-merror')].map(e => e.textContent),
        // typeset in the build (_ext/static_math.py): each formula's MathML for a screen
        // reader, its glyphs hidden from one, no formula a Tab stop, no MathJax on the page
        spoken: [...document.querySelectorAll('article mjx-container')]
            .filter(c => c.querySelector(':scope > mjx-assistive-mml > math')
                         && c.querySelector(':scope > mjx-math[aria-hidden="true"]')).length,
        tabStops: document.querySelectorAll('mjx-container[tabindex]').length,
        mathjax: !!window.MathJax || [...document.scripts].some(s => /mathjax/i.test(s.src)),
        // the glyphs drawn in MathJax's own fonts, served by the site
        fonts: [...document.fonts].filter(f => f.family.startsWith('MJX') && f.status === 'loaded').length,
        // each glyph drawn by its rule in tx-math.css: a glyph without one (its ::before has no
        // content) takes no room, as every space of a \text{...} once did
        unstyled: [...new Map([...document.querySelectorAll('article mjx-c[class]')]
                                  .map(c => [c.className, c])).values()]
            .filter(c => getComputedStyle(c, '::before').content === 'none').map(c => c.className),
    };
}"""


@pytest.mark.parametrize("docname", PAGES)
def test_formulas_are_typeset(visits, docname):
    page = visits(docname).page
    math = page.evaluate(MATH_JS)
    assert math["typeset"] == math["formulas"], math
    assert math["containers"] >= math["formulas"], math
    assert not math["errors"], math["errors"]
    assert math["spoken"] == math["containers"] and math["tabStops"] == 0 and not math["mathjax"], math
    assert math["fonts"] > 0 or not math["formulas"], math
    assert not math["unstyled"], f"glyphs with no rule in tx-math.css: {math['unstyled']}"
    text = page.evaluate(VISIBLE_TEXT_JS, True)  # the prose, less code: where raw TeX would show
    for raw in ("\\(", "\\)", "\\[", "\\]", "$$"):
        assert raw not in text, f"raw TeX {raw!r} left in the page: ...{text[max(0, text.find(raw) - 80):text.find(raw) + 80]}..."


IMAGES_JS = """async () => {
    const images = [...document.images];
    for (const img of images) {
        img.scrollIntoView();
        try { await img.decode(); } catch (e) {}
    }
    return images.map(img => ({src: img.currentSrc.slice(0, 120), width: img.naturalWidth,
                               alt: img.getAttribute('alt') || '',
                               inArticle: !!img.closest('article'),
                               caption: (img.closest('figure')?.querySelector('figcaption')?.textContent || '').trim()}));
}"""


@pytest.mark.parametrize("docname", PAGES)
def test_images_load_with_alt_text(visits, docname):
    page = visits(docname).page
    images = page.evaluate(IMAGES_JS)
    broken = [i["src"] for i in images if i["width"] == 0]
    assert not broken, f"images that did not load: {broken}"
    no_alt = [i["src"] for i in images if i["inArticle"] and not i["alt"].strip()]
    assert not no_alt, f"images without alt text: {no_alt}"


@pytest.mark.parametrize("docname", CHAPTERS)
def test_chapter_figures_have_captions_and_alt_text(visits, docname):
    page = visits(docname).page
    figures = page.evaluate(
        """() => [...document.querySelectorAll('article figure')].map(f => ({
            id: f.id,
            caption: (f.querySelector('figcaption')?.textContent || '').trim(),
            images: [...f.querySelectorAll('img')].map(i => i.getAttribute('alt') || ''),
            widgets: f.querySelectorAll('.widget-subarea').length,
        }))"""
    )
    for fig in figures:
        assert fig["caption"], f"figure {fig['id']} has no caption"
        assert fig["images"] or fig["widgets"], f"figure {fig['id']} shows nothing"
        assert all(alt.strip() for alt in fig["images"]), f"figure {fig['id']}: image without alt text"
    # Every image a cell drew is a captioned figure (the chapters set mystnb.figure.caption).
    loose = page.evaluate(
        """() => [...document.querySelectorAll('article .cell_output img')]
              .filter(img => !img.closest('figure')).map(img => img.currentSrc.slice(0, 80))"""
    )
    assert not loose, f"cell outputs drawn without a figure caption: {loose}"


@pytest.mark.parametrize("docname", PAGES)
def test_widget_snapshots_render(visits, docname):
    page = visits(docname).page
    views = page.evaluate(
        """(selector) => [...document.querySelectorAll(selector)].map(view => {
            const area = view.previousElementSibling;
            const widget = area && area.querySelector('.lm-Widget');
            const box = widget && widget.getBoundingClientRect();
            return {
                model: JSON.parse(view.textContent).model_id,
                rendered: !!widget && box.width > 0 && box.height > 0 && widget.checkVisibility(),
                classes: widget ? widget.className : '',
                outputs: [...(area ? area.querySelectorAll('.widget-output') : [])]
                    .map(o => o.querySelectorAll('.jp-OutputArea-output').length),
            };
        })""",
        WIDGET_VIEW,
    )
    for view in views:
        assert view["rendered"], f"widget {view['model']} did not render: {view}"
        assert all(view["outputs"]), f"an Output widget of {view['model']} is empty: {view}"
    if is_notebook(docname) and '"application/vnd.jupyter.widget-state+json"' in (HTML / f"{docname}.html").read_text():
        assert views, "widget state on the page but no widget view"


# --------------------------------------------------------------------------- reader features


@pytest.mark.parametrize("docname", PAGES)
def test_previous_and_next_follow_the_toc(visits, docname, site):
    page = visits(docname).page
    i = PAGES.index(docname)
    for selector, neighbour in (("a.left-prev", i - 1), ("a.right-next", i + 1)):
        links = page.locator(f".prev-next-area {selector}")
        if 0 <= neighbour < len(PAGES):
            assert links.count() == 1, f"no {selector} link"
            href = links.first.evaluate("a => a.href")
            assert href == f"{site}{PAGES[neighbour]}.html", (selector, href)
        else:
            assert links.count() == 0, f"{selector} past the end of the book"


def test_next_links_walk_the_whole_book(browser, site):
    """Clicking "next" from the first page visits every page in _toc.yml order."""
    visit = open_page(browser, site, f"{PAGES[0]}.html", settle=False)
    # The walk needs each page's HTML, not its scripts, images and fonts (the other tests load
    # those): fetching and running them on every page made this the suite's longest test.
    heavy = {"script", "image", "font", "media", "stylesheet"}
    visit.context.route("**/*", lambda r: r.abort() if r.request.resource_type in heavy else r.fallback())
    try:
        seen = [urlsplit(visit.page.url).path]
        for _ in PAGES[1:]:
            with visit.page.expect_navigation(wait_until="load"):
                visit.page.locator(".prev-next-area a.right-next").click()
            seen.append(urlsplit(visit.page.url).path)
        assert seen == [f"/{p}.html" for p in PAGES]
        assert visit.page.locator(".prev-next-area a.right-next").count() == 0
        assert not visit.external, visit.external
    finally:
        visit.context.close()


FIGURES_JS = """() => [...document.querySelectorAll("article img")].map(img => {
    const link = img.closest("a");
    return {src: img.src, href: link ? link.href : null, figureLink: !!img.closest("a.tx-figure-link"),
            natural: img.naturalWidth, shown: img.getBoundingClientRect().width};
})"""


def test_a_figure_opens_full_size_on_a_phone(phone_visits):
    """At 390 px a figure drawn for the 672 px column is shown at about half its size (labels of
    5 to 6 px): each figure file links to itself, which the browser shows full size; explorer
    frames (inline images, switched by their controls) are not links."""
    visit = phone_visits("chapters/09_final_linear_softmax")
    images = visit.page.evaluate(FIGURES_JS)
    files = [i for i in images if "/_images/" in i["src"]]
    frames = [i for i in images if i["src"].startswith("data:")]
    assert len(files) >= 3 and frames, images
    assert all(i["figureLink"] and i["href"] == i["src"] for i in files), files
    assert not any(i["figureLink"] for i in frames)
    # most are shown at two thirds of their size or less (in chapter 9: 1.1 to 2 times smaller)
    shrunk = [i["natural"] / i["shown"] for i in files if i["shown"]]
    assert sum(r > 1.5 for r in shrunk) > len(shrunk) / 2, shrunk
    response = visit.context.request.get(files[0]["href"])
    assert response.ok and response.headers["content-type"] == "image/png"


@pytest.mark.parametrize("docname", NOTEBOOKS)
def test_download_button_gives_the_notebook(visits, docname, site):
    visit = visits(docname)
    page = visit.page
    page.locator(".dropdown-download-buttons button.dropdown-toggle").click()
    link = page.locator("a.btn-download-source-button")
    link.wait_for(state="visible")
    href = link.evaluate("a => a.href")
    assert href == f"{site}_sources/{docname}.ipynb", href
    response = visit.context.request.get(href)
    assert response.ok, response.status
    notebook = json.loads(response.body())
    assert notebook["nbformat"] == 4 and notebook["cells"]
    page.keyboard.press("Escape")


def test_launch_buttons_need_a_repository():
    """A Binder button only with a real repository: both set, or neither."""
    config = book_config()
    repo = (config.get("repository") or {}).get("url") or ""
    binder = (config.get("launch_buttons") or {}).get("binderhub_url") or ""
    assert bool(repo) == bool(binder), (
        f"repository.url {repo!r} and launch_buttons.binderhub_url {binder!r} in _config.yml: "
        "set both (a published repository) or neither")
    assert not PLACEHOLDER.search(repo), f"repository.url {repo!r} is a placeholder"


@pytest.mark.parametrize("docname", NOTEBOOKS)
def test_binder_button_only_for_a_real_repository(visits, docname):
    config = book_config()
    repo = (config["repository"].get("url") or "").rstrip("/")
    visit = visits(docname)
    hrefs = visit.page.locator(".dropdown-launch-buttons a").evaluate_all("links => links.map(a => a.href)")
    # A link only: the page loaded nothing from Binder.
    assert not [u for u in visit.requests if "mybinder" in u]
    if not repo:
        assert not hrefs, f"launch buttons with no repository configured: {hrefs}"
        return
    org_repo = urlsplit(repo).path.strip("/")
    branch = config["repository"].get("branch", "master")
    binder = config["launch_buttons"]["binderhub_url"].rstrip("/")
    book_path = config["repository"].get("path_to_book", "").strip("/")
    notebook = "/".join(p for p in (book_path, f"{docname}.ipynb") if p)
    interface = "lab/tree/" if config["launch_buttons"].get("notebook_interface") == "jupyterlab" else "tree/"
    expected = f"{binder}/v2/gh/{org_repo}/{branch}?urlpath={interface}{notebook}"
    assert expected in hrefs, hrefs


def test_intro_says_how_to_run_the_book(visits):
    """Clone (with the configured repository, if any), then `make lab`."""
    page = visits(PAGES[0]).page
    text = page.locator("article").inner_text()
    assert "make lab" in text
    repo = (book_config()["repository"].get("url") or "").rstrip("/")
    if repo:
        assert f"git clone {repo}" in text, "the home page does not name the configured repository"
    else:
        assert "git clone" not in text, "a clone command with no repository configured"
    assert "{{" not in text and "}}" not in text, "an unrendered substitution on the home page"


@pytest.mark.parametrize("docname", ["intro", "teachers"])
def test_the_books_source_is_offered_where_no_repository_is_named(visits, docname):
    """Without a repository, the home page's set-up and the teachers' `make course` link the
    site's book-source.zip: the folder the site was built from, chapters and solutions included."""
    if (book_config()["repository"].get("url") or "").strip():
        pytest.skip("the book names its repository: its pages say git clone")
    links = visits(docname).page.locator("article a[href$='book-source.zip']")
    assert links.count() == 1 and links.first.is_visible()
    with zipfile.ZipFile(HTML / "book-source.zip") as archive:
        names = set(archive.namelist())
    for needed in ("Makefile", "_config.yml", "_toc.yml", "requirements.txt", "chapters/01_high_level_look.ipynb",
                   "tx/exercises/course.py"):
        assert f"transformer-book/{needed}" in names, needed
    assert not any("/_build/" in n or "/.venv/" in n for n in names)


def test_intro_links_the_learner_edition(visits):
    page = visits(PAGES[0]).page
    link = page.locator("article a[href$='learner-edition.zip']")
    assert link.count() == 1
    assert link.is_visible()
    # in the first screen (1280 x 900), after what the reader will build
    page.evaluate("() => window.scrollTo(0, 0)")
    assert link.bounding_box()["y"] + link.bounding_box()["height"] < 900, "the learner edition is below the fold"
    first = page.locator("article p").first.inner_text()
    assert first.startswith("What you will build.") and "encoder–decoder Transformer" in first, first
    with page.expect_download() as download_info:
        link.click()
    download = download_info.value
    assert download.failure() is None
    path = download.path()
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        notebooks = {n.rsplit("/", 1)[-1]: n for n in names if n.endswith(".ipynb")}
        for chapter in CHAPTERS:
            name = chapter.rsplit("/", 1)[-1] + ".ipynb"
            assert name in notebooks, f"{name} is not in the learner edition: {names}"
            cells = json.loads(archive.read(notebooks[name]))["cells"]
            assert not [c for c in cells if "solution" in c.get("metadata", {}).get("tags", [])], name
            assert not [c for c in cells if "solution-start" in "".join(c["source"])], name


@pytest.mark.parametrize("docname", CHAPTERS)
def test_solutions_are_hidden_until_opened(visits, docname):
    page = visits(docname).page
    solutions = page.locator("article .solution.dropdown")
    count = solutions.count()
    assert count, "a chapter without solutions (each chapter ends with exercises)"
    # A solution without `:class: dropdown` would be open for all to read.
    assert page.locator("article .solution:not(.dropdown)").count() == 0
    for i in range(count):
        solution = solutions.nth(i)
        body = solution.locator(":scope > :not(.admonition-title)")
        assert body.count(), "a solution with nothing in it"
        assert not any(body.nth(j).is_visible() for j in range(body.count())), f"solution {i + 1} is open"
        solution.locator(".admonition-title").first.scroll_into_view_if_needed()
        solution.locator("button.toggle-button").first.click()
        body.first.wait_for(state="visible")
        assert all(body.nth(j).is_visible() for j in range(body.count()))


@pytest.mark.parametrize("docname", CHAPTERS)
def test_a_solutions_bar_repeats_its_exercises_title(visits, docname):
    page = visits(docname).page
    pairs = page.evaluate(
        """() => [...document.querySelectorAll('article .solution > .admonition-title a')].map(a => {
            const exercise = document.getElementById(a.getAttribute('href').slice(1));
            const title = exercise && exercise.querySelector('.admonition-title');
            const words = text => text.split(/\\s+/).filter(Boolean).join(' ');
            return [words(a.textContent), title ? words(title.textContent) : null];
        })"""
    )
    assert pairs, "a chapter without solutions"
    for solution, exercise in pairs:
        # "Exercise 7.2 (The paper’s Add & Norm, in training)" in both, apostrophes included
        assert exercise is not None and solution == exercise, (solution, exercise)


def test_each_reference_links_back_to_the_pages_that_cite_it(visits):
    """Every entry names the pages that cite it ("Cited in: ch. 3, ch. 11"), and each link lands
    on a citation of that entry on its page."""
    page = visits("references").page
    entries = page.evaluate(
        """() => [...document.querySelectorAll('article div.citation')].map(e => ({
            id: e.id, back: [...e.querySelectorAll('a.reference.internal')]
                .map(a => a.getAttribute('href'))}))"""
    )
    assert entries, "no bibliography on the references page"
    for entry in entries:
        assert entry["back"], f"{entry['id']}: no page cites it"
        for href in entry["back"]:
            docname, _, anchor = href.partition("#")
            docname = docname.removesuffix(".html")
            # the link lands on a citation of this entry
            cited = visits(docname).page.evaluate(
                """(anchor) => { const at = document.getElementById(anchor);
                    return at ? [...at.querySelectorAll('a[href*="references.html#"]')]
                        .map(a => a.getAttribute('href').split('#')[1]) : null; }""", anchor)
            assert cited is not None, f"{href}: no element {anchor!r} on {docname}"
            assert entry["id"] in cited, f"{href} lands on a citation of {cited}, not of {entry['id']}"


def test_search_finds_attention(browser, site):
    visit = open_page(browser, site, "search.html?q=attention", settle=False)
    try:
        results = visit.page.locator("#search-results ul.search li")
        results.first.wait_for(state="visible", timeout=30_000)
        hrefs = results.locator("a").evaluate_all("links => links.map(a => a.href)")
        assert any("/chapters/" in h for h in hrefs), hrefs
        assert not visit.problems(), "\n".join(visit.problems())
    finally:
        visit.context.close()


@pytest.mark.parametrize("docname", PAGES)
def test_link_preview_tags(visits, docname):
    page = visits(docname).page
    meta = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('meta[name], meta[property]')]
              .map(m => [m.getAttribute('name') || m.getAttribute('property'), m.content]))"""
    )
    h1 = page.evaluate(HEADINGS_JS)[0]["text"]
    assert len(meta.get("description", "")) >= 40, meta
    assert meta["og:description"] == meta["description"]
    assert meta["og:title"] == h1
    assert meta["og:site_name"] == book_config()["title"]
    assert meta.get("og:type")
    assert "\\(" not in meta["description"] and "[" not in meta["description"], meta["description"]


def test_404_page(browser, site):
    visit = open_page(browser, site, "404.html")
    try:
        page = visit.page
        assert "Page not found" in page.title()
        assert page.locator("article h1").inner_text().strip().startswith("Page not found")
        # In the book's theme, with the sidebar that leads back into the book.
        assert any(u.endswith(".css") or ".css?" in u for u in visit.requests)
        assert page.locator(".bd-sidebar-primary a.reference").count() >= len(PAGES) - 1
        home = page.locator("article a", has_text="start of the book")
        assert urljoin(page.url, home.get_attribute("href")) == f"{site}{PAGES[0]}.html"
        assert not visit.problems(), "\n".join(visit.problems())
    finally:
        visit.context.close()


# --------------------------------------------------------------------------- reading (issue 16)
# What a reader sees at 1280 px, after MathJax: no markdown left as text, no equation or figure
# cut or shrunk, no exercise answer on show, no placeholder link and no path of the build machine.

PLACEHOLDER = re.compile(r"your-org|example\.(com|org)|/OWNER/|/REPO\b|\bTODO\b|\bFIXME\b", re.I)
MACHINE_PATH = re.compile(r"(/work/|/home/[a-z_]|/Users/|/tmp/|/root/|site-packages|dist-packages|[A-Z]:\\\\)")

VISIBLE_TEXT_JS = """(skipCode) => {
    // The prose a reader sees: visible text nodes of the article, less code when asked.
    const skip = skipCode ? 'pre, code, script, style, textarea, mjx-container, .highlight'
                          : 'script, style, textarea, mjx-container';
    const walker = document.createTreeWalker(document.querySelector('article'), NodeFilter.SHOW_TEXT);
    const lines = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const el = node.parentElement;
        if (el.closest(skip) || !el.checkVisibility()) continue;
        lines.push(node.textContent);
    }
    return lines.join('');
}"""


def _snippet(text: str, match: re.Match) -> str:
    return text[max(0, match.start() - 60):match.end() + 60].replace("\n", " ")


@pytest.mark.parametrize("docname", PAGES)
def test_no_markdown_table_left_as_text(visits, docname):
    text = visits(docname).page.evaluate(VISIBLE_TEXT_JS, True)
    row = re.search(r"\|\s*:?[-—–]{1,}:?\s*\|", text)
    assert not row, f"a markdown table shown as text: ...{_snippet(text, row)}..."


@pytest.mark.parametrize("docname", PAGES)
def test_no_raw_dollar_math(visits, docname):
    text = visits(docname).page.evaluate(VISIBLE_TEXT_JS, True)
    dollars = re.search(r"\$[^$\s][^$]{0,200}?\$", text)
    assert not dollars, f"dollar math shown as text: ...{_snippet(text, dollars)}..."
    macro = re.search(r"\\(frac|varepsilon|epsilon|mathrm|operatorname|sqrt|alpha|beta|cdot|"
                      r"sum|text|mathbf|left|right)\b", text)
    assert not macro, f"a TeX command shown as text: ...{_snippet(text, macro)}..."


@pytest.mark.parametrize("docname", PAGES)
def test_no_special_token_swallowed_as_a_tag(visits, docname):
    # A sentence a cell writes as Markdown, with <bos> or <eos> in it unescaped, reached the
    # page as an HTML element the browser does not show: chapter 8 read "the word the row is
    # about to write: , about to write i" (issue 24). The page holds no such element.
    tags = visits(docname).page.evaluate(
        "() => [...document.querySelectorAll('article bos, article eos, article unk, "
        "article pad, article sep')].map(e => e.parentElement.textContent.slice(0, 120))")
    assert not tags, f"a special token written as an HTML tag, hidden: {tags}"


WIDE_EQUATIONS_JS = """() => [...document.querySelectorAll('article div.math')].map(block => {
    const math = block.querySelector('mjx-container > mjx-math');
    const eqno = block.querySelector('.eqno');
    const column = block.getBoundingClientRect();
    const box = math ? math.getBoundingClientRect() : column;
    const number = eqno ? eqno.getBoundingClientRect().width : 0;
    return {id: block.id || (eqno ? eqno.textContent.trim() : ''), column: column.width,
            math: box.width, number: number,
            left: box.left - column.left, right: column.right - box.right,
            text: block.textContent.trim().slice(0, 80)};
})"""


@pytest.mark.parametrize("docname", PAGES)
def test_display_equations_fit_the_column(visits, docname):
    """At 1280 px no display equation, with its number, is wider than the text column."""
    blocks = visits(docname).page.evaluate(WIDE_EQUATIONS_JS)
    wide = [b for b in blocks if b["math"] + b["number"] > b["column"] + 1 or b["left"] < -1]
    assert not wide, "equations wider than the column: " + "; ".join(
        f"{b['id']} needs {b['math'] + b['number']:.0f} px of {b['column']:.0f}" for b in wide)


@pytest.mark.parametrize("docname", CHAPTERS)
def test_no_check_output_under_an_exercise(visits, docname):
    """The check cells run (nbval), but their verdicts, made with the solution, are not shown."""
    shown = visits(docname).page.evaluate(
        """() => [...document.querySelectorAll('article .cell_output')]
              .filter(o => o.checkVisibility() && /Correct:/.test(o.innerText))
              .map(o => o.innerText.trim().slice(0, 100))""")
    assert not shown, f"check output visible: {shown}"


@pytest.mark.parametrize("docname", PAGES)
def test_no_placeholder_link_or_text(visits, docname):
    page = visits(docname).page
    hrefs = page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)")
    bad = [h for h in hrefs if PLACEHOLDER.search(h)]
    assert not bad, f"placeholder links: {bad}"
    text = page.evaluate(VISIBLE_TEXT_JS, False)
    found = PLACEHOLDER.search(text)
    assert not found, f"placeholder text: ...{_snippet(text, found)}..."


@pytest.mark.parametrize("docname", PAGES)
def test_no_equation_label_shown(visits, docname):
    """A chapter's code names equations by label (eq-ch10-rate); the page shows the number."""
    text = visits(docname).page.evaluate("() => document.body.innerText")
    found = re.search(r"\beq-(?:ch\d\d|a\d+)-[\w-]+", text)
    assert not found, f"an equation's label on the page: ...{_snippet(text, found)}..."


@pytest.mark.parametrize("docname", PAGES)
def test_an_equation_reference_has_one_pair_of_brackets(visits, docname):
    """{eq}`label` already shows (10.2); written inside brackets it read ((10.2))."""
    text = visits(docname).page.evaluate(VISIBLE_TEXT_JS, True)
    found = re.search(r"\(\((A?\d+\.\d+)\)", text)
    assert not found, f"an equation number in two pairs of brackets: ...{_snippet(text, found)}..."


@pytest.mark.parametrize("docname", PAGES)
def test_no_path_of_the_build_machine(visits, docname):
    text = visits(docname).page.evaluate(VISIBLE_TEXT_JS, False)
    found = MACHINE_PATH.search(text)
    assert not found, f"a path of the build machine on the page: ...{_snippet(text, found)}..."


FIGURE_SIZES_JS = """async () => {
    const out = [];
    for (const img of document.querySelectorAll('article .cell_output img')) {
        img.scrollIntoView();
        try { await img.decode(); } catch (e) {}
        const figure = img.closest('figure');
        out.push({id: figure ? figure.id : '', src: img.currentSrc.slice(-40),
                  natural: img.naturalWidth, shown: img.getBoundingClientRect().width,
                  visible: img.checkVisibility()});
    }
    return out;
}"""


@pytest.mark.parametrize("docname", PAGES)
def test_figures_are_not_shrunk(visits, docname):
    """A figure drawn wider than the column is shrunk, and its text with it, below 9 px.
    tx.viz's rule (7 in at 96 dpi = 672 px) keeps every figure at its own size at 1280 px."""
    sizes = visits(docname).page.evaluate(FIGURE_SIZES_JS)
    shrunk = [s for s in sizes if s["visible"] and s["natural"] and s["shown"] < 0.9 * s["natural"]]
    assert not shrunk, "figures shown below 90% of their size: " + "; ".join(
        f"{s['id'] or s['src']} {s['shown']:.0f} of {s['natural']} px" for s in shrunk)


def test_api_pages_document_every_public_module(visits):
    """Every module of tx (the chapter checkers tx.exercises.chNN aside) with its full name, on
    the API page or, for the checkers and the book's tooling, on the book-internals page."""
    from sitekit import BOOK

    modules = {f"tx.{p.stem}" for p in (BOOK / "tx").glob("*.py") if not p.stem.startswith("_")}
    modules |= {"tx.exercises", "tx.exercises.learner", "tx.exercises.course", "tx.exercises.course_check"}
    ids_js = "() => [...document.querySelectorAll('[id^=\"module-\"]')].map(e => e.id)"
    api, internals = visits("api").page, visits("api_internals").page
    ids = set(api.evaluate(ids_js)) | set(internals.evaluate(ids_js))
    missing = sorted(m for m in modules if f"module-{m}" not in ids)
    assert not missing, f"modules missing from the API pages: {missing}"
    assert api.locator("[id='tx.device']").count() == 1, "tx.device is not documented"
    # Objects carry their module: tx.attention.attention, not a bare attention.
    for page in (api, internals):
        names = page.evaluate("() => [...document.querySelectorAll('dt.sig-object')].map(d => d.id)")
        assert names and all(n.startswith("tx.") for n in names if n), names[:5]
    # The index at the top links every module of the page to its section.
    links = api.evaluate("() => [...document.querySelectorAll('div.tx-module-index a')]"
                         ".map(a => a.getAttribute('href'))")
    on_page = {i for i in api.evaluate(ids_js)}
    assert sorted(h.split("#")[-1] for h in links) == sorted(on_page), links
