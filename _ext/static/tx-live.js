// Live models in the page (tx/live.py): the reader's sentence is tokenised here, translated
// greedily by onnxruntime-web from the graphs `python -m tx.export` wrote at build time
// (_static/tx-live/NAME/), and the encoder-decoder attention of the chosen layer and head is
// drawn as an SVG. Nothing is fetched until the reader asks for a translation.
// The tokeniser is also loaded by Node in tests/test_live.py, which compares its tokens with tx's.
(function () {
  "use strict";

  // ---------------------------------------------------------------- tx.data's word tokeniser
  // Python's str patterns: \w is a letter or a number (any script), \d a decimal digit, \s the
  // characters str.isspace() accepts. So tx.data's [^\W\d_] is L, Nl, No and [^\W_] is L, N.
  var SPACE = "\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
  var TOKEN_RE = new RegExp(
    "[\\p{L}\\p{Nl}\\p{No}]+'(?=[\\p{L}\\p{N}])|[\\p{L}\\p{N}]+|[^" + SPACE + "]", "gu");
  var GLUE_RE = /(?<=') | (?=[.,!?;])/g;

  function tokenize(text) {
    // As tx.data.tokenize: NFC, lowercase, typographic apostrophe made plain, then the pattern.
    var t = text.normalize("NFC").toLowerCase().replace(/\u2019/g, "'");
    return t.match(TOKEN_RE) || [];
  }

  function detokenize(tokens) {
    return tokens.join(" ").replace(GLUE_RE, "");
  }

  function WordVocab(itos) {
    this.itos = itos;
    this.stoi = new Map(itos.map(function (w, i) { return [w, i]; }));
  }
  WordVocab.prototype.encode = function (text, unk) {
    var stoi = this.stoi;
    return tokenize(text).map(function (w) { return stoi.has(w) ? stoi.get(w) : unk; });
  };
  WordVocab.prototype.tokens = function (ids) {
    var itos = this.itos;
    return ids.map(function (i) { return itos[i]; });
  };
  function kept(ids, m) { // up to the first <eos>, without <bos> and <pad> (m: the manifest's ids)
    var end = ids.indexOf(m.eos_id);
    return (end < 0 ? ids : ids.slice(0, end)).filter(function (i) { return i !== m.bos_id && i !== m.pad_id; });
  }
  WordVocab.prototype.decode = function (ids, m) { // as tx.data.Vocab.decode
    return detokenize(this.tokens(kept(ids, m)));
  };

  // A subword vocabulary (tx.subwords): the Hugging Face tokenizer.json, read by tokenizers.js.
  function BpeVocab(Tokenizer, json) {
    this.tok = new Tokenizer(json, {});
    this.itos = [];
    var itos = this.itos, vocab = json.model.vocab;
    Object.keys(vocab).forEach(function (piece) { itos[vocab[piece]] = piece; });
    (json.added_tokens || []).forEach(function (t) { itos[t.id] = t.content; });
  }
  BpeVocab.prototype.encode = function (text) {
    return Array.from(this.tok.encode(text, { add_special_tokens: false }).ids);
  };
  BpeVocab.prototype.tokens = WordVocab.prototype.tokens;
  BpeVocab.prototype.decode = function (ids, m) { // as tx.subwords.SubwordVocab.decode
    return this.tok.decode(kept(ids, m), { skip_special_tokens: false }).trim();
  };

  var api = { tokenize: tokenize, detokenize: detokenize, WordVocab: WordVocab, BpeVocab: BpeVocab };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  if (typeof document === "undefined") return;

  // ---------------------------------------------------------------- loading, only when asked
  var STATIC = new URL(".", document.currentScript.src); // .../_static/
  var runtime = null;
  var models = {};

  function loadRuntime() {
    if (!runtime) {
      runtime = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = new URL("ort/ort.wasm.min.js", STATIC).href;
        script.onload = function () {
          var ort = window.ort;
          ort.env.wasm.wasmPaths = new URL("ort/", STATIC).href; // the site's own copy
          ort.env.wasm.numThreads = 1; // threads need cross-origin isolation, and were slower here
          ort.env.logLevel = "error";
          resolve(ort);
        };
        script.onerror = function () { reject(new Error("could not load the ONNX runtime (ort/ort.wasm.min.js)")); };
        document.head.appendChild(script);
      });
    }
    return runtime;
  }

  function fetchOk(url, kind) {
    return fetch(url).then(function (r) {
      if (!r.ok) throw new Error("could not load " + url.pathname.split("/").slice(-2).join("/") + " (HTTP " + r.status + ")");
      return kind === "json" ? r.json() : r.arrayBuffer();
    });
  }

  function loadModel(name) {
    if (!models[name]) {
      var base = new URL("tx-live/" + name + "/", STATIC);
      models[name] = Promise.all([loadRuntime(), fetchOk(new URL("manifest.json", base), "json")])
        .then(function (got) {
          var ort = got[0], manifest = got[1];
          var options = { executionProviders: ["wasm"], graphOptimizationLevel: "all" };
          return Promise.all([
            loadVocabs(manifest, base),
            fetchOk(new URL(manifest.files.encoder, base)).then(function (b) { return ort.InferenceSession.create(b, options); }),
            fetchOk(new URL(manifest.files.decoder, base)).then(function (b) { return ort.InferenceSession.create(b, options); }),
          ]).then(function (parts) {
            return { ort: ort, manifest: manifest, src: parts[0][0], tgt: parts[0][1], encoder: parts[1], decoder: parts[2] };
          });
        });
      models[name].catch(function () { delete models[name]; }); // a later try starts again
    }
    return models[name];
  }

  function loadVocabs(manifest, base) { // [source vocabulary, target vocabulary]
    if (manifest.vocab_kind === "word") {
      return fetchOk(new URL("vocab.json", base), "json").then(function (v) {
        return [new WordVocab(v.src_itos), new WordVocab(v.tgt_itos)];
      });
    }
    return Promise.all([
      import(new URL("tokenizers/tokenizers.min.mjs", STATIC).href),
      fetchOk(new URL("src_tokenizer.json", base), "json"),
      fetchOk(new URL("tgt_tokenizer.json", base), "json"),
    ]).then(function (got) {
      return [new BpeVocab(got[0].Tokenizer, got[1]), new BpeVocab(got[0].Tokenizer, got[2])];
    });
  }

  // ---------------------------------------------------------------- greedy decoding
  function ids(ort, list) {
    return new ort.Tensor("int64", BigInt64Array.from(list.map(BigInt)), [1, list.length]);
  }

  async function translate(model, text) {
    var m = model.manifest;
    var srcIds = model.src.encode(text, m.unk_id).concat([m.eos_id]); // as tx: words, then <eos>, no <bos>
    if (srcIds.length > m.config.max_len) {
      throw new Error("the sentence is " + srcIds.length + " tokens long; this model reads at most " + m.config.max_len + ".");
    }
    var src = ids(model.ort, srcIds);
    var memory = (await model.encoder.run({ src: src })).memory;
    var ys = [m.bos_id], last = null, V = m.config.tgt_vocab_size;
    for (var step = 0; step < m.max_new_tokens; step++) {
      last = await model.decoder.run({ memory: memory, src: src, tgt: ids(model.ort, ys) });
      var logits = last.logits.data, row = (ys.length - 1) * V, best = 0;
      for (var v = 1; v < V; v++) if (logits[row + v] > logits[row + best]) best = v; // the first maximum, as torch
      ys.push(best);
      if (best === m.eos_id) break;
    }
    // The last step's input was every token but the last: its cross-attention has one row per written token.
    return { srcIds: srcIds, ys: ys, text: model.tgt.decode(ys.slice(1), m), cross: last.cross_attn };
  }

  // ---------------------------------------------------------------- the attention map
  function mapOf(cross, layer, head) {
    var d = cross.dims, H = d[2], T = d[3], S = d[4], data = cross.data, rows = [];
    for (var t = 0; t < T; t++) {
      var row = [];
      for (var s = 0; s < S; s++) {
        var sum = 0, heads = head === "mean" ? H : 1;
        for (var h = 0; h < heads; h++) {
          var hh = head === "mean" ? h : Number(head);
          sum += data[((layer * d[1]) * H + hh) * T * S + t * S + s];
        }
        row.push(sum / heads);
      }
      rows.push(row);
    }
    return rows; // [T, S]
  }

  var SVG = "http://www.w3.org/2000/svg";
  function el(name, attrs, text) {
    var e = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function colour(w) { // white to the book's dark blue, by weight 0..1
    var a = Math.max(0, Math.min(1, w));
    return "rgb(" + Math.round(255 - 222 * a) + "," + Math.round(255 - 180 * a) + "," + Math.round(255 - 75 * a) + ")";
  }

  function draw(box, rows, english, french, caption) {
    var longest = function (words) { return Math.max.apply(null, words.map(function (w) { return w.length; })); };
    var cell = 34, left = 14 + 8 * longest(english), top = 16 + 6 * longest(french), T = rows.length, S = french.length;
    var width = left + S * cell + 70, height = top + T * cell + 10;
    var svg = el("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img",
                          "aria-label": caption, "data-live-attention": JSON.stringify(rows) });
    svg.appendChild(el("title", {}, caption));
    french.forEach(function (w, s) {
      var x = left + s * cell + cell / 2;
      svg.appendChild(el("text", { x: x, y: top - 6, transform: "rotate(-45 " + x + " " + (top - 6) + ")",
                                   "font-size": 13, "class": "tx-live-label" }, w));
    });
    rows.forEach(function (row, t) {
      svg.appendChild(el("text", { x: left - 6, y: top + t * cell + cell / 2 + 4, "text-anchor": "end",
                                   "font-size": 13, "class": "tx-live-label" }, english[t]));
      row.forEach(function (w, s) {
        var r = el("rect", { x: left + s * cell, y: top + t * cell, width: cell - 1, height: cell - 1, fill: colour(w) });
        r.appendChild(el("title", {}, english[t] + " → " + french[s] + ": " + w.toFixed(3)));
        svg.appendChild(r);
      });
    });
    var barX = left + S * cell + 24; // the colour bar: weight 0 at the bottom, 1 at the top
    for (var i = 0; i < 20; i++) {
      svg.appendChild(el("rect", { x: barX, y: top + (T * cell) * (19 - i) / 20, width: 12,
                                   height: T * cell / 20 + 0.5, fill: colour((i + 0.5) / 20) }));
    }
    svg.appendChild(el("text", { x: barX + 16, y: top + 10, "font-size": 12, "class": "tx-live-label" }, "1"));
    svg.appendChild(el("text", { x: barX + 16, y: top + T * cell, "font-size": 12, "class": "tx-live-label" }, "0"));
    box.replaceChildren(svg);
  }

  // ---------------------------------------------------------------- the block
  function setUp(block) {
    var form = block.querySelector(".tx-live-form");
    var status = block.querySelector(".tx-live-status");
    var output = block.querySelector("[data-live-output]");
    var box = block.querySelector(".tx-live-map");
    var last = null;
    form.hidden = false;
    block.querySelector(".tx-live-static").hidden = true;
    var why = location.protocol === "file:" ?
      "This page was opened from a file, and a browser does not let such a page run the " +
      "model. Serve the site instead: run `make serve` in the book's folder (or " +
      "`python -m http.server -d _build/html`) and open this page at http://localhost:8000/." :
      typeof WebAssembly === "undefined" ?
      "This browser does not run WebAssembly (or has it switched off), which the model needs here." : "";
    if (why) {
      status.textContent = why;
      block.setAttribute("data-live-state", "unavailable");
      form.querySelectorAll("input, button, select").forEach(function (c) { c.disabled = true; });
      return;
    }

    function redraw() {
      if (!last) return;
      var layer = Number(form.elements.layer.value), head = form.elements.head.value;
      var rows = mapOf(last.result.cross, layer, head);
      var english = last.model.tgt.tokens(last.result.ys.slice(1));
      var french = last.model.src.tokens(last.result.srcIds);
      var which = head === "mean" ? "mean of the heads" : "head " + (Number(head) + 1);
      draw(box, rows, english, french, "Encoder-decoder attention, layer " + (layer + 1) + ", " + which +
           ": one row per English token written, one column per French token.");
      block.txLive = { srcIds: last.result.srcIds, ys: last.result.ys, layer: layer, head: head, attention: rows,
                       ms: last.ms }; // ms: the translation's time, encoder and every decoder step
    }

    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      var text = form.elements.text.value;
      if (!text.trim()) { status.textContent = "Type a French sentence first."; return; }
      block.setAttribute("data-live-state", "busy");
      status.textContent = "Loading the model and the ONNX runtime (a few MB, once)…";
      try {
        var model = await loadModel(block.getAttribute("data-model"));
        status.textContent = "Translating…";
        var start = performance.now();
        var result = await translate(model, text);
        var ms = performance.now() - start;
        last = { model: model, result: result, ms: ms };
        output.textContent = result.text;
        output.parentNode.hidden = false;
        var unknown = result.srcIds.filter(function (i) { return i === model.manifest.unk_id; }).length;
        status.textContent = "Translated in your browser in " + ms.toFixed(0) + " ms" +
          (model.manifest.quantize ? ", by the model with its weights rounded to " + model.manifest.quantize + "." : ".") +
          (unknown ? " " + unknown + " word" + (unknown > 1 ? "s" : "") + " unknown to the model (<unk>)." : "");
        redraw();
        block.setAttribute("data-live-state", "done");
      } catch (err) {
        status.textContent = "The translation failed: " + err.message;
        block.setAttribute("data-live-state", "error");
      }
    });
    form.elements.layer.addEventListener("change", redraw);
    form.elements.head.addEventListener("change", redraw);
  }

  function start() { document.querySelectorAll('[data-live-model="translate"]').forEach(setUp); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
