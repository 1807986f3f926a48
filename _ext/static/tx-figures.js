// Figures open full size (issue 24): a figure drawn for the 672 px column shrinks to about half
// on a phone, where its labels are 5 to 6 px tall. Each figure of a page's content that is an
// image file of the site becomes a link to that file, which the browser shows at its own size
// and lets a reader zoom into. Explorer frames and live blocks are left alone: they are controls.
(function () {
  "use strict";

  function linkFigures(root) {
    var images = root.querySelectorAll("article img[src*='_images/']");
    Array.prototype.forEach.call(images, function (img) {
      if (img.closest("a, .tx-explorer, .tx-live")) return;
      var link = document.createElement("a");
      link.href = img.src;
      link.className = "tx-figure-link";
      link.title = "Open the figure full size";
      img.parentNode.insertBefore(link, img);
      link.appendChild(img);
    });
  }

  if (typeof document === "undefined") return;
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { linkFigures(document); });
  } else {
    linkFigures(document);
  }
})();
