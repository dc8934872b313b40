/* envcheck site: the home page's "paste your error" box and the matrix page's filter.
 * No instant navigation on this site, so each page runs this once on load. */
(function () {
  "use strict";

  /* ---------------------------------------------------------------- paste box -> site search */
  function runSiteSearch(query) {
    var toggle = document.getElementById("__search");
    var input = document.querySelector("input.md-search__input");
    if (!toggle || !input) return false;
    if (!toggle.checked) {
      toggle.checked = true;
      toggle.dispatchEvent(new Event("change"));
    }
    input.value = query;
    input.focus();
    input.dispatchEvent(new KeyboardEvent("keyup", { bubbles: true }));
    return true;
  }

  function setupPaste() {
    var box = document.getElementById("envcheck-paste-input");
    var go = document.getElementById("envcheck-paste-go");
    var shown = document.getElementById("envcheck-paste-query");
    if (!box || !go || !window.envcheckSearch) return;
    function submit() {
      var text = box.value.trim();
      if (!text) { box.focus(); return; }
      var q = window.envcheckSearch.extractQuery(text);
      var query = window.envcheckSearch.looksPasted(text) ? (q.query || text) : text;
      if (shown) shown.textContent = "Searching for 搜索: " + query;
      runSiteSearch(query);
    }
    go.addEventListener("click", submit);
    box.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); submit(); }
    });
    box.addEventListener("paste", function () { setTimeout(submit, 0); });
  }

  /* ---------------------------------------------------------------- matrix filter */
  function setupMatrix() {
    var form = document.getElementById("envcheck-matrix-filter");
    var table = document.getElementById("envcheck-matrix");
    if (!form || !table) return;
    var selects = Array.prototype.slice.call(form.querySelectorAll("select[data-key]"));
    var rows = Array.prototype.slice.call(table.querySelectorAll("tbody tr[data-cann]"));
    var count = document.getElementById("envcheck-matrix-count");
    function apply() {
      var want = selects.map(function (s) { return [s.getAttribute("data-key"), s.value]; })
        .filter(function (kv) { return kv[1] !== ""; });
      var shown = 0;
      rows.forEach(function (tr) {
        var ok = want.every(function (kv) {
          return (" " + (tr.getAttribute("data-" + kv[0]) || "") + " ").indexOf(" " + kv[1] + " ") >= 0;
        });
        tr.hidden = !ok;
        if (ok) shown++;
      });
      if (count) count.textContent = shown + " / " + rows.length;
      table.classList.toggle("envcheck-empty", shown === 0);
    }
    selects.forEach(function (s) { s.addEventListener("change", apply); });
    var reset = document.getElementById("envcheck-matrix-reset");
    if (reset) reset.addEventListener("click", function () { selects.forEach(function (s) { s.value = ""; }); apply(); });
    apply();
  }

  function ready(fn) {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fn);
    else fn();
  }
  ready(function () { setupPaste(); setupMatrix(); });
})();
