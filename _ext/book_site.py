"""The book's website: self-hosted scripts, link-preview meta tags and a 404 page.

A small local Sphinx extension, loaded from ``_config.yml`` (``sphinx.local_extensions``).

* Serves the third-party files that ``make vendor`` copies from ``node_modules`` into
  ``_build/vendor`` (MathJax 3's fonts, RequireJS and the ipywidgets embed script), and this
  folder's ``static/`` (our own glue script), through ``html_static_path``. They are added
  here, at ``config-inited``, rather than in ``_config.yml``: Jupyter Book turns every
  ``.js`` and ``.css`` file under every ``html_static_path`` entry into a ``<script>`` or
  ``<link>`` on every page as soon as the book has a ``_static/`` folder, and the widget
  scripts and onnxruntime-web are many files. Paths added here are copied to ``_static/`` and
  nothing more; ``nb_ipywidgets_js`` in ``_config.yml`` names the files pages load.
* Makes the explorers (``tx/explorer.py``) work on the page: the build's kernel gets
  ``TX_EXPLORER_STATIC=1``, so an explorer gives only its precomputed ``text/html`` form, and
  every page loads ``static/tx-explorer.js`` (a few lines that switch frames) and
  ``static/tx-book.css`` (the controls' layout, and code cells that wrap long lines). The first
  frame of an explorer gets its cell's ``mystnb.image.alt`` as well as the name of its state.
* Serves the live models (``tx/live.py``): ``make live-models`` exports the checkpoints to
  ``_build/live/tx-live/NAME/`` (``tx/export.py``), served as ``_static/tx-live/NAME/``;
  onnxruntime-web comes from ``make vendor`` as ``_static/ort/``, and every page loads
  ``static/tx-live.js``, which fetches those only when a reader uses a live block (and says
  beforehand how many bytes, ``live_download_bytes``). Models
  trained in a chapter are exported there by the chapter itself, as the build runs it
  (``TX_LIVE_DIR``, read by ``tx.live``).
* Links to the repository only where ``repository.url`` names one: then the header gets a
  button to it; without one, the repository, issue, edit and launch buttons are all left
  out, so no page shows an empty link (``repository_links``).
* Under every chapter's "Exercises" heading, links to the learner edition's zip (served at
  the site's root) and says how long the chapter's Run All took on the CI machine, read from
  ``bench/run_all_times.json``, and that this was measured apart from the page's build (when,
  on what CPU); a chapter that took over two minutes says so under its title.
* Numbers an appendix's figures, tables and exercises A1.1, A1.2, ... (``appendix_numbers``):
  its part of the table of contents is not numbered, and Sphinx would count them 1, 2, ...,
  which read as chapter 1's.
* In the code a page shows, an equation's label (``# eq-ch10-cross-entropy``, how the
  chapters tie a line to its equation) becomes the equation's number, ``(10.2)``.
* Lists modules for the API page's index (``module-index``, a directive): each module's name,
  linked to its section, and the first line of its docstring, read from the module itself.
* Gives the site a favicon (``extra/favicon.ico``, also served as ``/favicon.ico``).
* Gives every page ``<meta name="description">`` and Open Graph tags (``og:title``,
  ``og:description``, ``og:type``, ``og:site_name``, and ``og:url`` when ``html.baseurl``
  is set) for link previews. The description is the page's first paragraph, shortened.
* Writes ``404.html``, a page in the book's theme for hosts that serve one for missing
  pages (GitHub Pages, Netlify, ...). Its links are relative to the site's root; when
  ``html.baseurl`` is set it also gets ``<base href>`` so it works at any depth.
"""

from __future__ import annotations

import html
import importlib
import json
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.errors import ConfigError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
DESCRIPTION_CHARS = 200  # link previews show about this much


def set_kernel_environment(live: Path) -> None:
    """What the kernels that run the chapters for the build inherit (also _ext/execute_chapters.py)."""
    # Explorers: only their static text/html form (tx/explorer.py); no widget, no widget state
    # on the page.
    os.environ["TX_EXPLORER_STATIC"] = "1"
    # Live blocks of models trained in a chapter (tx.live.generator, tx.live.classifier) export
    # them into this folder's tx-live/NAME/ as the chapter runs; it is copied to _static/ after.
    os.environ["TX_LIVE_DIR"] = str(live.resolve())
    # Each training run a chapter does is saved in _build/training-record/, for the JupyterLab
    # test to replay instead of training the same model a second time (tx/training_record.py).
    os.environ["TX_TRAINING_RECORD"] = str(training_record_dir(live))


def training_record_dir(live: Path) -> Path:
    """Where the build's kernels record their training runs: beside the live models, in _build/."""
    return live.resolve().parent / "training-record"


def add_static_paths(app: Sphinx, config) -> None:
    """Serve _build/vendor (from `make vendor`) and _ext/static as static files."""
    vendor = Path(app.confdir, config.book_site_vendor_dir)
    if not (vendor / "mathjax" / "fonts").is_dir() or not (vendor / "widgets").is_dir():
        raise ConfigError(
            f"{vendor} has no MathJax fonts or widget scripts: run `make vendor` "
            "(`make book` does) to install them with npm before building the book."
        )
    # The live models (tx/live.py): ONNX exports of the checkpoints, from `make live-models`.
    live = Path(app.confdir, config.book_site_live_dir)
    if not (live / "tx-live").is_dir():
        raise ConfigError(
            f"{live} has no exported models: run `make live-models` (`make book` does) to export "
            "the live translators' checkpoints with python -m tx.export before building the book."
        )
    for path in (str(vendor), str(live), str(HERE / "static")):
        if path not in config.html_static_path:
            config.html_static_path.append(path)
    # The site's favicon: <link rel="icon"> on every page, and /favicon.ico for browsers
    # that ask for it anyway.
    config.html_favicon = str(HERE / "extra" / "favicon.ico")
    if str(HERE / "extra") not in config.html_extra_path:
        config.html_extra_path.append(str(HERE / "extra"))
    set_kernel_environment(live)
    # Each notebook page's download button (.ipynb); the theme's default, made explicit.
    config.html_theme_options["use_download_button"] = True
    # Light or dark as the reader's system prefers. Without a default the theme starts
    # from "" and logs a console error ("Got invalid theme mode") on a reader's first visit.
    config.html_context.setdefault("default_mode", "auto")


HOME_FIGURE = "tx-what-you-build.png"  # intro.md shows it


def draw_home_figure(app: Sphinx, config) -> None:
    """Draw the home page's picture of what the reader builds, one encoder and one decoder
    layer inside (``tx.viz.layer_diagram``, chapter 1's "Inside one layer"), into a static
    folder of the build's own, at the book's DPI like every figure of the chapters."""
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    import tx.viz

    folder = Path(app.confdir, "_build", "home")
    folder.mkdir(parents=True, exist_ok=True)
    ax = tx.viz.layer_diagram()
    ax.figure.savefig(folder / HOME_FIGURE, dpi=tx.viz.DPI, bbox_inches="tight",
                      metadata={"Software": None})
    plt.close(ax.figure)
    if str(folder) not in config.html_static_path:
        config.html_static_path.append(str(folder))


def dedupe_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Drop repeated <script>s: sphinx-thebe's inline `const THEBE_JS_URL = ...` comes
    twice, and the second is a SyntaxError ("already been declared") on every page."""
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen, unique = set(), []
    for js in scripts:
        attributes = getattr(js, "attributes", {})
        key = (str(getattr(js, "filename", js) or ""), tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


# The theme's Font Awesome kit: 1.49 MB of JavaScript on every page that redraws each icon as
# an SVG. The theme's stylesheet has Font Awesome's rules and fonts as well, so without the
# script the same icons are drawn from the font (156 kB, fetched once, only where a page uses
# one); Chromium spent about 0.25 CPU-s less on each page load (bench/README.md, "Sixteenth pass").
ICON_SCRIPT = re.compile(r'\s*(<!-- So that users can add custom icons -->\s*)?'
                         r'<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>')
# An icon drawn from the font is a character a screen reader could try to read out (the script's
# SVGs were aria-hidden): each is hidden from it, as the button around it has its own label.
ICON = re.compile(r'<(i|span) class="([^"]*\bfa-[a-z][^"]*)"(?![^>]*aria-hidden)')


def drop_icon_script(app: Sphinx, exception: Exception | None) -> None:
    """Take the theme's icon script out of every page, and its files out of the site; hide each icon
    from screen readers, as the script did (build-finished)."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        kept = ICON.sub(r'<\1 class="\2" aria-hidden="true"', ICON_SCRIPT.sub("", text))
        if kept != text:
            page.write_text(kept, encoding="utf-8")
    for name in ("fontawesome.js", "fontawesome.js.map", "fontawesome.js.LICENSE.txt"):
        (out / "_static" / "scripts" / name).unlink(missing_ok=True)


REPOSITORY_BUTTONS = ("use_repository_button", "use_issues_button", "use_edit_page_button", "use_source_button")


def repository_links(options: dict) -> dict:
    """The theme's options with links to the repository only where ``repository.url`` names one.

    With a repository, the header gets a button to it (and Binder's launch button, if
    ``launch_buttons.binderhub_url`` is set, is built from it); without one, every button
    that would link to the repository or launch it from there is left out, so no page shows
    an empty link or a made-up address.
    """
    options = dict(options)
    url = (options.get("repository_url") or "").strip()
    options["repository_url"] = url
    if url:
        options["use_repository_button"] = True
        return options
    for key in REPOSITORY_BUTTONS:
        options[key] = False
    launch = dict(options.get("launch_buttons") or {})
    for key in ("binderhub_url", "jupyterhub_url", "colab_url"):
        launch.pop(key, None)
    options["launch_buttons"] = launch
    return options


def apply_repository_links(app: Sphinx, config) -> None:
    config.html_theme_options = repository_links(config.html_theme_options)


def grading_substitutions(cost_file: str | Path) -> dict[str, str]:
    """The teachers' page's numbers about grading: the course's limits (tx.exercises.course) and
    the cost bench/grading_cost.py measured (``cost_file``), in words."""
    import math

    from tx.exercises import course

    import pkgutil

    import tx.exercises

    record = json.loads(Path(cost_file).read_text(encoding="utf-8"))
    times = [r["solved_s"] for r in record["assignments"].values()]
    starts = [r["start_s"] for r in record["assignments"].values()]
    checkers = [getattr(module, name) for info in pkgutil.iter_modules(tx.exercises.__path__)
                if re.fullmatch(r"ch\d\d|a\d", info.name)
                for module in [importlib.import_module(f"tx.exercises.{info.name}")]
                for name in dir(module) if name.startswith("check_")]
    return {
        "grading_drawn": f"{sum(bool(getattr(c, 'drawn', False)) for c in checkers)} of the {len(checkers)}",
        "grading_start": f"{min(starts):.0f} to {max(starts):.0f} seconds",
        "grading_timeout": f"{math.ceil(course.SLOWEST_SOLUTION * course.TIMEOUT_FACTOR)}",
        "grading_memory": f"{course.MEMORY_MB:,}",
        "grading_cost": (f"from {min(times):.1f} to {max(times):.1f} seconds of one core a submission with every answer "
                         f"right, {sum(times):.0f} seconds for all {len(times)} assignments, so about "
                         f"{sum(times) * 100 / 60:.0f} minutes of one core for a class of 100 that submits them all"),
    }


def add_grading_substitutions(app: Sphinx, config) -> None:
    config.myst_substitutions = {**(config.myst_substitutions or {}),
                                 **grading_substitutions(Path(app.confdir) / "bench/grading_cost.json")}


WIDGET_VIEW_TAG = '<script type="application/vnd.jupyter.widget-view+json">'
EXPLORER_FIRST_ALT = re.compile(r'(<div class="tx-explorer-frame" data-state="[^"]*"><img [^>]*?alt=")([^"]*)(")')


def explorer_alt_text(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Give an explorer's first frame its cell's mystnb.image.alt, after the state's name.

    The first frame is what a reader without JavaScript sees; the cell's alt text describes
    it in words, as it does for any other figure.
    """
    for cell in doctree.findall(nodes.container):
        if cell.get("nb_element") != "cell_code":
            continue
        alt = ((cell.get("cell_metadata") or {}).get("mystnb") or {}).get("image", {}).get("alt")
        if not alt:
            continue
        for raw in cell.findall(nodes.raw):
            text = raw.astext()
            if "tx-explorer-frame" in text:
                tagged = EXPLORER_FIRST_ALT.sub(
                    lambda m: m.group(1) + m.group(2) + ". " + html.escape(alt) + m.group(3), text, count=1
                )
                raw.children = [nodes.Text(tagged)]


def widget_alt_text(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Put a cell's mystnb.image.alt on its widget views, for the images they draw.

    myst-nb applies the alt text to a cell's image outputs; an Output widget's figure is
    drawn in the browser from the widget's saved state, so _ext/static/widgets-offline.js
    copies it from the view's data-alt attribute.
    """
    for cell in doctree.findall(nodes.container):
        if cell.get("nb_element") != "cell_code":
            continue
        alt = ((cell.get("cell_metadata") or {}).get("mystnb") or {}).get("image", {}).get("alt")
        if not alt:
            continue
        for raw in cell.findall(nodes.raw):
            text = raw.astext()
            if WIDGET_VIEW_TAG in text:
                tagged = text.replace(
                    WIDGET_VIEW_TAG,
                    WIDGET_VIEW_TAG[:-1] + f' data-alt="{html.escape(alt)}">',
                )
                raw.children = [nodes.Text(tagged)]


LEARNER_ZIP = "learner-edition.zip"  # `make book` copies it to the site's root
MONTHS = ("January February March April May June July August September October November "
          "December").split()


def measured_apart(times: dict) -> str:
    """What a Run All time covers, when and on what it was measured: it is not the build's own.

    "That is the whole notebook, timed on 26 November 2026 on CPU, not as this page was
    built", from ``bench/run_all_times.json``'s
    ``measured`` and ``machine``; "" when it records neither. A reader who sees a time the page
    printed as it was built (a training cell's) beside the Run All time must not take them for
    one machine's figures.
    """
    day = re.match(r"(\d{4})-(\d{2})-(\d{2})", str(times.get("measured", "")))
    # "Intel(R) Xeon(R) Processor @ 2.50GHz" read as "Intel Xeon Processor @ 2.50GHz"
    cpu = " ".join(re.sub(r"\((R|TM|tm)\)", "", str(times.get("machine", {}).get("cpu") or "")).split())
    if day is None and not cpu:
        return ""
    year, month, date = (int(n) for n in day.groups()) if day else (0, 0, 0)
    when = f" on {date} {MONTHS[month - 1]} {year}" if day and 1 <= month <= 12 else ""
    on = f" on {cpu}" if cpu else ""
    return f"That is the whole notebook, timed{when}{on}, not as this page was built"


def learner_edition_notes(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Under a chapter's "Exercises" heading, a link to the learner edition and the chapter's Run All time.

    The time is read from ``bench/run_all_times.json`` (``bench/run_all_times.py`` measures it
    on the CI machine), with when and on what CPU it was measured (:func:`measured_apart`); a
    chapter that took over two minutes also says so under its title. A
    chapter with exercises but no measured time is a warning, which fails the strict build.
    """
    if not docname.startswith("chapters/") or app.builder.format != "html":
        return
    from sphinx.util.osutil import relative_uri

    from tx.exercises.learner import run_all_sentence, run_all_times, slow_note

    name = docname.split("/")[-1] + ".ipynb"
    times = run_all_times(Path(app.confdir, app.config.book_site_run_all_times))
    sentence = run_all_sentence(name, times, subject="Run All of this chapter's notebook")
    slow = slow_note(name, times, what="This chapter's notebook")
    apart = measured_apart(times)
    if sentence and apart:
        sentence = f"{sentence}. {apart}"
    if slow and apart:
        slow = f"{slow} {apart}."
    href = html.escape(relative_uri(app.builder.get_target_uri(docname), LEARNER_ZIP))
    for section in doctree.findall(nodes.section):
        title = section.next_node(nodes.title)
        if title is None or title.parent is not section or title.astext().strip() != "Exercises":
            continue
        if sentence is None:
            logger.warning(f"book_site: {app.config.book_site_run_all_times} has no Run All time for {name}: "
                           f"run `python bench/run_all_times.py {name[:2]}` and commit the JSON.", location=docname)
        # The time once a page: a slow chapter says it under its title, the others here.
        timed = f" {html.escape(sentence, quote=False)}." if sentence and slow is None else ""
        note = (f'<p class="tx-learner-edition">Work through these exercises in Jupyter with the '
                f'<a class="reference external" href="{href}" download>learner edition</a> (every chapter '
                f'without its solutions, and a README that sets it up).{timed}</p>')
        section.insert(section.index(title) + 1, nodes.raw("", note, format="html"))
        break
    top = next(iter(doctree.findall(nodes.section)), None)
    if slow is not None and top is not None and isinstance(top[0], nodes.title):
        top.insert(1, nodes.raw("", f'<p class="tx-run-time"><em>{html.escape(slow, quote=False)}</em></p>', format="html"))


APPENDIX_PAGE = re.compile(r"(?:^|/)([A-Z]\d+)_[^/]*$")  # chapters/A1_training_at_scale -> A1


def appendix_numbers(app: Sphinx, env) -> list[str]:
    """An appendix's figures, tables, code blocks, exercises and sections numbered ``A1.1``, ``A1.2``, ... in its page's order.

    Sphinx numbers what sits in an unnumbered part of the table of contents 1, 2, ..., the numbers
    chapter 1's own figures and exercises read as, and sphinx-exercise takes its numbers from the
    same table. A number is a tuple that every writer joins with dots, so ``("A1", 2)`` reads A1.2,
    in a caption and in every reference to it. Runs after Sphinx has counted (``env-get-updated``).
    """
    for docname, kinds in env.toc_fignumbers.items():
        match = APPENDIX_PAGE.search(docname)
        if not match or env.toc_secnumbers.get(docname):
            continue
        for numbers in kinds.values():
            for n, key in enumerate(sorted(numbers, key=lambda k: numbers[k]), start=1):
                numbers[key] = (match.group(1), n)
    for docname, toc in getattr(env, "tocs", {}).items():
        match = APPENDIX_PAGE.search(docname)
        if match and not env.toc_secnumbers.get(docname):
            env.toc_secnumbers[docname] = appendix_sections(toc, match.group(1))
            # the page's <title> and link previews read "A1. Training at scale", as its heading does
            for titles in (getattr(env, "titles", {}), getattr(env, "longtitles", {})):
                if docname in titles:
                    titles[docname]["secnumber"] = [match.group(1)]
    return []


def appendix_sections(toc: nodes.bullet_list, label: str) -> dict[str, tuple]:
    """An appendix page's sections numbered as a chapter's are: its title ``A1``, its sections
    ``A1.1``, ``A1.2``, their subsections ``A1.1.1``, ... ``{anchor: number}``, as Sphinx keeps
    section numbers; each entry of the page's table of contents gets its number too."""
    from sphinx import addnodes

    numbers: dict[str, tuple] = {}

    def walk(bullets: nodes.Element, number: tuple) -> None:
        items = [child for child in bullets.children if isinstance(child, nodes.list_item)]
        for i, item in enumerate(items, start=1):
            here = number + (i,) if number else (label,)
            for child in item.children:
                if isinstance(child, addnodes.compact_paragraph) and child.children:
                    reference = child[0]
                    numbers[reference["anchorname"]] = here
                    reference["secnumber"] = list(here)
                elif isinstance(child, nodes.bullet_list):
                    walk(child, here)

    walk(toc, ())
    return numbers


def dataclass_signature(app: Sphinx, what: str, name: str, obj, options, signature, return_annotation):
    """A dataclass's generated signature dropped when the API page lists every field, each once with its "why".

    Only a dataclass whose ``__init__`` is the generated one (its signature is its fields), and only
    when autodoc lists every field: with ``undoc-members``, or when each has a ``#:`` comment.
    """
    import dataclasses

    from sphinx.pycode import ModuleAnalyzer

    if what != "class" or not dataclasses.is_dataclass(obj) or not obj.__dataclass_params__.init:
        return None
    if options and options.get("undoc-members"):
        return "", None
    try:
        documented = ModuleAnalyzer.for_module(obj.__module__).find_attr_docs()
    except Exception:  # no source to read: keep the signature
        return None
    if all((obj.__qualname__, f.name) in documented for f in dataclasses.fields(obj) if f.init):
        return "", None
    return None


def equation_numbers_in_code(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """In the code a page shows, an equation's label becomes the number the reader sees.

    A chapter's code names the equation a line computes by its label, in a comment
    (``# eq-ch10-cross-entropy``), so that the link between text and code survives when
    equations are added. The reader knows the equation as (10.2): that is what the page
    shows, numbered as the learner edition numbers it (``tx.exercises.learner``).
    """
    if not docname.startswith("chapters/"):
        return
    from tx.exercises.learner import CODE_EQUATION_LABEL, equation_numbers, number_equation_labels

    numbers = equation_numbers(Path(app.srcdir, "chapters"))
    for block in list(doctree.findall(nodes.literal_block)):
        text = block.astext()
        if not CODE_EQUATION_LABEL.search(text):
            continue
        shown = number_equation_labels(text, numbers)
        unknown = CODE_EQUATION_LABEL.findall(shown)
        if unknown:
            logger.warning(f"book_site: code names equation labels that no chapter defines: {unknown}",
                           location=block)
        block.rawsource = shown
        block.children = [nodes.Text(shown)]


def citation_backlinks(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Under each entry of the bibliography, the pages that cite it, linked: "Cited in: 1, 11, A1".

    sphinxcontrib-bibtex links a citation to its entry but offers no way back from an entry on
    another page; its domain keeps every citation (entry id -> key) and every reference to one
    (page -> keys), which is all a way back needs.
    """
    domain = app.env.get_domain("cite")
    keys = {c.citation_id: c.key for c in domain.citations if c.bibliography_key.docname == docname}
    if not keys:
        return
    # key -> page -> the id of its first citation there, so that a link lands on the citation
    citing: dict[str, dict[str, str]] = {}
    for ref in sorted(domain.citation_refs, key=lambda r: r.line or 0):
        for target in ref.targets:
            citing.setdefault(target.key, {}).setdefault(ref.docname, ref.citation_ref_id)
    for entry in doctree.findall(nodes.citation):
        key = next((keys[i] for i in entry["ids"] if i in keys), None)
        pages = sorted(citing.get(key, {}), key=_reading_order)
        paragraph = next(iter(entry.findall(nodes.paragraph)), None)
        if not pages or paragraph is None:
            continue
        paragraph += nodes.Text(" Cited in: ")
        for n, page in enumerate(pages):
            if n:
                paragraph += nodes.Text(", ")
            uri = app.builder.get_relative_uri(docname, page) + "#" + citing[key][page]
            paragraph += nodes.reference("", _page_label(app, page), internal=True, refuri=uri)
        paragraph += nodes.Text(".")


def _reading_order(docname: str) -> tuple[int, str]:
    """The home page, the chapters in their order and the appendix (01_ ... sorts before A1_), then any other page."""
    from tx.exercises.learner_notebook import chapter_label

    name = docname.rsplit("/", 1)[-1]
    return (0, "") if docname == "intro" else (1 if chapter_label(name) else 2, name)


def _page_label(app: Sphinx, docname: str) -> str:
    """A chapter by its number ("ch. 3", "A1", as its exercises are numbered), any other page by its title."""
    from tx.exercises.learner_notebook import chapter_label

    label = chapter_label(docname.rsplit("/", 1)[-1])
    if label:
        return f"ch. {label}" if label.isdigit() else label
    title = app.env.titles.get(docname)
    return title.astext() if title is not None else docname


# an apostrophe between two letters, as Sphinx's smart quotes write it in the exercise's own title
_WORD_APOSTROPHE = re.compile(r"(?<=\w)'(?=\w)")


def solution_title_apostrophes(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """A solution's bar repeats its exercise's title with the same apostrophes.

    sphinx-exercise copies the title into "Solution to Exercise 7.2 (The paper's ...)" from the
    exercise as parsed, before smart quotes turned its ' into ’, so the two bars differed.
    """
    from sphinx_exercise.nodes import solution_node

    for solution in doctree.findall(solution_node):
        title = solution.children[0] if solution.children else None
        if not isinstance(title, nodes.title):
            continue
        for text in list(title.findall(nodes.Text)):
            if "'" in text and not isinstance(text.parent, nodes.literal):
                text.parent.replace(text, nodes.Text(_WORD_APOSTROPHE.sub("\u2019", str(text))))


# onnxruntime-web's WebAssembly build as tx-live.js loads it (make vendor copies it to _static/ort/,
# the 14 MB binary gzip-compressed, which the page unpacks)
LIVE_RUNTIME_FILES = ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm.gz")
# what a subword model's block loads besides its own files: tokenizers.js (make vendor copies it)
LIVE_TOKENIZER_FILE = Path("tokenizers") / "tokenizers.min.mjs"


def live_download_bytes(vendor: Path, live: Path) -> dict[str, int]:
    """What a live block's first use downloads: ``{"runtime": bytes, MODEL: bytes, ...}``.

    A model's bytes are its manifest and the files it names (graphs, vocabularies), as
    tx-live.js fetches them, and for a subword vocabulary tokenizers.js; the runtime's are
    onnxruntime-web's files, fetched once a page.
    """
    sizes = {"runtime": sum((vendor / "ort" / f).stat().st_size for f in LIVE_RUNTIME_FILES
                            if (vendor / "ort" / f).is_file())}
    tokenizer = vendor / LIVE_TOKENIZER_FILE
    for manifest_path in sorted(live.glob("tx-live/*/manifest.json")):
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        files = [*manifest.get("files", {}).values(), *(manifest.get("vocab_files") or [])]
        if manifest.get("vocab_kind") == "word" and "vocab.json" not in files:
            files.append("vocab.json")
        sizes[manifest_path.parent.name] = manifest_path.stat().st_size + sum(
            (manifest_path.parent / f).stat().st_size for f in files if (manifest_path.parent / f).is_file())
        if manifest.get("vocab_kind") == "bpe" and tokenizer.is_file():
            sizes[manifest_path.parent.name] += tokenizer.stat().st_size
    return sizes


def add_live_download_bytes(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """On a page with a live block, the bytes its first use downloads, for the block to say beforehand."""
    if "tx-live" not in context.get("body", ""):
        return
    config = app.config
    sizes = live_download_bytes(Path(app.confdir, config.book_site_vendor_dir), Path(app.confdir, config.book_site_live_dir))
    # Before the page's blocks; tx-live.js, loaded with defer, runs after it.
    context["body"] = f"<script>window.txLiveBytes = {json.dumps(sizes)};</script>\n" + context["body"]


def _prose(node: nodes.Node) -> str:
    """A paragraph's text, less its citations ("[Ala18]") and footnote marks."""
    if isinstance(node, nodes.Text):
        return node.astext()
    if isinstance(node, (nodes.footnote_reference, nodes.citation_reference)):
        return ""
    if isinstance(node, nodes.Element) and "bibtex-citation" in node.get("classes", []):
        return ""
    return "".join(_prose(child) for child in node.children)


def _first_paragraph(doctree: nodes.Node) -> str:
    """The page's first paragraph of prose (not in a note, figure, list or output)."""
    for para in doctree.findall(nodes.paragraph):
        # Only paragraphs that sit directly in a section: prose, not an admonition,
        # a caption, a list item, a table cell or a cell's output.
        if not isinstance(para.parent, (nodes.section, nodes.document)):
            continue
        text = " ".join(_prose(para).split())
        text = re.sub(r"\s+([.,;:!?])", r"\1", text)  # where a citation stood
        # A closing sentence that introduces a list ("By the end you will be able to:")
        # means nothing without the list.
        if text.endswith(":"):
            head = max(text.rfind(". ", 0, -1), text.rfind("? ", 0, -1), text.rfind("! ", 0, -1))
            text = text[: head + 1] if head > 0 else text[:-1] + "."
        if len(text) >= 40:
            return text
    return ""


def _shorten(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    if len(text) <= limit:
        return text
    # End at the last sentence that fits, else at the last word that fits.
    cut = text[: limit + 1]
    sentence_end = max(cut.rfind(". "), cut.rfind("? "), cut.rfind("! "))
    if sentence_end >= limit // 2:
        return cut[: sentence_end + 1]
    return cut[: cut.rfind(" ")].rstrip(",;:") + "…"


def _plain(markup: str) -> str:
    """Page titles come as HTML (<em>, entities): make them plain text."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", markup or "")).split())


def _book_description(app: Sphinx) -> str:
    """The first paragraph of the book's root page."""
    if not hasattr(app, "_book_site_description"):
        try:
            doctree = app.env.get_and_resolve_doctree(app.config.root_doc, app.builder)
        except Exception as err:  # noqa: BLE001 - no root page: fall back to the title
            logger.info(f"book_site: no description from {app.config.root_doc}: {err}")
            doctree = None
        app._book_site_description = _shorten(_first_paragraph(doctree)) if doctree else ""
    return app._book_site_description


def add_meta_tags(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """<meta name="description"> and og: tags for every page."""
    site = app.config.html_title or app.config.project
    title = _plain(context.get("title", "")) or site
    if doctree is not None:
        description = _shorten(_first_paragraph(doctree))
    else:  # generated pages (search, genindex, 404) are described as the book is
        description = app.config.book_site_description or _book_description(app)
    if not description:
        description = _shorten(f"{title}, from {site}.")
    tags = {
        ("name", "description"): description,
        ("property", "og:title"): title,
        ("property", "og:description"): description,
        ("property", "og:type"): "article" if doctree is not None else "website",
        ("property", "og:site_name"): site,
        ("name", "twitter:card"): "summary",
    }
    baseurl = app.config.html_baseurl
    if baseurl and pagename != "404":
        target = app.builder.get_target_uri(pagename)
        tags[("property", "og:url")] = baseurl.rstrip("/") + "/" + target
    lines = [
        f'<meta {attr}="{html.escape(key)}" content="{html.escape(value)}" />'
        for (attr, key), value in tags.items()
    ]
    context["metatags"] = context.get("metatags", "") + "\n" + "\n".join(lines) + "\n"


NOT_FOUND_BODY = """
<section id="page-not-found">
<h1>Page not found</h1>
<p>There is no page at this address. It may have moved when the book was
reorganised, or the address may be mistyped.</p>
<p><a class="reference internal" href="{home}">Go to the start of the book</a>,
use the table of contents, or <a class="reference internal" href="{search}">search
the book</a>.</p>
</section>
"""


def add_404_page(app: Sphinx):
    """404.html in the theme of every other page."""
    if app.builder.format != "html" or app.builder.name == "singlehtml":
        return []
    root = app.config.root_doc
    context = {
        "title": "Page not found",
        "body": NOT_FOUND_BODY.format(
            home=app.builder.get_target_uri(root), search=app.builder.get_target_uri("search")
        ),
        "sourcename": "",
        "display_toc": False,
    }
    return [("404", context, "page.html")]


def add_base_href(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """On 404.html, make relative links resolve from the site's root at any depth."""
    if pagename != "404" or not app.config.html_baseurl:
        return
    path = urlsplit(app.config.html_baseurl).path or "/"
    if not path.endswith("/"):
        path += "/"
    context["metatags"] = f'<base href="{html.escape(path)}" />\n' + context.get("metatags", "")


def share_source_sidebars(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Give each source page (sphinx.ext.viewcode's ``_modules/...``) the navigation tree
    already built for a source page in the same folder.

    No source page is in the table of contents, so their trees differ only in the relative
    links, which the folder decides. The theme builds the sidebar's tree anew for every page
    (and twice: once to see whether the sidebar is empty): for the 76 source pages that was
    a third of the whole Sphinx build (bench/README.md, "Fifteenth pass"). Runs before the
    theme's handlers, which call ``toctree`` from the context.
    """
    build = context.get("toctree")
    if not pagename.startswith("_modules/") or build is None:
        return
    trees = app.builder.__dict__.setdefault("_tx_source_toctrees", {})
    folder = pagename.rpartition("/")[0]

    def shared(**kwargs) -> str:
        key = (folder, tuple(sorted(kwargs.items())))
        if key not in trees:
            trees[key] = build(**kwargs)
        return trees[key]

    context["toctree"] = shared


class ModuleIndex(SphinxDirective):
    """``.. module-index::`` with one module name a line: a list of links to the modules'
    sections, each with the first line of the module's docstring (reStructuredText)."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        lines = []
        for name in (line.strip() for line in self.content):
            if not name:
                continue
            try:
                module = importlib.import_module(name)
            except ImportError as error:
                raise self.error(f"module-index: cannot import {name}: {error}") from error
            first = (module.__doc__ or "").strip().splitlines()
            lines.append(f"* :py:mod:`{name}`: {first[0] if first else ''}")
        box = nodes.container(classes=["tx-module-index"])
        self.state.nested_parse(StringList(lines, self.get_source_info()[0]), self.content_offset, box)
        return [box]


def setup(app: Sphinx) -> dict:
    app.add_config_value("book_site_vendor_dir", "_build/vendor", "env", [str])
    app.add_config_value("book_site_live_dir", "_build/live", "env", [str])
    # Each learner notebook's measured Run All time, shown on its chapter page (bench/run_all_times.py).
    app.add_config_value("book_site_run_all_times", "bench/run_all_times.json", "env", [str])
    # The description of pages that have no text of their own (search, index, 404);
    # by default the first paragraph of the book's root page.
    app.add_config_value("book_site_description", "", "html", [str])
    app.connect("config-inited", add_static_paths)
    app.connect("config-inited", draw_home_figure)
    app.connect("config-inited", apply_repository_links)
    app.connect("config-inited", add_grading_substitutions)
    app.connect("html-page-context", add_meta_tags)
    app.connect("html-page-context", add_base_href)
    app.connect("html-page-context", add_live_download_bytes)
    app.connect("html-page-context", dedupe_scripts, priority=900)  # after the others
    app.connect("html-page-context", share_source_sidebars, priority=400)  # before the theme's
    app.connect("env-get-updated", appendix_numbers, priority=900)  # after Sphinx's own numbering
    app.connect("autodoc-process-signature", dataclass_signature)
    app.connect("doctree-resolved", widget_alt_text)
    app.connect("doctree-resolved", explorer_alt_text)
    app.connect("doctree-resolved", learner_edition_notes)
    app.connect("doctree-resolved", equation_numbers_in_code)
    app.connect("doctree-resolved", solution_title_apostrophes)
    app.connect("doctree-resolved", citation_backlinks)
    app.add_js_file("tx-explorer.js", loading_method="defer")
    app.add_js_file("tx-live.js", loading_method="defer")  # a few kB; the runtime loads only when used
    app.add_js_file("tx-figures.js", loading_method="defer")  # each figure opens full size
    app.add_js_file("tx-math.js", loading_method="defer")  # display equations fit a phone
    app.add_css_file("tx-book.css")
    app.connect("html-collect-pages", add_404_page)
    app.connect("build-finished", drop_icon_script)
    app.add_directive("module-index", ModuleIndex)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
