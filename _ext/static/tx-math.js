// Display equations that fit a phone (issue 24). At 1280 px every display equation fits the
// column (tests/site checks it); on a 390 px screen many are wider than the room they have,
// and scrolling an equation sideways hides half of it at a time. Each one wider than its box
// is set smaller until it fits, down to MIN_SCALE of its size; one that still does not fit
// at that size keeps scrolling inside its box (reading.css), since smaller text would be
// unreadable. Done again when the width changes (a phone turned sideways). The formulas are
// typeset when the book is built (_ext/static_math.py); their widths are known once MathJax's
// fonts have loaded.
(function () {
  "use strict";

  var MIN_SCALE = 0.6;

  function fit(container) {
    // The equation's own size is kept in a data attribute and each fit starts from it.
    if (container.dataset.txSize === undefined) container.dataset.txSize = container.style.fontSize || "";
    container.style.fontSize = container.dataset.txSize;
    var room = container.clientWidth, needed = container.scrollWidth;
    if (!room || needed <= room + 1) return;
    var base = parseFloat(getComputedStyle(container).fontSize);
    var scale = Math.max(MIN_SCALE, (room - 1) / needed);
    container.style.fontSize = (base * scale).toFixed(2) + "px";
  }

  function fitAll() {
    var all = document.querySelectorAll("div.math mjx-container[display='true']");
    Array.prototype.forEach.call(all, fit);
    document.documentElement.dataset.txMath = "fitted"; // for tests/site: the fit is done
  }

  if (typeof document === "undefined" || !document.querySelector("div.math")) return;
  var width = window.innerWidth, pending = null;
  window.addEventListener("load", function () {
    return (document.fonts ? document.fonts.ready : Promise.resolve()).then(start);
  });

  function start() {
    fitAll();
    window.addEventListener("resize", function () {
      if (window.innerWidth === width) return;
      width = window.innerWidth;
      clearTimeout(pending);
      pending = setTimeout(fitAll, 100);
    });
  }
})();
