"""Every explorer on the built website works without a kernel, as a reader would use it.

For each chapter, each explorer (tx/explorer.py, switched by _ext/static/tx-explorer.js) is
opened in Chromium; each of its controls is set to two other values, with the mouse's API and
with the keyboard, and the figure shown must become that state's frame: its image, alt text and
printed text. A control that changes nothing fails. Also here: the site's size limits, the
favicon, code cells that wrap instead of hiding the ends of long lines, and code lines that
fit the column.
"""

from __future__ import annotations

import urllib.request

import pytest

from sitekit import HTML, SCREENSHOTS, is_notebook, screenshot, toc_pages

CHAPTERS = [p for p in toc_pages() if is_notebook(p) and p.startswith("chapters/")]
PAGE_LIMIT = 8 * 2**20  # bytes of one chapter page (its frames are inline PNGs)
CODE_COLUMN = 79  # characters of code the page's column holds at 1280 px
SITE_LIMIT = 120 * 2**20  # bytes of the whole _build/html: the live models' budget (issue 19), runtime included

STATE_JS = """(root) => {
    const shown = [...root.querySelectorAll('.tx-explorer-frame')].filter(f => f.checkVisibility());
    const controls = [...root.querySelectorAll('[data-control]')];
    return {
        key: controls.map(c => c.value).join('-'),
        shown: shown.map(f => {
            const img = f.querySelector('img'), pre = f.querySelector('pre');
            return {state: f.dataset.state, src: img.currentSrc, alt: img.alt, loaded: img.naturalWidth > 0,
                    text: pre && pre.checkVisibility() ? pre.textContent : null};
        }),
        stored: Object.fromEntries([...root.querySelectorAll('.tx-explorer-frame')].map(f => [f.dataset.state, {
            src: f.querySelector('img').getAttribute('src'), alt: f.querySelector('img').alt,
            text: f.querySelector('pre') ? f.querySelector('pre').textContent : null}])),
    };
}"""

CONTROLS_JS = """(root) => [...root.querySelectorAll('[data-control]')].map(c => {
    const label = root.querySelector(`label[for="${c.id}"]`);
    return {id: c.id, tag: c.tagName.toLowerCase(), value: c.value,
            values: c.tagName === 'SELECT' ? [...c.options].map(o => o.value)
                    : [...Array(Number(c.max) - Number(c.min) + 1).keys()].map(i => String(Number(c.min) + i)),
            label: label ? label.textContent.trim() : '', labelShown: !!label && label.checkVisibility(),
            shown: c.checkVisibility()};
})"""


def _other_values(values: list[str], current: str) -> list[str]:
    """Two values other than the current one: the first and the last, or the nearest ones."""
    others = [v for v in values if v != current]
    picks = [others[0], others[-1]] if len(others) >= 2 else others
    return list(dict.fromkeys(picks))


def _shown(page, root) -> dict:
    state = page.evaluate(STATE_JS, root)
    assert len(state["shown"]) == 1, f"{len(state['shown'])} frames shown at once: {state['shown']}"
    shown, stored = state["shown"][0], state["stored"]
    assert shown["state"] == state["key"], f"the controls say {state['key']}, the figure shows {shown['state']}"
    expected = stored[state["key"]]
    assert shown["loaded"], f"the frame of {state['key']} did not load"
    assert shown["src"] == expected["src"] and shown["alt"] == expected["alt"]
    assert shown["text"] == expected["text"], "the printed text shown is not the state's own"
    return shown


@pytest.mark.parametrize("docname", CHAPTERS)
def test_every_control_of_every_explorer_changes_the_figure(visits, docname):
    # The page is the one every test shares (conftest.py): each control is put back.
    visit = visits(docname)
    page = visit.page
    explorers = page.locator(".tx-explorer")
    assert explorers.count() >= 1, "the chapter has no explorer (tx.explorer.explore)"
    for n in range(explorers.count()):
        root = explorers.nth(n).element_handle()
        controls = page.evaluate(CONTROLS_JS, root)
        assert controls, f"explorer {n} has no control"
        first = _shown(page, root)
        assert first["alt"].strip(), "the first frame has no alt text"
        start = {c["id"]: c["value"] for c in controls}
        shot = SCREENSHOTS / "explorers" / docname.replace("/", "_")
        screenshot(explorers.nth(n), f"{shot}-{n}-first.png")
        for control in controls:
            assert control["shown"] and control["labelShown"] and control["label"], (
                f"control {control['id']} is hidden or has no visible label: {control}"
            )
            for value in _other_values(control["values"], control["value"]):
                before = _shown(page, root)
                locator = page.locator(f"#{control['id']}")
                if control["tag"] == "select":
                    # by position: Playwright matches a string against labels too, and a label
                    # ("1") may be another option's value
                    locator.select_option(index=control["values"].index(value))
                else:
                    locator.fill(value)
                after = _shown(page, root)
                assert after["state"] != before["state"], f"{control['id']} = {value} changed no state"
                assert after["src"] != before["src"], f"{control['id']} = {value} left the picture as it was"
                assert after["alt"] != before["alt"], (
                    f"{control['id']} = {value}: the alt text still names {before['alt']!r}"
                )
            screenshot(explorers.nth(n), f"{shot}-{n}-{control['id'].rsplit('-', 1)[-1]}.png")
            # back to the first state, so each control is tried from the state the page opens on
            for other in controls:
                locator = page.locator(f"#{other['id']}")
                if other["tag"] == "select":
                    locator.select_option(index=other["values"].index(start[other["id"]]))
                else:
                    locator.fill(start[other["id"]])
        assert _shown(page, root)["src"] == first["src"]
    assert not visit.problems(), "\n".join(visit.problems())


@pytest.mark.parametrize("docname", CHAPTERS)
def test_explorers_work_from_the_keyboard(visits, docname):
    visit = visits(docname)
    page = visit.page
    explorers = page.locator(".tx-explorer")
    for n in range(explorers.count()):
        root = explorers.nth(n).element_handle()
        for control in page.evaluate(CONTROLS_JS, root):
            locator = page.locator(f"#{control['id']}")
            before = _shown(page, root)
            # Move toward the end, or back from it when the control starts at its last value.
            key = "ArrowLeft" if control["value"] == control["values"][-1] else "ArrowRight"
            if control["tag"] == "select":
                key = "ArrowUp" if control["value"] == control["values"][-1] else "ArrowDown"
            locator.focus()
            page.keyboard.press(key)
            after = _shown(page, root)
            assert after["state"] != before["state"], f"{key} on {control['id']} changed nothing"
            page.keyboard.press({"ArrowLeft": "ArrowRight", "ArrowRight": "ArrowLeft",
                                 "ArrowUp": "ArrowDown", "ArrowDown": "ArrowUp"}[key])
            assert _shown(page, root)["state"] == before["state"], f"the way back on {control['id']} failed"
    assert not visit.problems(), "\n".join(visit.problems())


@pytest.mark.parametrize("docname", CHAPTERS)
def test_explorers_fit_a_phone(phone_visits, docname):
    page = phone_visits(docname).page
    wide = page.evaluate(
        """() => [...document.querySelectorAll('.tx-explorer-control, .tx-explorer-frame img')]
              .filter(e => e.checkVisibility()).map(e => e.getBoundingClientRect())
              .filter(r => r.right > window.innerWidth + 1).map(r => Math.round(r.right))"""
    )
    assert not wide, f"explorer parts wider than a 390 px screen: right edges at {wide}"
    first = page.locator(".tx-explorer").first
    first.scroll_into_view_if_needed()
    screenshot(first, SCREENSHOTS / "explorers" / f"{docname.replace('/', '_')}-390.png")


def test_without_javascript_the_first_state_is_a_captioned_figure(browser, site):
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        for docname in CHAPTERS:
            page.goto(f"{site}{docname}.html")
            figures = page.evaluate(
                """() => [...document.querySelectorAll('.tx-explorer')].map(e => ({
                    caption: (e.closest('figure')?.querySelector('figcaption')?.textContent || '').trim(),
                    shown: [...e.querySelectorAll('img')].filter(i => i.checkVisibility()).map(i => i.alt),
                    controls: e.querySelector('.tx-explorer-controls').checkVisibility()}))"""
            )
            assert figures, f"{docname}: no explorer"
            for fig in figures:
                assert fig["caption"], f"{docname}: an explorer without a caption"
                assert len(fig["shown"]) == 1 and fig["shown"][0].strip(), f"{docname}: {fig}"
                assert not fig["controls"], f"{docname}: controls shown that cannot work without JavaScript"
    finally:
        context.close()


def test_pages_and_site_are_light():
    sizes = {p: (HTML / f"{p}.html").stat().st_size for p in CHAPTERS}
    heavy = {p: s for p, s in sizes.items() if s > PAGE_LIMIT}
    assert not heavy, f"chapter pages over {PAGE_LIMIT // 2**20} MB: {heavy}"
    total = sum(f.stat().st_size for f in HTML.rglob("*") if f.is_file())
    assert total < SITE_LIMIT, f"_build/html holds {total / 2**20:.1f} MB, over {SITE_LIMIT // 2**20} MB"


def test_favicon(visits, site):
    with urllib.request.urlopen(site + "favicon.ico") as response:
        assert response.status == 200 and response.read(4) == b"\x00\x00\x01\x00"  # an ICO file
    page = visits("intro").page
    icon = page.evaluate("() => document.querySelector('link[rel~=icon]')?.href || ''")
    assert icon, "no <link rel=icon> on the page"
    with urllib.request.urlopen(icon) as response:
        assert response.status == 200


@pytest.mark.parametrize("docname", CHAPTERS)
def test_code_cells_wrap_long_lines(visits, docname):
    page = visits(docname).page
    cut = page.evaluate(
        """() => [...document.querySelectorAll('div.cell_input pre')]
              .filter(p => p.scrollWidth > p.clientWidth + 1)
              .map(p => p.textContent.split('\\n').reduce((a, b) => a.length >= b.length ? a : b))"""
    )
    assert not cut, f"code lines cut off at the page's edge: {cut[:3]}"


@pytest.mark.parametrize("docname", CHAPTERS)
def test_code_lines_fit_the_column(visits, docname):
    # A wrapped line goes on at column 0, hiding Python's indentation: every line of a code
    # cell fits the column's 79 characters instead (tests/test_code_column.py checks the sources).
    page = visits(docname).page
    wide = page.evaluate(
        """(limit) => [...document.querySelectorAll('div.cell_input pre')]
              .flatMap(p => p.textContent.split('\\n'))
              .filter(line => [...line].length > limit)""",
        CODE_COLUMN,
    )
    assert not wide, f"{len(wide)} code lines over {CODE_COLUMN} characters: {wide[:3]}"
    # and the column holds that many characters of the font it shows them in (a line of
    # 78 wrapped at 1280 px in DejaVu Sans Mono at 14 px, issue 24)
    narrow = page.evaluate(
        """(limit) => [...document.querySelectorAll('div.cell_input pre, div.cell_output pre')]
              .filter(p => p.checkVisibility()).map(p => {
                  const cs = getComputedStyle(p), probe = document.createElement('span');
                  probe.textContent = '0'.repeat(limit);
                  p.appendChild(probe);
                  const needed = probe.getBoundingClientRect().width;
                  probe.remove();
                  const room = p.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
                  return [Math.round(needed), Math.round(room)];
              }).filter(([needed, room]) => needed > room)""",
        CODE_COLUMN,
    )
    assert not narrow, f"{CODE_COLUMN} characters need more than a code cell's width [needed, room]: {narrow[:3]}"
