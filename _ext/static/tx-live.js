// Live models in the page (tx/live.py): the reader's sentence is tokenised here, translated
// by onnxruntime-web from the graphs `python -m tx.export` wrote at build time
// (_static/tx-live/NAME/), greedily or, as the reader chooses, by chapter 11's beam search
// (beamSearch below, tx.decoding.beam_search step for step), for at most the source's length + the
// manifest's length_margin tokens (outputLimit, tx.decoding.output_limit), and the encoder-decoder
// attention of the chosen layer and head is drawn as an SVG. The block shows the tokens the model
// read and names those it has never seen (read as <unk>), and says so under a translation much
// shorter than its source (cutShort). Before anything is fetched it says how many megabytes its
// first use downloads; nothing is fetched until the reader asks for a translation.
// Two more blocks run models trained in a chapter (exported as the build runs it): "generate"
// continues the reader's prompt with a language model, greedily or sampled with a seeded
// generator (never writing <unk>), shows the prompt's words apart from the words it wrote, and
// draws the causal self-attention of the words it wrote; "classify" reads the strokes drawn on a
// canvas, reduced as scikit-learn's digits were made (strokeBitmap, digitGrid), and shows its three
// likeliest classes, the 8x8 image it read, and [CLS]'s attention over its patches.
// The tokeniser, outputLimit, strokeBitmap, digitGrid, beamSearch, translate and continuePrompt are also loaded by
// Node in tests/test_live.py, which compares them with tx's.
(function () {
  "use strict";

  // ---------------------------------------------------------------- tx.data's word tokeniser
  // Python's str patterns: \w is a letter or a number (any script), \d a decimal digit, \s the
  // characters str.isspace() accepts. So tx.data's [^\W\d_] is L, Nl, No and [^\W_] is L, N.
  var SPACE = "\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
  var TOKEN_RE = new RegExp(
    "[\\p{L}\\p{Nl}\\p{No}]+'(?=[\\p{L}\\p{N}])|[\\p{L}\\p{N}]+|[^" + SPACE + "]", "gu");
  var GLUE_RE = /(?<=') | (?=[.,!?;])/g;
  var SPACE_RE = new RegExp("^[" + SPACE + "]$");

  function tokenize(text) {
    // As tx.data.tokenize: NFC, lowercase, typographic apostrophe made plain, then the pattern.
    var t = text.normalize("NFC").toLowerCase().replace(/\u2019/g, "'");
    return t.match(TOKEN_RE) || [];
  }

  // As tx.subwords.tidy_typed: a sentence as a reader types it, written as the real corpus writes
  // its own (NFC; curly marks plain; one space; all capitals put in the corpus's case; a final
  // full stop after a letter or a digit). Python's str.split() splits at SPACE's characters.
  var PLAIN_MARKS = { "\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"', "\u201e": '"',
                      "\u00ab": '"', "\u00bb": '"' };
  var SPACES_RE = new RegExp("[" + SPACE + "]+", "g");
  var GUILLEMETS_RE = new RegExp("\u00ab[" + SPACE + "]*|[" + SPACE + "]*\u00bb", "g");
  function tidyTyped(text) {
    var t = text.normalize("NFC").replace(GUILLEMETS_RE, '"');
    t = t.replace(/[\u2019\u2018\u02bc\u201c\u201d\u201e\u00ab\u00bb]/g, function (c) { return PLAIN_MARKS[c]; });
    t = t.split(SPACES_RE).filter(function (w) { return w !== ""; }).join(" ");
    var chars = Array.from(t), letters = chars.filter(function (c) { return /\p{L}/u.test(c); });
    // a capital is a letter that has a small form, a small letter one that has a capital form
    var upper = letters.filter(function (c) { return c.toLowerCase() !== c; }).length;
    if (upper >= 2 && !letters.some(function (c) { return c.toUpperCase() !== c; })) {
      t = t.toLowerCase();
      var first = Array.from(t)[0];
      t = first.toUpperCase() + t.slice(first.length);
    }
    if (t && /[\p{L}\p{N}]/u.test(Array.from(t).pop())) t += ".";
    return t;
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
  WordVocab.prototype.pieces = function (text) { // the reader's text as the tokens its ids stand for
    return tokenize(text);
  };
  WordVocab.prototype.unknown = function (text) { // the tokens it has no id for (read as <unk>), each once
    var stoi = this.stoi;
    return unique(tokenize(text).filter(function (w) { return !stoi.has(w); }));
  };
  function unique(list) {
    return list.filter(function (x, i) { return list.indexOf(x) === i; });
  }
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
  BpeVocab.prototype.pieces = function (text) { // the pieces it cuts the text into (<unk> for a missing character)
    return Array.from(this.tok.encode(text, { add_special_tokens: false }).tokens);
  };
  BpeVocab.prototype.unknown = function (text, unk) { // the characters it has no piece for (read as <unk>), each once
    var tok = this;
    return unique(Array.from(text.normalize("NFC")).filter(function (c) {
      return !SPACE_RE.test(c) && tok.encode(c).indexOf(unk) >= 0;
    }));
  };
  BpeVocab.prototype.decode = function (ids, m) { // as tx.subwords.SubwordVocab.decode
    return this.tok.decode(kept(ids, m), { skip_special_tokens: false }).trim();
  };

  // ---------------------------------------------------------------- digits, sampling
  function digitGrid(bitmap) { // 32x32 ink bitmap (rows of 0/1) -> 8x8 counts 0..16, as tx.live.digit_grid
    var grid = [];
    for (var r = 0; r < 8; r++) {
      var row = [];
      for (var c = 0; c < 8; c++) {
        var n = 0;
        for (var i = 0; i < 4; i++) for (var j = 0; j < 4; j++) n += bitmap[4 * r + i][4 * c + j] ? 1 : 0;
        row.push(n);
      }
      grid.push(row);
    }
    return grid;
  }

  // As tx.live.stroke_bitmap, operation for operation (so the bitmaps are equal): the strokes' box
  // scaled to 32 pixels high (as wide as that makes it, at most DIGIT_WIDTH), centred, and drawn with
  // a pen DIGIT_STROKE pixels wide whatever the size of the drawing, as the data's digits were made.
  var DIGIT_STROKE = 5, DIGIT_WIDTH = 20;
  function fitStrokes(strokes) { // strokes: [[[x, y], ...], ...] -> the same in the 32x32 box
    var xs = [], ys = [];
    strokes.forEach(function (st) { st.forEach(function (p) { xs.push(p[0]); ys.push(p[1]); }); });
    var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs), y0 = Math.min.apply(null, ys), y1 = Math.max.apply(null, ys);
    var cx = (x0 + x1) / 2, cy = (y0 + y1) / 2, bw = x1 - x0, bh = y1 - y0;
    var sy = bh > 0 ? (32 - DIGIT_STROKE) / bh : null, sx = bw > 0 ? (DIGIT_WIDTH - DIGIT_STROKE) / bw : null;
    if (sy !== null && sx !== null) sx = Math.min(sx, sy);
    else if (sy === null) { sy = sx !== null ? sx : 1; sx = sy; } // a flat stroke keeps its shape; a dot is a dot
    else sx = sy; // a vertical stroke (a 1): the height decides
    return strokes.map(function (st) { return st.map(function (p) { return [16 + (p[0] - cx) * sx, 16 + (p[1] - cy) * sy]; }); });
  }
  function strokeBitmap(strokes) { // -> 32 rows of 32 0/1: a pixel is ink when its centre is within half the pen of a stroke
    var segments = [];
    fitStrokes(strokes).forEach(function (st) {
      if (st.length === 1) segments.push([st[0], st[0]]);
      for (var i = 0; i + 1 < st.length; i++) segments.push([st[i], st[i + 1]]);
    });
    var reach = (DIGIT_STROKE / 2) * (DIGIT_STROKE / 2), bitmap = [];
    for (var r = 0; r < 32; r++) {
      var row = [];
      for (var c = 0; c < 32; c++) {
        var px = c + 0.5, py = r + 0.5, ink = 0;
        for (var k = 0; k < segments.length && !ink; k++) {
          var ax = segments[k][0][0], ay = segments[k][0][1], dx = segments[k][1][0] - ax, dy = segments[k][1][1] - ay;
          var length = dx * dx + dy * dy;
          var t = length === 0 ? 0 : Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / length));
          var qx = ax + t * dx - px, qy = ay + t * dy - py;
          if (qx * qx + qy * qy <= reach) ink = 1;
        }
        row.push(ink);
      }
      bitmap.push(row);
    }
    return bitmap;
  }

  function mulberry32(seed) { // a small seeded generator of numbers in [0, 1): the same seed, the same sentence
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6d2b79f5) >>> 0;
      var t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function argmax(z) { // the first maximum, as torch
    var best = 0;
    for (var v = 1; v < z.length; v++) if (z[v] > z[best]) best = v;
    return best;
  }

  function sample(z, temperature, topK, rand) { // z: logits (-Infinity where never chosen)
    var order = z.map(function (_, i) { return i; }).sort(function (a, b) { return z[b] - z[a]; });
    var kept = topK ? order.slice(0, topK) : order, top = z[order[0]];
    var p = kept.map(function (i) { return Math.exp((z[i] - top) / temperature); });
    var total = p.reduce(function (a, b) { return a + b; }, 0), u = rand() * total;
    for (var k = 0; k < kept.length; k++) { u -= p[k]; if (u < 0) return kept[k]; }
    return kept[0];
  }

  // ---------------------------------------------------------------- beam search (chapter 11)
  // tx.decoding.beam_search for one sentence, the same hypotheses, ranking and stopping rule:
  // * every step ranks the continuations of all live beams together by their summed log-probability,
  //   log P(y_1..y_t | x) = sum of log P(y_i | y_<i, x) (chapter 11, eq-ch11-sentence-log-prob and
  //   eq-ch11-beam-score), and looks at the best 2K of them;
  // * a candidate ending in <eos>, or reaching maxLen tokens, is finished only if it ranks among the
  //   best K (so that K = 1 is greedy decoding); the best K that do not end continue;
  // * a finished hypothesis of L tokens (<eos> included) scores its sum divided by the length penalty,
  //   L^alpha ("power", eq-ch11-length-penalty) or ((5 + L) / 6)^alpha ("gnmt", eq-ch11-gnmt-penalty);
  // * the search stops at maxLen, or once no live beam can beat the best finished hypothesis even
  //   with the most favourable length still reachable (maxLen when alpha > 0: tx's _best_possible).
  // Scores are summed in float64 where tx sums float32: the same ranking, short of a near-tie.
  var PAPER_BEAM = { size: 4, alpha: 0.6, form: "gnmt" }; // the paper's setting, as chapter 11 calls it

  function normalisedScore(logProb, length, alpha, form) { // as tx.decoding.normalised_score
    return logProb / (form === "gnmt" ? Math.pow((5 + length) / 6, alpha) : Math.pow(length, alpha));
  }

  function logSoftmax(z) { // z: a row of logits -> log-probabilities, as torch's log_softmax
    var top = -Infinity, sum = 0, out = new Float64Array(z.length);
    for (var v = 0; v < z.length; v++) if (z[v] > top) top = z[v];
    for (v = 0; v < z.length; v++) sum += Math.exp(z[v] - top);
    var shift = top + Math.log(sum);
    for (v = 0; v < z.length; v++) out[v] = z[v] - shift;
    return out;
  }

  function bestCandidates(beams, logProbs, n) { // the n best (beam, token) continuations, best first
    var best = []; // {parent, token, score}, sorted; ties keep the lower beam, then the lower token (as topk's flat order)
    beams.forEach(function (beam, parent) {
      var row = logProbs[parent];
      for (var v = 0; v < row.length; v++) {
        var score = beam.score + row[v];
        if (best.length === n && !(score > best[n - 1].score)) continue;
        var at = best.length;
        while (at > 0 && score > best[at - 1].score) at--;
        best.splice(at, 0, { parent: parent, token: v, score: score });
        if (best.length > n) best.pop();
      }
    });
    return best;
  }

  // next(prefixes) -> Promise of the next token's logits for each prefix (each starts with <bos>).
  // o: {size: K, maxLen, bos, eos, alpha, form}. Returns the best hypothesis:
  // {tokens: <bos> first, <eos> last unless it ran to maxLen, logProb, score}.
  async function beamSearch(next, o) {
    var K = o.size, beams = [{ tokens: [o.bos], score: 0 }], finished = [];
    for (var step = 1; step <= o.maxLen && beams.length; step++) {
      var logProbs = (await next(beams.map(function (b) { return b.tokens; }))).map(logSoftmax);
      var kept = [];
      bestCandidates(beams, logProbs, 2 * K).forEach(function (c, rank) {
        var tokens = beams[c.parent].tokens.concat([c.token]);
        if (c.token === o.eos || step === o.maxLen) {
          if (rank < K) finished.push({ tokens: tokens, logProb: c.score, score: normalisedScore(c.score, step, o.alpha, o.form) });
        } else if (kept.length < K) {
          kept.push({ tokens: tokens, score: c.score });
        }
      });
      beams = kept;
      if (!stillSearching(finished, beams, step, o)) break;
    }
    var best = finished[0]; // the first of the best, as Python's stable sort
    finished.forEach(function (h) { if (h.score > best.score) best = h; });
    return best;
  }

  function stillSearching(finished, beams, step, o) { // as tx's _still_searching, for its n_best = 1
    if (step >= o.maxLen || !beams.length) return false;
    if (!finished.length) return true;
    var bestAlive = Math.max.apply(null, beams.map(function (b) { return b.score; }));
    var bestDone = Math.max.apply(null, finished.map(function (h) { return h.score; }));
    var reachable = o.alpha > 0 ? o.maxLen : step + 1; // adding tokens only lowers the sum; lp grows with L
    return normalisedScore(bestAlive, reachable, o.alpha, o.form) > bestDone;
  }

  // ---------------------------------------------------------------- how long a translation may run
  // As tx.decoding.output_limit: at most the source's length (its <eos> included) + margin tokens
  // after <bos>, never more than maxLen (the model's positions less <bos>); margin null: maxLen.
  function outputLimit(srcLen, maxLen, margin) {
    return margin === null || margin === undefined ? maxLen : Math.min(maxLen, srcLen + margin);
  }

  // ---------------------------------------------------------------- translating: greedy or beam search
  function ids(ort, list) {
    return new ort.Tensor("int64", BigInt64Array.from(list.map(BigInt)), [1, list.length]);
  }

  function rows(ort, lists) { // [n, L] int64 from n lists of one length
    var flat = [].concat.apply([], lists);
    return new ort.Tensor("int64", BigInt64Array.from(flat.map(BigInt)), [lists.length, lists[0].length]);
  }

  function repeated(ort, t, n) { // t [1, ...] -> its n copies, [n, ...]
    if (n === 1) return t;
    var data = new t.data.constructor(t.data.length * n);
    for (var i = 0; i < n; i++) data.set(t.data, i * t.data.length);
    return new ort.Tensor(t.type, data, [n].concat(t.dims.slice(1)));
  }

  // decoding: "greedy", or "beam" (PAPER_BEAM's setting). Both write at most outputLimit tokens after
  // <bos>: the source's length + the manifest's length_margin, as tx.live's translations are decoded
  // (tx.evaluate.translate with length_margin). model: {ort, manifest, src, tgt, encoder, decoder}.
  async function translate(model, text, decoding) {
    var m = model.manifest, ort = model.ort;
    var srcIds = model.src.encode(text, m.unk_id).concat([m.eos_id]); // as tx: words, then <eos>, no <bos>
    if (srcIds.length > m.config.max_len) {
      throw new Error("the sentence is " + srcIds.length + " tokens long; this model reads at most " + m.config.max_len +
                      ". Translate it in shorter pieces, a sentence at a time.");
    }
    var limit = outputLimit(srcIds.length, m.max_new_tokens, m.length_margin);
    var src = ids(ort, srcIds);
    var memory = (await model.encoder.run({ src: src })).memory, V = m.config.tgt_vocab_size, out = null;
    async function next(prefixes) { // the next token's logits after each prefix (all of one length)
      var n = prefixes.length, T = prefixes[0].length;
      out = await model.decoder.run({ memory: repeated(ort, memory, n), src: repeated(ort, src, n), tgt: rows(ort, prefixes) });
      var logits = out.logits.data, got = [];
      for (var i = 0; i < n; i++) got.push(logits.subarray((i * T + T - 1) * V, (i * T + T) * V));
      return got;
    }
    var ys;
    if (decoding === "beam") {
      ys = (await beamSearch(next, Object.assign({ maxLen: limit, bos: m.bos_id, eos: m.eos_id }, PAPER_BEAM))).tokens;
    } else {
      ys = [m.bos_id];
      for (var step = 0; step < limit; step++) {
        var best = argmax((await next([ys]))[0]); // the first maximum, as torch
        ys.push(best);
        if (best === m.eos_id) break;
      }
    }
    // The cross-attention of the decoder run on every token of the translation but the last: one row
    // per written token. Greedy decoding's last step was that run; after a beam search, the decoder
    // reads the returned hypothesis once more (teacher-forced), so what is drawn is that sentence's.
    if (decoding === "beam") out = await model.decoder.run({ memory: memory, src: src, tgt: ids(ort, ys.slice(0, -1)) });
    return { srcIds: srcIds, srcPieces: model.src.pieces(text).concat([model.src.itos[m.eos_id]]),
             unknown: model.src.unknown(text, m.unk_id), ys: ys, limit: limit, ended: ys.indexOf(m.eos_id) > 0,
             text: model.tgt.decode(ys.slice(1), m), cross: out.cross_attn, decoding: decoding };
  }

  // The language model (tx.live.generator): <bos> and the prompt's words, then at most maxNew words,
  // greedy or sampled, as tx.generate; the self-attention [L, 1, H, T, T] of the last run, which read
  // every token but the last written. model: {ort, manifest, vocab, session}.
  async function continuePrompt(model, text, choice, seed, maxNew) {
    var m = model.manifest, V = m.config.vocab_size, maxLen = m.config.max_len;
    var ys = [m.bos_id].concat(model.vocab.encode(text, m.unk_id)); // as tx: <bos> words, no <eos>
    if (ys.length > maxLen) throw new Error("the prompt is " + ys.length + " tokens long; this model reads at most " + maxLen +
                                          ": shorten it.");
    var temperature = choice[0] === "t" ? Number(choice.slice(1)) : 1, topK = choice[0] === "k" ? Number(choice.slice(1)) : 0;
    var rand = mulberry32(seed), prompt = ys.length, out = null;
    for (var step = 0; step < maxNew; step++) {
      out = await model.session.run({ tokens: ids(model.ort, ys) });
      var row = (ys.length - 1) * V, z = Array.from(out.logits.data.subarray(row, row + V));
      z[m.pad_id] = -Infinity; // padding is layout, never a word to write (as tx.generate)
      z[m.unk_id] = -Infinity; // <unk> stands for the words it cannot read, never one to write (as tx.live)
      var next = choice === "greedy" ? argmax(z) : sample(z, temperature, topK, rand);
      ys.push(next);
      if (next === m.eos_id || ys.length >= maxLen) break; // <eos>, or the context is full
    }
    return { ids: ys, prompt: prompt, text: model.vocab.decode(ys, m), self: out && out.self_attn,
             pieces: [model.vocab.itos[m.bos_id]].concat(model.vocab.pieces(text)), unknown: model.vocab.unknown(text) };
  }

  // The causal self-attention of the words the model wrote: rows prompt-1 .. T-1 of one layer's map
  // [T, T] (row t read tokens 0..t and wrote token t + 1), one head or their mean. self: [L, 1, H, T, T].
  function writtenAttention(self, layer, head, prompt) {
    var d = self.dims, H = d[2], T = d[3], data = self.data, out = [];
    for (var t = prompt - 1; t < T; t++) {
      var row = [];
      for (var s = 0; s < T; s++) {
        var sum = 0, heads = head === "mean" ? H : 1;
        for (var h = 0; h < heads; h++) sum += data[((layer * H) + (head === "mean" ? h : Number(head))) * T * T + t * T + s];
        row.push(sum / heads);
      }
      out.push(row);
    }
    return out; // [T - prompt + 1, T]
  }

  // Whether a translation looks cut short: a source of more than SHORT_SOURCE pieces (its <eos> left
  // out) and fewer than half as many pieces written (<bos> and <eos> left out). Chapter 12's model
  // learnt from Tatoeba, mostly short sentences, and on a long one it often ends after a clause or
  // two with a sentence of its own, which reads as a whole translation (issue 46).
  var SHORT_SOURCE = 20;
  function cutShort(srcPieces, outPieces) {
    return srcPieces > SHORT_SOURCE && 2 * outPieces < srcPieces;
  }

  var api = { tokenize: tokenize, tidyTyped: tidyTyped, detokenize: detokenize, WordVocab: WordVocab, BpeVocab: BpeVocab,
              digitGrid: digitGrid, strokeBitmap: strokeBitmap, mulberry32: mulberry32, sample: sample, beamSearch: beamSearch,
              normalisedScore: normalisedScore, outputLimit: outputLimit, translate: translate,
              continuePrompt: continuePrompt, writtenAttention: writtenAttention, cutShort: cutShort };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  if (typeof document === "undefined") return;

  // ---------------------------------------------------------------- loading, only when asked
  var STATIC = new URL(".", document.currentScript.src); // .../_static/
  var runtime = null;
  var models = {};

  // onnxruntime-web's WebAssembly binary is served gzip-compressed (make vendor writes ort/*.wasm.gz:
  // 3.7 MB instead of 14.2 MB, whatever the server does) and unpacked here with the browser's own
  // DecompressionStream. A server that names the file's encoding (Content-Encoding: gzip) makes the
  // browser unpack it already: then the bytes start with "\0asm" and are used as they are.
  var RUNTIME_WASM = "ort/ort-wasm-simd-threaded.wasm.gz";

  function unpacked(buffer) {
    var head = new Uint8Array(buffer, 0, 2);
    if (head[0] !== 0x1f || head[1] !== 0x8b) return buffer;
    return new Response(new Blob([buffer]).stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
  }

  function loadRuntime() {
    if (!runtime) {
      var script = new Promise(function (resolve, reject) {
        var tag = document.createElement("script");
        tag.src = new URL("ort/ort.wasm.min.js", STATIC).href;
        tag.onload = function () { resolve(window.ort); };
        tag.onerror = function () { reject(new Error("could not load the ONNX runtime (ort/ort.wasm.min.js)")); };
        document.head.appendChild(tag);
      });
      runtime = Promise.all([script, fetchOk(new URL(RUNTIME_WASM, STATIC)).then(unpacked)]).then(function (got) {
        var ort = got[0];
        ort.env.wasm.wasmPaths = new URL("ort/", STATIC).href; // the site's own copy of its .mjs
        ort.env.wasm.wasmBinary = got[1]; // the binary, fetched and unpacked above
        ort.env.wasm.numThreads = 1; // threads need cross-origin isolation, and were slower here
        ort.env.logLevel = "error";
        return ort;
      });
      runtime.catch(function () { runtime = null; }); // a later try starts again
    }
    return runtime;
  }

  function fetchOk(url, kind) {
    return fetch(url).then(function (r) {
      if (!r.ok) throw new Error("could not load " + url.pathname.split("/").slice(-2).join("/") + " (HTTP " + r.status + ")");
      return kind === "json" ? r.json() : r.arrayBuffer();
    });
  }

  // What a reader's first use of a block downloads, said before it starts: the bytes of the
  // model's files and, unless another block loaded it already, of the ONNX runtime, as the
  // build measured them (window.txLiveBytes, from _ext/book_site.py); without them no figure.
  var MB = function (bytes) { return (bytes / 1e6).toFixed(1) + " MB"; };
  function loadingNote(name) {
    if (models[name]) return "Loading the model…";
    var bytes = window.txLiveBytes || {};
    if (!bytes[name] || !bytes.runtime) return "Downloading the model and the ONNX runtime, once…";
    if (runtime) return "Downloading the model (" + MB(bytes[name]) + ", once)…";
    return "Downloading the model (" + MB(bytes[name]) + ") and the ONNX runtime that runs it in the page (" +
           MB(bytes.runtime) + "), once…";
  }

  // A block's model, loaded by load(name), and what to say of its loading: on a first use the
  // download and the runtime's start take seconds, which the time of the translation itself
  // leaves out (a reader who waited 17 s must not read "in 2336 ms" alone); "" after that.
  async function timedLoad(load, name) {
    var fresh = !models[name], start = performance.now();
    var model = await load(name);
    var s = (performance.now() - start) / 1000;
    return { model: model, note: fresh ? "Downloaded and started the model in " + s.toFixed(1) + " s, once. " : "" };
  }

  // Under each block's form, before anything is fetched: what its first use downloads. A note goes
  // once its model is loaded, and counts the model alone once another block has loaded the runtime.
  var notes = [], loaded = {};
  function addSizeNote(block, use) { // use: "translation", ...: what the reader asks for
    var p = document.createElement("p");
    p.className = "tx-live-size";
    block.querySelector(".tx-live-form").after(p);
    notes.push({ p: p, name: block.getAttribute("data-model"), use: use });
    refreshSizeNotes();
  }
  function refreshSizeNotes() {
    var bytes = window.txLiveBytes || {};
    notes.forEach(function (n) {
      var model = bytes[n.name];
      n.p.hidden = !model || !bytes.runtime || !!loaded[n.name];
      if (n.p.hidden) return;
      n.p.textContent = loaded.runtime ?
        "Your first " + n.use + " downloads this model, " + MB(model) + ", once." :
        "Your first " + n.use + " downloads " + MB(model + bytes.runtime) + ", once: the model (" + MB(model) +
        ") and the ONNX runtime that runs it in the page (" + MB(bytes.runtime) + ").";
    });
  }
  function markLoaded(name, promise) { // promise: the model's; its runtime is loaded when it resolves
    promise.then(function () { loaded[name] = loaded.runtime = true; refreshSizeNotes(); }, function () {});
    return promise;
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
      markLoaded(name, models[name]);
    }
    return models[name];
  }

  function loadOne(name) { // a model exported by a chapter: model.onnx, manifest.json and maybe vocab.json
    if (!models[name]) {
      var base = new URL("tx-live/" + name + "/", STATIC);
      models[name] = Promise.all([loadRuntime(), fetchOk(new URL("manifest.json", base), "json")])
        .then(function (got) {
          var ort = got[0], manifest = got[1];
          var options = { executionProviders: ["wasm"], graphOptimizationLevel: "all" };
          return Promise.all([
            manifest.vocab_kind === "word" ? fetchOk(new URL("vocab.json", base), "json") : null,
            fetchOk(new URL(manifest.files.model, base)).then(function (b) { return ort.InferenceSession.create(b, options); }),
          ]).then(function (parts) {
            return { ort: ort, manifest: manifest, vocab: parts[0] && new WordVocab(parts[0].itos), session: parts[1] };
          });
        });
      models[name].catch(function () { delete models[name]; });
      markLoaded(name, models[name]);
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

  // rows [T][S] of weights drawn as squares: one row per token written (rowLabels), one column per
  // token read (colLabels). seen(t, s) false: a cell the causal mask hides, drawn grey, never blue.
  function draw(box, rows, rowLabels, colLabels, caption, seen) {
    var longest = function (words) { return Math.max.apply(null, words.map(function (w) { return w.length; })); };
    var T = rows.length, S = colLabels.length, cell = Math.max(22, Math.min(34, Math.floor(560 / S)));
    var left = 14 + 8 * longest(rowLabels), top = 16 + 6 * longest(colLabels);
    var width = left + S * cell + 70, height = top + T * cell + 10;
    var svg = el("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img",
                          "aria-label": caption, "data-live-attention": JSON.stringify(rows) });
    svg.appendChild(el("title", {}, caption));
    colLabels.forEach(function (w, s) {
      var x = left + s * cell + cell / 2;
      svg.appendChild(el("text", { x: x, y: top - 6, transform: "rotate(-45 " + x + " " + (top - 6) + ")",
                                   "font-size": 13, "class": "tx-live-label" }, w));
    });
    rows.forEach(function (row, t) {
      svg.appendChild(el("text", { x: left - 6, y: top + t * cell + cell / 2 + 4, "text-anchor": "end",
                                   "font-size": 13, "class": "tx-live-label" }, rowLabels[t]));
      row.forEach(function (w, s) {
        var hidden = seen && !seen(t, s);
        var r = el("rect", { x: left + s * cell, y: top + t * cell, width: cell - 1, height: cell - 1,
                             fill: hidden ? "#d9d9d9" : colour(w), "class": hidden ? "tx-live-masked" : "tx-live-cell" });
        r.appendChild(el("title", {}, hidden ? rowLabels[t] + " cannot see " + colLabels[s] + ", written after it (the causal mask)"
                                             : rowLabels[t] + " → " + colLabels[s] + ": " + w.toFixed(3)));
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
    // the caption, also said under the map: a hover tooltip is no use on a phone
    var legend = document.createElement("p");
    legend.className = "tx-live-caption";
    legend.textContent = caption + " Darker: more weight; hover over a square for its number.";
    box.replaceChildren(svg, legend);
  }

  // ---------------------------------------------------------------- what the model read
  // The reader's text as the tokens the model reads, those it has never seen marked, and a sentence
  // that names them: a word vocabulary reads every unknown word as the one token <unk>, so what the
  // model writes in its place is invented (chapter 1's "le chien mange la pizza" gives "the dog eats
  // the tomato"), and the reader should know it before trusting the output.
  var WORDLIKE = /[\p{L}\p{N}]/u;
  function unknownLabel(piece) { return "<unk> (" + piece + ")"; }

  function quoted(list) {
    var q = list.map(function (w) { return "“" + w + "”"; });
    return q.length < 2 ? q.join("") : q.slice(0, -1).join(", ") + " and " + q[q.length - 1];
  }

  // then: what follows for the reader, for one unknown word and for several
  var THEN = {
    translate: ["so whatever it writes for it is made up", "so whatever it writes for them is made up"],
    generate: ["so it goes on without knowing what it means", "so it goes on without knowing what they mean"],
  };

  function unknownSentence(vocab, unknown, then) {
    if (!unknown.length) return "";
    if (vocab instanceof BpeVocab) {
      return "The model has no piece for the character" + (unknown.length > 1 ? "s " : " ") + quoted(unknown) +
        ": it reads " + (unknown.length > 1 ? "each" : "it") + " as <unk>, and cannot know what " +
        (unknown.length > 1 ? "they stand" : "it stands") + " for.";
    }
    var words = unknown.filter(function (w) { return WORDLIKE.test(w); });
    var marks = unknown.filter(function (w) { return !WORDLIKE.test(w); });
    var noMarks = !vocab.itos.slice(4).some(function (w) { return !WORDLIKE.test(w); });
    var said = [];
    if (words.length) {
      said.push("The model has never seen " + quoted(words) + ": it reads " + (words.length > 1 ? "each" : "it") +
        " as <unk>, the one token it has for every word it does not know, " + then[words.length > 1 ? 1 : 0] + ".");
    }
    if (marks.length) {
      said.push((words.length ? "It has never seen the mark" : "The model has never seen the mark") +
        (marks.length > 1 ? "s " : " ") + quoted(marks) + (noMarks ? " (its corpus has no punctuation)" : "") +
        " and reads " + (marks.length > 1 ? "them" : "it") + " as <unk> too.");
    }
    return said.join(" ");
  }

  function showRead(box, vocab, pieces, ids, unkId, unknown, then) {
    var line = document.createElement("p"), note = document.createElement("p");
    line.append("The model reads: ");
    pieces.forEach(function (piece, i) {
      var unk = ids[i] === unkId, span = document.createElement(unk ? "mark" : "span");
      span.className = unk ? "tx-live-token tx-live-unk" : "tx-live-token";
      span.textContent = piece;
      if (unk) span.title = "never seen: read as <unk>";
      line.append(span, " ");
    });
    note.className = "tx-live-unknown";
    note.textContent = unknownSentence(vocab, unknown, then);
    box.replaceChildren(line);
    if (note.textContent) box.append(note);
    box.hidden = false;
    box.setAttribute("data-live-unknown", JSON.stringify(unknown));
  }

  function addReadBox(block) { // after the block's result
    var box = document.createElement("div");
    box.className = "tx-live-read";
    box.hidden = true;
    block.querySelector(".tx-live-result").after(box);
    return box;
  }

  // A block's result taken off the screen: its output, its map (a page built before the language
  // model's block had one has none) and what the model read. For an input that failed after one that
  // worked, and for a digit changed after it was classified.
  function hideResult(output, box, read) {
    output.replaceChildren(); output.parentNode.hidden = true;
    if (box) box.replaceChildren();
    read.replaceChildren(); read.hidden = true;
  }

  // Under the translation, empty unless it is much shorter than the French (cutShort). A live region
  // of its own, there from the start (one added or unhidden with its text is not always read out):
  // the block's others are the output, whose text is the translation alone, and the status line,
  // which comes after the pieces the model read, far below the translation on a phone.
  function addCutShortNote(block) {
    var p = document.createElement("p");
    p.className = "tx-live-short";
    p.setAttribute("role", "status");
    block.querySelector(".tx-live-result").after(p);
    return p;
  }

  function cutShortNote(r) { // r: translate's result
    var fr = r.srcIds.length - 1, en = r.ys.length - 1 - (r.ended ? 1 : 0);
    if (!cutShort(fr, en)) return "";
    return "The English is much shorter than the French (" + en + " pieces for " + fr + "): this model " +
      "learnt from short sentences and may have stopped before the end. Try the sentence in shorter parts.";
  }

  // ---------------------------------------------------------------- the block
  function setUp(block) {
    var form = block.querySelector(".tx-live-form");
    var status = block.querySelector(".tx-live-status");
    var output = block.querySelector("[data-live-output]");
    var box = block.querySelector(".tx-live-map");
    var read = addReadBox(block), cutNote = addCutShortNote(block);
    var last = null, said = ""; // said: the status line of the translation shown
    addDecodingMenu(form);
    if (unavailable(block)) return;
    addSizeNote(block, "translation");

    function redraw() {
      if (!last) return;
      var layer = Number(form.elements.layer.value), head = form.elements.head.value;
      var r = last.result, m = last.model.manifest;
      var rows = mapOf(r.cross, layer, head);
      var english = last.model.tgt.tokens(r.ys.slice(1));
      var french = r.srcPieces.map(function (w, s) { return r.srcIds[s] === m.unk_id ? unknownLabel(w) : w; });
      var which = head === "mean" ? "mean of the heads" : "head " + (Number(head) + 1);
      draw(box, rows, english, french, "Encoder-decoder attention, layer " + (layer + 1) + ", " + which +
           ": one row per English token written, one column per French token.");
      block.txLive = { srcIds: r.srcIds, ys: r.ys, decoding: r.decoding, layer: layer, limit: r.limit, ended: r.ended,
                       head: head, attention: rows, ms: last.ms }; // ms: the translation's time, encoder and every decoder step
    }

    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      var typed = form.elements.text.value, text = typed;
      if (!text.trim()) { status.textContent = "Type a French sentence first."; return; }
      block.setAttribute("data-live-state", "busy");
      status.textContent = loadingNote(block.getAttribute("data-model"));
      cutNote.textContent = ""; // the note belongs to the translation before
      try {
        var loaded = await timedLoad(loadModel, block.getAttribute("data-model")), model = loaded.model;
        // a subword model reads what is typed as its corpus writes it, as python -m tx.translate does
        if (model.src instanceof BpeVocab) text = tidyTyped(typed);
        status.textContent = "Translating…";
        var start = performance.now();
        var result = await translate(model, text, form.elements.decoding.value);
        var ms = performance.now() - start, m = model.manifest;
        last = { model: model, result: result, ms: ms };
        output.textContent = result.text;
        output.parentNode.hidden = false;
        showRead(read, model.src, result.srcPieces, result.srcIds, m.unk_id, result.unknown, THEN.translate);
        cutNote.textContent = cutShortNote(result);
        said = status.textContent = loaded.note + "Translated in your browser in " + ms.toFixed(0) + " ms by " + DECODINGS[result.decoding] +
          (m.quantize ? ", the model's weights rounded to " + m.quantize + "." : ".") + (result.ended ? "" :
          " The model never wrote <eos> (the end of a sentence): the page stopped it at " + result.limit + " tokens, " +
          (result.limit < m.max_new_tokens ? "the source's " + result.srcIds.length + " tokens and " + m.length_margin + " more." :
           "all the positions the model has.")) +
          (text !== typed.trim() ? " It read: " + text : "");
        redraw();
        block.setAttribute("data-live-state", "done");
      } catch (err) {
        // what is still on screen belongs to the sentence before: it goes with the error
        last = null; block.txLive = null; said = "";
        hideResult(output, box, read);
        status.textContent = "The translation failed: " + err.message;
        block.setAttribute("data-live-state", "error");
      }
    });
    form.elements.layer.addEventListener("change", redraw);
    form.elements.head.addEventListener("change", redraw);
    form.elements.decoding.addEventListener("change", function () { // the translation shown is the old setting's
      if (!last || block.getAttribute("data-live-state") !== "done") return;
      var now = form.elements.decoding.value;
      status.textContent = now === last.result.decoding ? said : said + " The menu now says " + DECODINGS[now] +
        ": press Translate to translate by it.";
    });
  }

  // The decoding menu, built here rather than in tx/live.py's HTML so that a page built before it
  // gains it with this script alone; greedy first, the block's first choice.
  var DECODINGS = {
    greedy: "greedy decoding",
    beam: "beam search (" + PAPER_BEAM.size + " beams, GNMT's length penalty with α = " + PAPER_BEAM.alpha + ")",
  };
  function addDecodingMenu(form) {
    var id = form.parentNode.id + "-decoding", span = document.createElement("span");
    span.className = "tx-live-control";
    span.innerHTML = '<label for="' + id + '">Decoding</label><select id="' + id + '" name="decoding">' +
      '<option value="greedy" selected>greedy</option>' +
      '<option value="beam">beam search (' + PAPER_BEAM.size + " beams, α = " + PAPER_BEAM.alpha + ")</option></select>";
    form.querySelector('button[type="submit"]').after(span);
  }

  function unavailable(block) { // why this page cannot run a model, or ""
    var form = block.querySelector(".tx-live-form");
    form.hidden = false;
    block.querySelector(".tx-live-static").hidden = true;
    var why = location.protocol === "file:" ?
      "This page was opened from a file, and a browser does not let such a page run the " +
      "model. Serve the site instead: run `make serve` in the book's folder (or " +
      "`python -m http.server -d _build/html`) and open this page at http://localhost:8000/." :
      typeof WebAssembly === "undefined" ?
      "This browser does not run WebAssembly (or has it switched off), which the model needs here." :
      typeof DecompressionStream === "undefined" ?
      "This browser cannot unpack the compressed ONNX runtime (it lacks DecompressionStream, which every " +
      "browser has had since 2023); a newer browser runs the model here." : "";
    if (why) {
      block.querySelector(".tx-live-status").textContent = why;
      block.setAttribute("data-live-state", "unavailable");
      form.querySelectorAll("input, button, select").forEach(function (c) { c.disabled = true; });
    }
    return why;
  }

  // ---------------------------------------------------------------- the language model's block
  // The prompt as the model read it, its tokens (lowercased; the words it has never seen marked, as showRead marks
  // them: it read each as <unk>, and echoing "<unk>" would pass it off as its own), then the words it
  // wrote, in bold; spaced as tx.data.detokenize spaces words (tx.live's _continuation_html).
  function showContinuation(output, model, r) {
    var m = model.manifest, prompt = document.createElement("span"), written = document.createElement("b");
    var words = r.pieces.slice(1), ids = r.ids.slice(1, r.prompt);
    prompt.className = "tx-live-prompt";
    prompt.style.fontWeight = "normal";
    words.forEach(function (w, i) {
      if (i > 0 && !(words[i - 1].endsWith("'") || /^[.,!?;]/.test(w))) prompt.append(" ");
      if (ids[i] !== m.unk_id) { prompt.append(w); return; }
      var mark = document.createElement("mark");
      mark.className = "tx-live-token tx-live-unk";
      mark.title = "never seen: read as <unk>";
      mark.textContent = w;
      prompt.append(mark);
    });
    written.className = "tx-live-written";
    written.textContent = model.vocab.decode(r.ids.slice(r.prompt), m);
    var text = written.textContent, typed = detokenize(words);
    var space = !text || typed.endsWith("'") || /^[.,!?;]/.test(text) ? "" : " ";
    output.replaceChildren(prompt, space, written);
  }

  function setUpGenerate(block) {
    var read = addReadBox(block);
    if (unavailable(block)) return;
    addSizeNote(block, "continuation");
    var form = block.querySelector(".tx-live-form"), status = block.querySelector(".tx-live-status");
    var output = block.querySelector("[data-live-output]"), box = block.querySelector(".tx-live-map");
    var maxNew = Number(block.getAttribute("data-max-new-tokens"));
    var last = null;
    var seedless = function () { form.elements.seed.disabled = form.elements.sampling.value === "greedy"; };
    form.elements.sampling.addEventListener("change", seedless); // greedy draws nothing: no seed to choose
    seedless();

    // The words it wrote, one row each, over every token it could read when it wrote them: <bos>, the
    // prompt, then its own words; the causal mask hides the rest (the grey cells above the diagonal).
    function redraw() {
      if (!last || !last.result.self || !form.elements.layer) return;
      var layer = Number(form.elements.layer.value), head = form.elements.head.value;
      var r = last.result, m = last.model.manifest, P = r.prompt, T = r.ids.length - 1;
      var rows = writtenAttention(r.self, layer, head, P);
      var read = r.pieces.map(function (w, i) { return r.ids[i] === m.unk_id ? unknownLabel(w) : w; })
        .concat(last.model.vocab.tokens(r.ids.slice(P, T)));
      var written = last.model.vocab.tokens(r.ids.slice(P, T + 1));
      var which = head === "mean" ? "mean of the heads" : "head " + (Number(head) + 1);
      draw(box, rows, written, read, "Causal self-attention, layer " + (layer + 1) + ", " + which + ": one row per " +
           "word the model wrote, one column per token before it (<bos>, the prompt, its own words); grey: " +
           "the words after it, which the causal mask hides.", function (t, s) { return s <= P - 1 + t; });
      block.txLive = { ids: r.ids, prompt: P, choice: last.choice, seed: last.seed, ms: last.ms, layer: layer, head: head,
                       attention: rows };
    }

    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      var text = form.elements.text.value, choice = form.elements.sampling.value;
      var seed = Math.max(0, Math.floor(Number(form.elements.seed.value) || 0));
      block.setAttribute("data-live-state", "busy");
      status.textContent = loadingNote(block.getAttribute("data-model"));
      try {
        var loaded = await timedLoad(loadOne, block.getAttribute("data-model")), model = loaded.model;
        status.textContent = "Writing…";
        var start = performance.now();
        var result = await continuePrompt(model, text, choice, seed, maxNew);
        var ms = performance.now() - start;
        last = { model: model, result: result, choice: choice, seed: seed, ms: ms };
        showContinuation(output, model, result);
        output.parentNode.hidden = false;
        showRead(read, model.vocab, result.pieces, result.ids, model.manifest.unk_id, result.unknown, THEN.generate);
        // A model that writes <eos> first ends the sentence where the prompt ends: say so, or the
        // block would show the prompt alone, as if nothing had happened.
        var atOnce = result.ids.length === result.prompt + 1 && result.ids[result.prompt] === model.manifest.eos_id;
        status.textContent = loaded.note + (atOnce ? "The model ended the sentence at once: the first token it wrote was <eos>, " +
          "the end of a sentence. Try a prompt that stops mid-sentence. " : "") +
          "Written in your browser in " + ms.toFixed(0) + " ms, " +
          (choice === "greedy" ? "greedily." : "sampled with seed " + seed + ".");
        block.txLive = { ids: result.ids, prompt: result.prompt, choice: choice, seed: seed, ms: ms };
        redraw();
        block.setAttribute("data-live-state", "done");
      } catch (err) {
        last = null; block.txLive = null; // what is on screen belongs to the prompt before
        hideResult(output, box, read);
        status.textContent = "The model failed: " + err.message;
        block.setAttribute("data-live-state", "error");
      }
    });
    if (form.elements.layer) { // a page built before the block had menus draws nothing
      form.elements.layer.addEventListener("change", redraw);
      form.elements.head.addEventListener("change", redraw);
    }
  }

  // ---------------------------------------------------------------- the digit classifier's block
  function paintGrid(canvas, grid) { // an 8x8 grid of 0..16 as grey squares on the canvas
    var ctx = canvas.getContext("2d"), s = canvas.width / 8;
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    grid.forEach(function (row, r) {
      row.forEach(function (v, c) {
        if (v) { ctx.fillStyle = "rgba(0,0,0," + (v / 16) + ")"; ctx.fillRect(c * s, r * s, s, s); }
      });
    });
  }

  function drawDigitAttention(box, grid, weights, patch, caption) { // the 8x8 input, and the patches shaded by weight
    var px = 22, n = 8 / patch, size = 8 * px, top = Math.max.apply(null, weights) || 1;
    var svg = el("svg", { width: size + 60, height: size, viewBox: "0 0 " + (size + 60) + " " + size, role: "img",
                          "aria-label": caption, "data-live-attention": JSON.stringify(weights) });
    svg.appendChild(el("title", {}, caption));
    grid.forEach(function (row, r) {
      row.forEach(function (v, c) {
        var g = Math.round(255 - 255 * v / 16);
        svg.appendChild(el("rect", { x: c * px, y: r * px, width: px, height: px, fill: "rgb(" + g + "," + g + "," + g + ")" }));
      });
    });
    weights.forEach(function (w, i) {
      var r = el("rect", { x: (i % n) * patch * px, y: Math.floor(i / n) * patch * px, width: patch * px, height: patch * px,
                           fill: "rgb(230,97,1)", "fill-opacity": (0.75 * w / top).toFixed(3), stroke: "#888", "stroke-width": 0.5 });
      r.appendChild(el("title", {}, "patch " + (i + 1) + ": " + w.toFixed(3)));
      svg.appendChild(r);
    });
    svg.appendChild(el("text", { x: size + 6, y: 14, "font-size": 12, "class": "tx-live-label" }, "max"));
    svg.appendChild(el("text", { x: size + 6, y: 28, "font-size": 12, "class": "tx-live-label" }, top.toFixed(2)));
    box.replaceChildren(svg);
  }

  // What the model read and what it thinks: its three likeliest classes with their probabilities, and
  // the 8x8 image it was given (each pixel's count of ink, 0 to 16, as a grey square with its number).
  function showDigitRead(box, grid, logits) {
    var top = Math.max.apply(null, logits), exp = logits.map(function (z) { return Math.exp(z - top); });
    var total = exp.reduce(function (a, b) { return a + b; }, 0);
    var order = logits.map(function (_, i) { return i; }).sort(function (a, b) { return logits[b] - logits[a] || a - b; });
    var line = document.createElement("p");
    line.className = "tx-live-top";
    line.textContent = "Its three likeliest digits: " + order.slice(0, 3).map(function (k) {
      return k + " (probability " + (exp[k] / total).toFixed(2) + ")";
    }).join(", ") + ".";
    var px = 18, size = 8 * px, caption = "The 8x8 image the model read: each square counts the ink of a 4x4 block " +
      "of the 32x32 bitmap, 0 (white) to 16 (black).";
    var svg = el("svg", { width: size, height: size, viewBox: "0 0 " + size + " " + size, role: "img",
                          "aria-label": caption, "class": "tx-live-grid", "data-live-grid": JSON.stringify(grid) });
    svg.appendChild(el("title", {}, caption));
    grid.forEach(function (row, r) {
      row.forEach(function (v, c) {
        var g = Math.round(255 - 255 * v / 16);
        svg.appendChild(el("rect", { x: c * px, y: r * px, width: px, height: px, fill: "rgb(" + g + "," + g + "," + g + ")",
                                     stroke: "#bbb", "stroke-width": 0.5 }));
        if (v) svg.appendChild(el("text", { x: c * px + px / 2, y: r * px + px / 2 + 4, "text-anchor": "middle", "font-size": 10,
                                            fill: v > 8 ? "#fff" : "#000" }, String(v)));
      });
    });
    var label = document.createElement("p");
    label.textContent = "What it read (8x8, ink 0 to 16):";
    box.replaceChildren(line, label, svg);
    box.hidden = false;
    return order.slice(0, 3).map(function (k) { return [k, exp[k] / total]; });
  }

  function setUpClassify(block) {
    if (unavailable(block)) return;
    addSizeNote(block, "classification");
    var form = block.querySelector(".tx-live-form"), status = block.querySelector(".tx-live-status");
    var output = block.querySelector("[data-live-output]"), box = block.querySelector(".tx-live-map");
    var canvas = block.querySelector("canvas"), ctx = canvas.getContext("2d");
    var reference = JSON.parse(block.getAttribute("data-live-reference"));
    var patch = Number(block.getAttribute("data-patch"));
    var read = addReadBox(block);
    // given: an 8x8 grid set by an example (null: read the strokes); strokes: the reader's, in canvas pixels
    var given = null, last = null, drawing = false, strokes = [];

    function forget() { // the shown result belongs to the digit before: hide it
      last = null; hideResult(output, box, read);
      status.textContent = "";
    }
    function setGrid(grid) { given = grid; strokes = []; paintGrid(canvas, grid); forget(); }
    function at(e) { // the pointer in the canvas's own pixels
      var r = canvas.getBoundingClientRect(), k = canvas.width / r.width;
      return [(e.clientX - r.left) * k, (e.clientY - r.top) * k];
    }
    block.txLiveSetGrid = setGrid; // for tests, and the example buttons
    canvas.addEventListener("pointerdown", function (e) {
      if (given) ctx.clearRect(0, 0, canvas.width, canvas.height); // drawing over an example starts afresh
      drawing = true; given = null;
      forget();
      canvas.setPointerCapture(e.pointerId);
      var p = at(e);
      strokes.push([p]);
      ctx.lineWidth = 16; ctx.lineCap = ctx.lineJoin = "round"; ctx.strokeStyle = "#000";
      ctx.beginPath();
      ctx.moveTo(p[0], p[1]);
      ctx.lineTo(p[0] + 0.1, p[1]);
      ctx.stroke();
    });
    canvas.addEventListener("pointermove", function (e) {
      if (!drawing) return;
      var p = at(e);
      strokes[strokes.length - 1].push(p);
      ctx.lineTo(p[0], p[1]);
      ctx.stroke();
    });
    ["pointerup", "pointercancel"].forEach(function (t) { canvas.addEventListener(t, function () { drawing = false; }); });
    form.querySelectorAll('button[name="example"]').forEach(function (b) {
      b.addEventListener("click", function () { setGrid(reference[Number(b.value)].grid); });
    });
    form.elements.clear.addEventListener("click", function () {
      given = null; strokes = []; ctx.clearRect(0, 0, canvas.width, canvas.height);
      forget();
    });

    function redraw() {
      if (!last) return;
      var layer = Number(form.elements.layer.value), head = form.elements.head.value;
      var d = last.cls.dims, H = d[2], N = d[3], data = last.cls.data, weights = [];
      for (var i = 0; i < N; i++) {
        var sum = 0, heads = head === "mean" ? H : 1;
        for (var h = 0; h < heads; h++) sum += data[(layer * H + (head === "mean" ? h : Number(head))) * N + i];
        weights.push(sum / heads);
      }
      var which = head === "mean" ? "mean of the heads" : "head " + (Number(head) + 1);
      drawDigitAttention(box, last.grid, weights, patch, "The digit as the model reads it (8x8), and [CLS]'s attention " +
        "over its patches, layer " + (layer + 1) + ", " + which + ": the darker the orange, the more weight.");
      block.txLive = { grid: last.grid, class: last.cls_id, logits: last.logits, top: last.top, strokes: last.strokes,
                       layer: layer, head: head, attention: weights, ms: last.ms };
    }

    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      var grid = given || (strokes.length ? digitGrid(strokeBitmap(strokes)) : null);
      if (!grid) { status.textContent = "Draw a digit first, or load an example."; return; }
      block.setAttribute("data-live-state", "busy");
      status.textContent = loadingNote(block.getAttribute("data-model"));
      try {
        var loaded = await timedLoad(loadOne, block.getAttribute("data-model")), model = loaded.model;
        var start = performance.now();
        var pixels = Float32Array.from([].concat.apply([], grid), function (v) { return v / 16; });
        var out = await model.session.run({ images: new model.ort.Tensor("float32", pixels, [1, 1, 8, 8]) });
        var ms = performance.now() - start, logits = Array.from(out.logits.data), k = argmax(logits);
        output.textContent = String(k);
        output.parentNode.hidden = false;
        var top = showDigitRead(read, grid, logits);
        last = { grid: grid, cls_id: k, logits: logits, top: top, strokes: given ? null : strokes.map(function (s) { return s.slice(); }),
                 cls: out.cls_attn, ms: ms };
        status.textContent = loaded.note + "Classified in your browser in " + ms.toFixed(0) + " ms.";
        redraw();
        block.setAttribute("data-live-state", "done");
      } catch (err) {
        status.textContent = "The model failed: " + err.message;
        block.setAttribute("data-live-state", "error");
      }
    });
    form.elements.layer.addEventListener("change", redraw);
    form.elements.head.addEventListener("change", redraw);
  }

  function start() {
    document.querySelectorAll('[data-live-model="translate"]').forEach(setUp);
    document.querySelectorAll('[data-live-model="generate"]').forEach(setUpGenerate);
    document.querySelectorAll('[data-live-model="classify"]').forEach(setUpClassify);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
