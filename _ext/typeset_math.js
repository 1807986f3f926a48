// The book's TeX typeset once, when the book is built (_ext/static_math.py), so that a
// reader's browser runs no MathJax: one JSON request a line on stdin, answered by one JSON
// line on stdout.
//   {"tex": "...", "display": true}  ->  {"html": "<mjx-container ...>"}  or  {"error": "..."}
//   {"css": true}                    ->  {"css": "..."}  (the stylesheet of all typeset so far)
// The HTML is MathJax 3's CommonHTML output, as MathJax in the browser made it, with the
// formula's MathML beside it for screen readers (the drawn formula is aria-hidden).
// Usage: node typeset_math.js MATHJAX_ES5_DIR FONT_URL
"use strict";

const readline = require("readline");
const [mathjax, fontURL] = process.argv.slice(2);

// What MathJax in the browser set on each formula: a size that matches the x-height of the
// text around it (127% of the book's paragraph text, measured in Chromium); and the part of
// MathJax's assistive-MathML stylesheet the page needs (the MathML is in the page for screen
// readers, and takes no room on the screen).
const PAGE_CSS = `
mjx-container[jax="CHTML"] {
  font-size: 127.3%;
  position: relative;
}
mjx-assistive-mml {
  position: absolute !important;
  top: 0; left: 0;
  clip: rect(1px, 1px, 1px, 1px);
  padding: 1px 0 0 0 !important;
  border: 0 !important;
  display: block !important;
  width: auto !important;
  overflow: hidden !important;
  user-select: none;
}
mjx-assistive-mml[display="block"] {
  width: 100% !important;
}
`;

require(mathjax + "/node-main.js").init({
  // input/tex is what the browser's tex-mml-chtml.js had: the same TeX packages, the others
  // (\boldsymbol, ...) loaded on first use
  loader: { paths: { mathjax }, load: ["adaptors/liteDOM", "input/tex", "output/chtml"] },
  chtml: { fontURL },
  startup: { typeset: false },
}).then((MathJax) => {
  const adaptor = MathJax.startup.adaptor;
  const lines = readline.createInterface({ input: process.stdin });
  let queue = Promise.resolve();
  const answer = (reply) => process.stdout.write(JSON.stringify(reply) + "\n");

  async function typeset(tex, display) {
    const container = await MathJax.tex2chtmlPromise(tex, { display });
    const errors = adaptor.tags(container, "mjx-merror");
    if (errors.length) return { error: adaptor.textContent(errors[0]) || "TeX error" };
    // the drawn formula is hidden from screen readers, which read the MathML instead
    adaptor.setAttribute(adaptor.firstChild(container), "aria-hidden", "true");
    const mathml = await MathJax.tex2mmlPromise(tex, { display });
    const html = adaptor.outerHTML(container);
    const assistive = `<mjx-assistive-mml unselectable="on" display="${display ? "block" : "inline"}">` +
      mathml.trim() + "</mjx-assistive-mml>";
    return { html: html.replace(/<\/mjx-container>$/, assistive + "</mjx-container>") };
  }

  lines.on("line", (line) => {
    // one at a time, in order: a formula that loads a TeX package waits for it
    queue = queue.then(async () => {
      const request = JSON.parse(line);
      try {
        if (request.css) {
          answer({ css: adaptor.textContent(MathJax.chtmlStylesheet()) + PAGE_CSS });
        } else {
          answer(await typeset(request.tex, request.display));
        }
      } catch (e) {
        answer({ error: String((e && e.message) || e) });
      }
    });
  });
}).catch((e) => {
  process.stderr.write(`MathJax did not start: ${e}\n`);
  process.exit(1);
});
