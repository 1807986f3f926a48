"""Nothing on a page is wider than the room it has (issue 24), read in headless Chromium.

On a phone (390 px) no page scrolls sideways: a display equation wider than the screen
scrolls inside its own box, to its last symbol, and inline code breaks where it must.
At 1280 px every figure and explorer frame is drawn no wider than its box, so the page
shows it at its own size (tx.viz's rule: 672 px), neither cut nor shrunk, and every table
fits the column instead of scrolling.
"""

from __future__ import annotations

import pytest

from sitekit import EXTRA_PAGES, toc_pages

PAGES = toc_pages()

# --------------------------------------------------------------------------- on a phone

SIDEWAYS_JS = """() => {
    // The page's width, and the outermost elements that stick out past the screen's right
    // edge: not those a box that fits clips or scrolls (a table's, an equation's).
    const width = window.innerWidth;
    const held = e => {
        for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
            if (getComputedStyle(a).overflowX !== 'visible') return a.getBoundingClientRect().right <= width + 1;
        }
        return false;
    };
    const out = [];
    for (const e of document.body.querySelectorAll('*')) {
        const r = e.getBoundingClientRect();
        if (r.right <= width + 1 || r.width === 0 || !e.checkVisibility({visibilityProperty: true})) continue;
        if (e.parentElement.getBoundingClientRect().right > width + 1 || held(e)) continue;
        out.push(`<${e.tagName.toLowerCase()} class="${e.className}"> to ${Math.round(r.right)} px: `
                 + e.textContent.trim().replace(/\\s+/g, ' ').slice(0, 60));
    }
    return {scrollWidth: document.documentElement.scrollWidth, innerWidth: width, out: out};
}"""


@pytest.mark.parametrize("docname", PAGES + EXTRA_PAGES)
def test_no_page_scrolls_sideways_on_a_phone(phone_visits, docname):
    sizes = phone_visits(docname).page.evaluate(SIDEWAYS_JS)
    assert sizes["scrollWidth"] <= sizes["innerWidth"], (
        f"the page is {sizes['scrollWidth']} px wide on a {sizes['innerWidth']} px screen: "
        + "; ".join(sizes["out"][:5]))


PHONE_EQUATIONS_JS = """() => [...document.querySelectorAll('article div.math')].map(block => {
    // A display equation wider than its box, scrolled to its end: its last symbol must come
    // into view inside the box, and the box and its number stay on the screen.
    const math = block.querySelector('mjx-container > mjx-math');
    const eqno = block.querySelector('.eqno');
    const box = block.getBoundingClientRect();
    const out = {id: eqno ? eqno.textContent.replace('#', '').trim() : block.id,
                 box: box.width, boxRight: box.right, math: 0, scroller: null, hidden: 0,
                 numberRight: eqno ? eqno.getBoundingClientRect().right : 0};
    if (!math) return out;
    out.math = math.getBoundingClientRect().width;
    if (out.math <= box.width + 1) return out;
    let scroller = math.parentElement;
    while (scroller !== block.parentElement && !/auto|scroll/.test(getComputedStyle(scroller).overflowX)) {
        scroller = scroller.parentElement;
    }
    if (scroller === block.parentElement) return out;
    out.scroller = scroller.tagName.toLowerCase();
    scroller.scrollLeft = scroller.scrollWidth;
    const end = math.getBoundingClientRect().right, edge = scroller.getBoundingClientRect().right;
    out.hidden = end - edge;
    scroller.scrollLeft = 0;
    return out;
})"""


@pytest.mark.parametrize("docname", PAGES)
def test_wide_equations_scroll_in_their_own_box_on_a_phone(phone_visits, docname):
    page = phone_visits(docname).page
    width = page.evaluate("() => window.innerWidth")
    bad = []
    for eq in page.evaluate(PHONE_EQUATIONS_JS):
        if eq["boxRight"] > width + 1 or eq["numberRight"] > width + 1:
            bad.append(f"{eq['id']} runs past the screen's edge to {max(eq['boxRight'], eq['numberRight']):.0f} px")
        elif eq["math"] > eq["box"] + 1 and eq["scroller"] is None:
            bad.append(f"{eq['id']} is {eq['math']:.0f} px in a {eq['box']:.0f} px box that does not scroll")
        elif eq["hidden"] > 1:
            bad.append(f"{eq['id']} scrolled to its end still hides {eq['hidden']:.0f} px")
    assert not bad, "; ".join(bad)


FITTED_EQUATIONS_JS = """() => [...document.querySelectorAll('article div.math mjx-container[display="true"]')]
    .map(c => {
        // After tx-math.js: the equation's drawn width against its box, and how far it was set
        // smaller than MathJax set it (1 where it needed no fitting).
        const eqno = c.closest('div.math').querySelector('.eqno');
        const size = parseFloat(getComputedStyle(c).fontSize);
        c.style.fontSize = c.dataset.txSize === undefined ? c.style.fontSize : c.dataset.txSize;
        const own = parseFloat(getComputedStyle(c).fontSize);
        c.style.fontSize = size + 'px';
        return {id: eqno ? eqno.textContent.replace('#', '').trim() : c.closest('div.math').id,
                math: c.querySelector('mjx-math').getBoundingClientRect().width,
                box: c.clientWidth, scale: size / own};
    })"""

MIN_EQUATION_SCALE = 0.6  # tx-math.js's MIN_SCALE: smaller, a phone's equation is unreadable


@pytest.mark.parametrize("docname", PAGES)
def test_display_equations_fit_a_phone_without_scrolling(phone_visits, docname):
    """On a phone an equation scrolled sideways shows half of itself at a time: each one is set
    smaller until it fits its box (tx-math.js), never below 60% of its size; an equation that
    would need less is too long for a phone and is split into lines in its chapter."""
    page = phone_visits(docname).page
    if not page.evaluate("() => !!document.querySelector('article div.math')"):
        return
    page.wait_for_function("() => document.documentElement.dataset.txMath === 'fitted'")
    bad = [f"{eq['id']} is {eq['math']:.0f} px in a {eq['box']:.0f} px box at {eq['scale']:.0%} of its size"
           for eq in page.evaluate(FITTED_EQUATIONS_JS)
           if eq["math"] > eq["box"] + 1 or eq["scale"] < MIN_EQUATION_SCALE - 0.005]
    assert not bad, "; ".join(bad)


CODE_LINES_JS = """() => [...document.querySelectorAll('article div.cell_input pre, article div.cell_output pre')]
    .filter(p => p.checkVisibility()).map(p => {
        // Lines as written against lines as drawn: the line boxes of the block's text, grouped
        // by their top (those of one line share it, within half a line).
        const range = document.createRange();
        range.selectNodeContents(p);
        const tops = [...range.getClientRects()].filter(r => r.width > 0).map(r => r.top).sort((a, b) => a - b);
        const half = parseFloat(getComputedStyle(p).fontSize) / 2;
        const drawn = tops.filter((t, i) => i === 0 || t - tops[i - 1] > half).length;
        const written = p.textContent.replace(/\\n+$/, '').split('\\n').filter(l => l.trim()).length;
        return {first: p.textContent.trim().split('\\n')[0].slice(0, 50), written, drawn,
                cut: p.scrollWidth > p.clientWidth + 1 && !/auto|scroll/.test(getComputedStyle(p).overflowX)};
    })"""


@pytest.mark.parametrize("docname", PAGES)
def test_code_keeps_its_lines_on_a_phone(phone_visits, docname):
    """A line of code or of printed output wrapped on a phone went on at column 0, hiding
    Python's indentation and a printed table's columns: each line stays whole, and a block
    wider than the screen scrolls inside its box (tx-book.css), never cut off."""
    blocks = phone_visits(docname).page.evaluate(CODE_LINES_JS)
    wrapped = [f"'{b['first']}' ({b['written']} lines drawn as {b['drawn']})"
               for b in blocks if b["drawn"] > b["written"]]
    cut = [b["first"] for b in blocks if b["cut"]]
    assert not wrapped and not cut, f"wrapped: {wrapped[:4]}; cut off: {cut[:4]}"


INLINE_CODE_JS = """() => {
    // Each line of inline code (a span that wraps has one rectangle per line) against the
    // column's right edge; code in a box that scrolls (a table's) is that box's business.
    const column = document.querySelector('article').getBoundingClientRect().right;
    return [...document.querySelectorAll('article code')]
        .filter(c => !c.closest('pre, .pst-scrollable-table-container, .highlight') && c.checkVisibility())
        .filter(c => [...c.getClientRects()].some(r => r.right > column + 1))
        .map(c => `${c.textContent.trim().slice(0, 60)} (to ${Math.round(c.getBoundingClientRect().right)} px`
                  + ` of ${Math.round(column)})`);
}"""


@pytest.mark.parametrize("docname", PAGES)
def test_inline_code_wraps_on_a_phone(phone_visits, docname):
    over = phone_visits(docname).page.evaluate(INLINE_CODE_JS)
    assert not over, f"inline code past the column's edge: {over[:5]}"


# --------------------------------------------------------------------------- at 1280 px

@pytest.mark.parametrize("docname", PAGES)
def test_code_and_printed_lines_fit_the_column(visits, docname):
    """At 1280 px a code cell's lines fit the column (79 characters, test_explorers.py); what a
    cell prints must too: a printed line that wraps goes on at column 0 and breaks a table's
    columns (issue 24). Print fewer items a line, or one fact a line."""
    blocks = [b for b in visits(docname).page.evaluate(CODE_LINES_JS) if b["drawn"] > b["written"]]
    assert not blocks, f"{len(blocks)} printed blocks wrap: " + "; ".join(
        f"'{b['first']}' ({b['written']} lines drawn as {b['drawn']})" for b in blocks[:6])


WIDE_TEXT_BLOCKS_JS = """() => [...document.querySelectorAll('article pre')]
    .filter(p => p.checkVisibility() && !p.closest('div.cell_input, div.cell_output'))
    .filter(p => p.scrollWidth > p.clientWidth + 1)
    .map(p => `'${p.textContent.trim().split('\\n')[0].slice(0, 50)}' (${p.scrollWidth} px in ${p.clientWidth})`)"""


@pytest.mark.parametrize("docname", PAGES)
def test_a_pages_own_code_and_text_blocks_fit_the_column(visits, docname):
    """At 1280 px a block written in the page's text (a command, a sample hint) is not wider
    than the column: a reader would scroll it sideways to read the end of its lines (the
    teachers' page's sample hint was, issue 24). Wrap it at about 75 characters."""
    wide = visits(docname).page.evaluate(WIDE_TEXT_BLOCKS_JS)
    assert not wide, "blocks wider than the column: " + "; ".join(wide[:4])


IMAGE_BOXES_JS = """async () => {
    // Every figure's and explorer frame's image, its drawn width and the room its box gives
    // it. A frame not on show has no width of its own: the explorer's is its box.
    const inner = e => { const s = getComputedStyle(e);
                         return e.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); };
    const out = [];
    for (const img of document.querySelectorAll('article figure img, article .tx-explorer-frame img')) {
        try { await img.decode(); } catch (e) {}
        const explorer = img.closest('.tx-explorer');
        const box = explorer || img.parentElement;
        const figure = img.closest('figure');
        out.push({id: (figure && figure.id) || img.currentSrc.slice(-40), explorer: !!explorer,
                  natural: img.naturalWidth, box: inner(box),
                  shown: img.checkVisibility() ? img.getBoundingClientRect().width : null});
    }
    return out;
}"""


@pytest.mark.parametrize("docname", PAGES)
def test_figures_and_explorer_frames_fit_their_box(visits, docname):
    """Drawn no wider than the box, so shown at its own size: not cut, scrolled or shrunk."""
    images = visits(docname).page.evaluate(IMAGE_BOXES_JS)
    wide = [i for i in images if i["natural"] > i["box"] + 0.5 or (i["shown"] or 0) > i["box"] + 0.5]
    assert not wide, "images wider than their box: " + "; ".join(sorted({
        f"{i['id']}{' (explorer frame)' if i['explorer'] else ''} drawn {i['natural']} px in {i['box']:.0f}"
        + (f", shown {i['shown']:.0f}" if i["shown"] is not None else "") for i in wide}))


TABLES_JS = """() => [...document.querySelectorAll('article table')].filter(t => t.checkVisibility()).map(t => {
    const box = t.closest('.pst-scrollable-table-container') || t.parentElement;
    return {head: t.querySelector('tr').textContent.trim().replace(/\\s+/g, ' ').slice(0, 60),
            width: t.getBoundingClientRect().width, box: box.clientWidth};
})"""


@pytest.mark.parametrize("docname", PAGES)
def test_tables_fit_the_column(visits, docname):
    tables = visits(docname).page.evaluate(TABLES_JS)
    wide = [t for t in tables if t["width"] > t["box"] + 1]
    assert not wide, "tables wider than the column: " + "; ".join(
        f"'{t['head']}' {t['width']:.0f} px in {t['box']:.0f}" for t in wide)


DARK_FRAMES_JS = """() => [...document.querySelectorAll('article div.cell_output .text_html')].map(e => ({
    listing: !!e.querySelector(':scope > div.highlight'),
    background: getComputedStyle(e).backgroundColor,
    padding: getComputedStyle(e).paddingTop,
}))"""


def test_in_dark_mode_a_source_listing_is_not_framed_in_grey(visits):
    """The theme frames every HTML output in light grey in dark mode (for HTML written dark on
    white); a listing of tx's source (tx.viz.show_source) is drawn in the dark code colours
    already, and keeps the page's background. Other HTML outputs (explorers) keep the frame."""
    # chapter 8 shows tx.KVCache.update's source (chapter 9 no longer shows one) beside explorers
    page = visits("chapters/08_decoder").page
    theme = page.evaluate("document.documentElement.dataset.theme")
    try:
        page.evaluate("document.documentElement.dataset.theme = 'dark'")
        outputs = page.evaluate(DARK_FRAMES_JS)
    finally:
        page.evaluate(f"document.documentElement.dataset.theme = {theme!r}")
    listings = [o for o in outputs if o["listing"]]
    others = [o for o in outputs if not o["listing"]]
    assert listings and others, outputs
    assert all(o["background"] == "rgba(0, 0, 0, 0)" and o["padding"] == "0px" for o in listings), listings
    assert all(o["background"] != "rgba(0, 0, 0, 0)" for o in others), others
