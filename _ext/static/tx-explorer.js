// Explorers on the website (tx/explorer.py): every state was drawn when the book was built;
// the controls show the frame of the chosen state. Nothing is fetched and no kernel runs.
(function () {
  "use strict";

  function setUp(explorer) {
    var controls = Array.prototype.slice.call(explorer.querySelectorAll("[data-control]"));
    var frames = Array.prototype.slice.call(explorer.querySelectorAll(".tx-explorer-frame"));

    function show() {
      var key = controls.map(function (control) {
        if (control.type === "range") {
          var labels = JSON.parse(control.getAttribute("data-labels"));
          var label = labels[Number(control.value)];
          control.setAttribute("aria-valuetext", label);
          var output = control.parentNode.querySelector("output");
          if (output) output.textContent = label;
        }
        return control.value;
      }).join("-");
      var found = false;
      frames.forEach(function (frame) {
        var match = frame.getAttribute("data-state") === key;
        frame.hidden = !match;
        found = found || match;
      });
      explorer.setAttribute("data-shown", key);
      if (!found) console.warn("tx-explorer: no frame for state " + key);
    }

    controls.forEach(function (control) {
      control.addEventListener("input", show);
      control.addEventListener("change", show);
    });
    explorer.querySelector(".tx-explorer-controls").hidden = false;
    show();
  }

  function start() {
    document.querySelectorAll(".tx-explorer").forEach(setUp);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
