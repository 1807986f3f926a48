// Loaded just before the ipywidgets embed script (see nb_ipywidgets_js in _config.yml),
// so that the widget snapshots on a page render from this site alone, without errors.
(function () {
  "use strict";
  var here = document.currentScript;
  // _static/widgets/: the embed script, RequireJS and the embed script's fonts.
  var widgets = new URL("widgets/", here.src).href;

  // 1. The embed script holds AMD modules named "@jupyter-widgets/...". Each finds its
  // fonts from its module URL, which RequireJS would resolve against the page's folder
  // (chapters/@jupyter-widgets/...): map the names to _static/widgets/ instead.
  var paths = {};
  ["base", "controls", "base7", "controls7", "html-manager", "output"].forEach(function (name) {
    paths["@jupyter-widgets/" + name] = widgets + name;
  });
  paths["@jupyter-widgets/html-manager/dist"] = widgets.replace(/\/$/, "");
  window.requirejs.config({ paths: paths });
  window.__jupyter_widgets_assets_path__ = widgets;

  // 2. Widget modules other than @jupyter-widgets/{base,controls,output}, which the embed
  // script bundles, would be fetched from cdn.jsdelivr.net. Point that "CDN" at this site
  // (the embed script reads these attributes from any script tag): a third-party widget
  // library must be copied to _static/widgets/modules/NAME@VERSION/dist/index.js.
  here.setAttribute("data-jupyter-widgets-cdn", widgets + "modules/");
  here.setAttribute("data-jupyter-widgets-cdn-only", "");

  // 3. Widgets typeset their labels with MathJax 2's MathJax.Hub.Queue; the site runs
  // MathJax 3. Give whatever window.MathJax becomes a Hub that does it the MathJax 3 way.
  // (Before MathJax 3 has loaded, its first pass typesets the whole page anyway.)
  var hub = {
    Queue: function () {
      var mj = window.MathJax;
      if (!mj || !mj.startup || !mj.startup.promise || !mj.typesetPromise) return;
      Array.prototype.forEach.call(arguments, function (job) {
        if (!Array.isArray(job) || job[0] !== "Typeset") return;
        var elements = job[2] ? [job[2]] : undefined;
        mj.startup.promise = mj.startup.promise
          .then(function () { return mj.typesetPromise(elements); })
          .catch(function (err) { console.warn("MathJax typeset of a widget failed", err); });
      });
    },
  };
  function withHub(value) {
    if (value && typeof value === "object" && !value.Hub) {
      // Not enumerable: MathJax 3 reads its configuration from this object's keys.
      Object.defineProperty(value, "Hub", { value: hub, configurable: true });
    }
    return value;
  }
  var mathjax = withHub(window.MathJax);
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    enumerable: true,
    get: function () { return mathjax; },
    set: function (value) { mathjax = withHub(value); },
  });

  // 4. Images that a widget snapshot draws (an Output widget's figure) get the alt text
  // of the notebook cell that made them (mystnb.image.alt), which _ext/book_site.py puts
  // on the widget's view tag as data-alt.
  function describe(img) {
    if (img.getAttribute("alt")) return;
    var area = img.closest(".widget-subarea");
    var view = area && area.nextElementSibling;
    if (view && view.hasAttribute("data-alt")) img.setAttribute("alt", view.getAttribute("data-alt"));
  }
  new MutationObserver(function (records) {
    records.forEach(function (record) {
      record.addedNodes.forEach(function (node) {
        if (node.nodeType !== 1) return;
        if (node.tagName === "IMG") describe(node);
        else node.querySelectorAll("img").forEach(describe);
      });
    });
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
