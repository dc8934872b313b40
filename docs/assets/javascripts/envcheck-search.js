/* envcheck site search: Material's search worker protocol, envcheck's ranking.
 *
 * Loaded twice: as Material's search worker (mkdocs_hooks.py points the theme's "search" config at
 * this file) and as a page script (the home page's paste box uses extractQuery). In a page it only
 * defines window.envcheckSearch.
 *
 * Index: Material's search_index.json. Its Chinese text is already segmented by jieba (zero-width
 * spaces between words, done by the search plugin at build time); config.envcheck (written by
 * mkdocs_hooks.on_post_build from envcheck/kb/site_search.py) adds the synonym groups and, per kb
 * entry page, its declared codes and its diagnose patterns.
 *
 * Ranking: per query term, the best of its exact word, its synonyms (0.7) and, for a word being
 * typed, its prefix completions (0.5), weighted by idf and by field (title 8, tags 4, text 1);
 * pages that match every term rank above partial matches. A code the query names (EI0006,
 * ERR02200, 507048, EC201) ranks the entry that declares it first; an error line pasted whole that
 * an entry's pattern matches ranks that entry first. A long paste is reduced to its codes, library
 * names and distinctive words first (extractQuery), which keeps the query fast.
 */
(function (root) {
  "use strict";

  var STOP = new Set(("a an and are as at be by can for from how in into is it its not of on or that the " +
    "this to was were when with no such so lt gt amp quot nbsp you your do does did has have had but " +
    "if then than there which who what will would should could may might must all any one two").split(" "));
  var CODE_RE = /^(e[a-z0-9][0-9]{4}|err[0-9]{5}|ec[0-9]{3}|[1-5][0-9]{5})$/;
  var HAN_RE = /[\u3400-\u9fff\uf900-\ufaff]/;
  var HAN_RUN_RE = /[\u3400-\u9fff\uf900-\ufaff]+/g;
  var WORD_RE = /[a-z0-9][a-z0-9_.]*[a-z0-9]|[a-z0-9]/g;
  var FIELDS = { title: 8, tags: 4, text: 1, codes: 10 };
  var SYN_WEIGHT = 0.7, PREFIX_WEIGHT = 0.5, BIGRAM_WEIGHT = 0.5, CODE_BOOST = 1000, PATTERN_BOOST = 2000;
  var MAX_PATTERN_INPUT = 20000;

  function decode(html) {
    return html.replace(/<[^>]*>/g, " ").replace(/&lt;/g, "<").replace(/&gt;/g, ">")
      .replace(/&quot;/g, "\"").replace(/&#39;/g, "'").replace(/&amp;/g, "&");
  }

  /* ASCII words of lower-cased text: "libhccl.so" -> libhccl.so, libhccl; "torch_npu" -> torch_npu, torch, npu */
  function asciiWords(low, emit) {
    var m, w, parts, i;
    WORD_RE.lastIndex = 0;
    while ((m = WORD_RE.exec(low)) !== null) {
      w = m[0];
      if (!STOP.has(w)) emit(w, 1);
      if (/[_.]/.test(w)) {
        parts = w.split(/[_.]+/);
        for (i = 0; i < parts.length; i++)
          if (parts[i] && !STOP.has(parts[i]) && (parts[i].length > 1 || !/^[0-9]$/.test(parts[i])))
            emit(parts[i], 1);
      }
    }
  }

  /* Index tokens of one field: ASCII words, jieba's Chinese words, and bigrams of long Chinese words */
  function indexTokens(text, emit) {
    var low = decode(text).toLowerCase();
    asciiWords(low, emit);
    var runs = low.match(HAN_RUN_RE) || [];   /* \u200b (jieba's cut) is not Han: runs are words */
    for (var r = 0; r < runs.length; r++) {
      var w = runs[r];
      emit(w, 1, true);
      if (w.length >= 3)
        for (var i = 0; i + 2 <= w.length; i++) emit(w.slice(i, i + 2), BIGRAM_WEIGHT);
    }
  }

  /* Reduce a pasted error (one line or a traceback) to its codes, library / module names and words. */
  function extractQuery(text) {
    var s = String(text || "").slice(0, MAX_PATTERN_INPUT);
    var codes = [], keys = [], words = [], seen = new Set(), m, re;
    function add(list, v) { var k = v.toLowerCase(); if (!seen.has(k)) { seen.add(k); list.push(v); } }
    re = /\b(E[A-Z0-9][0-9]{4}|ERR[0-9]{5}|EC[0-9]{3})\b/g;
    while ((m = re.exec(s)) !== null) add(codes, m[1]);
    re = /(?:error code|err(?:or)?_?code|ret(?:code)?|errno|error)\s*(?:is|=|:)?\s*\[?([1-5][0-9]{5})\b/gi;
    while ((m = re.exec(s)) !== null) add(codes, m[1]);
    re = /\b(lib[A-Za-z0-9_+-]*(?:\.[A-Za-z0-9_+-]+)*?\.so)(?:\.[0-9]+)*\b/g;
    while ((m = re.exec(s)) !== null) add(keys, m[1]);
    re = /No module named ['"]?([A-Za-z0-9_.]+)/g;
    while ((m = re.exec(s)) !== null) add(keys, m[1]);
    re = /\b([A-Z][A-Za-z]*(?:Error|Exception))\b/g;
    while ((m = re.exec(s)) !== null) add(keys, m[1]);
    /* Python traceback frames and the code they quote say where, not what: keep the message lines,
       and take words from the lines that name an error first */
    var lines = s.split(/\r?\n/), kept = [], frame = false;
    for (var li = 0; li < lines.length; li++) {
      var ln = lines[li];
      if (/^\s*Traceback \(most recent call last\)/.test(ln)) { frame = false; continue; }
      if (/^\s*File ".*", line [0-9]+/.test(ln)) { frame = true; continue; }
      if (frame && /^\s{4,}\S/.test(ln)) { frame = false; continue; }
      frame = false;
      kept.push(ln);
    }
    var errorish = kept.filter(function (ln) { return /error|fail|exception|cannot|not found|timeout|timed out|错误|失败|超时/i.test(ln); });
    var rest = (errorish.length ? errorish.concat(kept.filter(function (ln) { return errorish.indexOf(ln) < 0; })) : kept).join("\n")
      .replace(/\b[0-9]{4}-[0-9]{2}-[0-9]{2}[-T ][0-9:.]+/g, " ")          /* timestamps */
      .replace(/\[(?:FUNC|FILE|LINE|PID|TID)\s*:[^\]]*\]/gi, " ")         /* CANN's [FUNC:x][FILE:y] */
      .replace(/(?:\/[A-Za-z0-9_.+-]+){2,}\/?/g, " ")                      /* paths */
      .replace(/\b0x[0-9a-f]+\b/gi, " ");
    var low = rest.toLowerCase();
    WORD_RE.lastIndex = 0;
    while ((m = WORD_RE.exec(low)) !== null && words.length < 10) {
      var w = m[0];
      if (w.length < 3 || STOP.has(w) || /^[0-9._]+$/.test(w) || seen.has(w)) continue;
      if (codes.some(function (c) { return c.toLowerCase() === w; })) continue;
      if (keys.some(function (k) { return k.toLowerCase().indexOf(w) === 0; })) continue;
      add(words, w);
    }
    var han = rest.match(HAN_RUN_RE) || [];
    for (var i = 0; i < han.length && words.length < 16; i++) add(words, han[i]);
    return { codes: codes, keys: keys, words: words, query: codes.concat(keys, words).join(" ") };
  }

  function looksPasted(q) {
    return q.length > 80 || /\n/.test(q) || (q.length > 30 && /(Error|error|ERROR|Exception|failed|Traceback)[:\]]/.test(q));
  }

  /* ------------------------------------------------------------------ the engine */

  function Engine(index) {
    var config = index.config || {}, ext = config.envcheck || {}, self = this;
    this.docs = index.docs || [];
    this.synonyms = new Map();                         /* word -> group key */
    (ext.synonyms || []).forEach(function (g, i) {
      g.forEach(function (w) { self.synonyms.set(String(w).toLowerCase(), "~g" + i); });
    });
    this.groups = (ext.synonyms || []).map(function (g) { return g.map(function (w) { return String(w).toLowerCase(); }); });
    this.entries = new Map();                          /* doc index -> {codes, patterns} */
    this.postings = new Map();                         /* token -> [[doc, weight], ...] */
    this.words = new Set();                            /* whole Chinese words (segmentation vocabulary) */
    this.articles = new Map();                         /* location without # -> doc index */
    var entries = ext.entries || {};
    for (var d = 0; d < this.docs.length; d++) {
      var doc = this.docs[d], loc = doc.location, weights = new Map();
      var path = loc.split("#")[0];
      if (loc === path) this.articles.set(path, d);
      var emitFor = function (boost) {
        return function (tok, w, whole) {
          if (whole) self.words.add(tok);
          var add = boost * w;
          weights.set(tok, (weights.get(tok) || 0) + add);
          var g = self.synonyms.get(tok);
          if (g) weights.set(g, (weights.get(g) || 0) + add);
        };
      };
      indexTokens(doc.title || "", emitFor(FIELDS.title));
      indexTokens((doc.tags || []).join(" "), emitFor(FIELDS.tags));
      indexTokens(doc.text || "", emitFor(FIELDS.text));
      var meta = loc === path ? entries[loc] : undefined;
      if (meta) {
        var em = emitFor(FIELDS.codes);
        meta.codes.forEach(function (c) { em(c.toLowerCase(), 1); });
        var pats = [];
        (meta.patterns || []).forEach(function (p) { try { pats.push(new RegExp(p)); } catch (e) { /* not JS syntax */ } });
        this.entries.set(d, { codes: new Set(meta.codes.map(function (c) { return c.toLowerCase(); })), patterns: pats });
      }
      weights.forEach(function (w, tok) {
        var list = self.postings.get(tok);
        if (!list) self.postings.set(tok, list = []);
        list.push([d, w / (w + 2) * 3]);               /* saturate: a word said 50 times is not 50x as relevant */
      });
    }
    this.vocab = Array.from(this.postings.keys()).filter(function (t) { return t.charAt(0) !== "~"; }).sort();
  }

  Engine.prototype.idf = function (tok) {
    var list = this.postings.get(tok);
    return list ? Math.log(1 + this.docs.length / list.length) : 0;
  };

  Engine.prototype.prefixed = function (tok, limit) {
    var lo = 0, hi = this.vocab.length, out = [];
    while (lo < hi) { var mid = (lo + hi) >> 1; if (this.vocab[mid] < tok) lo = mid + 1; else hi = mid; }
    for (var i = lo; i < this.vocab.length && out.length < limit && this.vocab[i].indexOf(tok) === 0; i++)
      if (this.vocab[i] !== tok) out.push(this.vocab[i]);
    return out;
  };

  /* Greedy longest-match segmentation of a Chinese run over the index's words (maxLen caps a word). */
  Engine.prototype.segment = function (run, maxLen) {
    var out = [], i = 0;
    while (i < run.length) {
      var j = Math.min(run.length, i + maxLen);
      for (; j > i + 1; j--) if (this.words.has(run.slice(i, j))) break;
      if (j === i + 1 && i + 2 <= run.length && this.postings.has(run.slice(i, i + 2))) j = i + 2;
      out.push(run.slice(i, j));
      i = j;
    }
    return out;
  };

  /* Query terms: [{label, alts: [[token, weight]], bonus}] */
  Engine.prototype.terms = function (query, pasted) {
    var self = this, terms = [], labels = new Set();
    function term(label, tok, bonus) {
      if (labels.has(label + (bonus ? "+" : ""))) return;
      labels.add(label + (bonus ? "+" : ""));
      var alts = [[tok, 1]];
      var g = self.synonyms.get(tok);
      if (g) alts.push([g, SYN_WEIGHT]);
      terms.push({ label: label, alts: alts, bonus: !!bonus });
    }
    var low = query.toLowerCase();
    asciiWords(low, function (w) { term(w, w); });
    var runs = low.match(HAN_RUN_RE) || [];
    runs.forEach(function (run) {
      self.segment(run, 8).forEach(function (w) {
        if (w.length >= 3) {
          var fine = self.segment(w, w.length - 1);
          if (fine.every(function (f) { return f.length >= 2 && self.postings.has(f); })) {
            fine.forEach(function (f) { term(f, f); });
            term(w, w, true);
            return;
          }
        }
        term(w, w);
      });
    });
    /* a word still being typed (no exact match, or the last word of a short query): its completions */
    terms.forEach(function (t, i) {
      var tok = t.alts[0][0];
      if (HAN_RE.test(tok) || pasted || tok.length < 2) return;
      if (self.postings.has(tok) && !(i === terms.length - 1 && /[a-z0-9]$/.test(low))) return;
      self.prefixed(tok, 8).forEach(function (p) { t.alts.push([p, PREFIX_WEIGHT]); });
    });
    return terms;
  };

  Engine.prototype.search = function (raw) {
    var query = String(raw || "").trim();
    if (!query) return { items: [] };
    var pasted = looksPasted(query), extracted = null, q = query;
    if (pasted) { extracted = extractQuery(query); q = extracted.query || query.slice(0, 200); }
    var terms = this.terms(q, pasted), self = this;
    var scores = new Map(), matched = new Map(), hits = new Map();
    var counted = terms.filter(function (t) { return !t.bonus; }).length || 1;
    terms.forEach(function (t, ti) {
      var best = new Map();                            /* doc -> [score, token] */
      t.alts.forEach(function (alt) {
        var list = self.postings.get(alt[0]);
        if (!list) return;
        var idf = self.idf(alt[0]);
        for (var k = 0; k < list.length; k++) {
          var s = alt[1] * idf * list[k][1], cur = best.get(list[k][0]);
          if (!cur || s > cur[0]) best.set(list[k][0], [s, alt[0]]);
        }
      });
      best.forEach(function (v, d) {
        scores.set(d, (scores.get(d) || 0) + v[0] * (t.bonus ? 0.5 : 1));
        if (!hits.has(d)) hits.set(d, new Set());
        hits.get(d).add(v[1]);
        if (!t.bonus) {
          if (!matched.has(d)) matched.set(d, new Set());
          matched.get(d).add(ti);
        }
      });
    });
    scores.forEach(function (s, d) {
      var frac = (matched.has(d) ? matched.get(d).size : 0) / counted;
      scores.set(d, s * (0.3 + 0.7 * frac));
    });
    /* codes the entry declares; patterns that match a pasted line */
    var codes = terms.map(function (t) { return t.alts[0][0]; }).filter(function (t) { return CODE_RE.test(t); });
    var text = pasted ? query.slice(0, MAX_PATTERN_INPUT) : "";
    this.entries.forEach(function (meta, d) {
      var boost = 0;
      codes.forEach(function (c) { if (meta.codes.has(c)) boost += CODE_BOOST; });
      if (text) for (var p = 0; p < meta.patterns.length; p++)
        if (meta.patterns[p].test(text)) { boost += PATTERN_BOOST; break; }
      if (boost) scores.set(d, (scores.get(d) || 0) + boost);
    });
    var labelsMatched = {};
    terms.forEach(function (t, ti) {
      if (t.bonus) return;
      var any = false;
      matched.forEach(function (set) { if (set.has(ti)) any = true; });
      labelsMatched[t.label] = any;
    });
    return { items: this.group(scores, hits, labelsMatched), extracted: extracted };
  };

  Engine.prototype.group = function (scores, hits, terms) {
    var self = this, ranked = [];
    scores.forEach(function (s, d) { if (s > 0) ranked.push([d, s]); });
    ranked.sort(function (a, b) { return b[1] - a[1] || (self.docs[a[0]].location < self.docs[b[0]].location ? -1 : 1); });
    var groups = new Map();
    ranked.forEach(function (r) {
      var doc = self.docs[r[0]], path = doc.location.split("#")[0];
      if (!groups.has(path)) { if (groups.size >= 50) return; groups.set(path, []); }
      groups.get(path).push(self.item(r[0], r[1], hits.get(r[0]), terms));
    });
    var out = [];
    groups.forEach(function (items, path) {
      if (!items.some(function (it) { return it.location === path; })) {
        var a = self.articles.get(path);
        if (a !== undefined) items.push(self.item(a, 0, null, {}));
      }
      out.push(items);
    });
    return out;
  };

  Engine.prototype.item = function (d, score, hit, terms) {
    var doc = this.docs[d], marks = [], self = this;
    if (hit) hit.forEach(function (tok) {
      if (tok.charAt(0) === "~") { var g = self.groups[+tok.slice(2)]; if (g) marks.push.apply(marks, g); }
      else marks.push(tok);
    });
    var re = highlighter(marks);
    var out = { location: doc.location, title: mark(doc.title || "", re), text: mark(doc.text || "", re),
                score: score, terms: terms };
    if (doc.tags) out.tags = doc.tags.slice();
    return out;
  };

  function escapeRe(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

  function highlighter(tokens) {
    var ascii = [], han = [];
    tokens.forEach(function (t) { if (t && t.length > 1 || HAN_RE.test(t)) (HAN_RE.test(t) ? han : ascii).push(escapeRe(t)); });
    if (!ascii.length && !han.length) return null;
    ascii.sort(function (a, b) { return b.length - a.length; });
    var parts = [];
    if (ascii.length) parts.push("(?<![A-Za-z0-9_])(?:" + ascii.join("|") + ")(?![A-Za-z0-9_])");
    if (han.length) parts.push("(?:" + han.join("|") + ")");
    return new RegExp(parts.join("|"), "gi");
  }

  function mark(html, re) {
    if (!re) return html;
    return html.replace(/(<[^>]*>)|(&[#a-z0-9]+;)|([^<&]+)/gi, function (m, tag, ent, txt) {
      return txt ? txt.replace(re, "<mark data-md-highlight>$&</mark>") : m;
    });
  }

  var api = { Engine: Engine, extractQuery: extractQuery, looksPasted: looksPasted };
  root.envcheckSearch = api;

  /* ------------------------------------------------------------------ Material's worker protocol */
  var isWorker = typeof document === "undefined" ||
    (typeof parent !== "undefined" && parent !== root && "IFrameWorker" in parent);
  if (isWorker) {
    var engine = null;
    root.addEventListener("message", function (ev) {
      var msg = ev.data || {};
      if (msg.type === 0) {                            /* SETUP */
        engine = new Engine(msg.data);
        root.postMessage({ type: 1 });                 /* READY */
      } else if (msg.type === 2) {                     /* QUERY */
        var result;
        try { result = engine ? engine.search(msg.data) : { items: [] }; }
        catch (e) { console.warn("envcheck search:", e); result = { items: [] }; }
        root.postMessage({ type: 3, data: { items: result.items } });   /* RESULT */
      }
    });
  }
})(typeof self !== "undefined" ? self : this);
