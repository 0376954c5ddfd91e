"""The report page's own style and scripts, inline (the page loads nothing).

ERRORS_JS runs first and records every script error, console.error call, refused request
(Content-Security-Policy) and alert into #js-errors, so a headless browser's dump of the page
shows whether anything went wrong. PAGE_JS builds the filters from each facets block (JSON
data, never markup), and opens a cell named by the URL fragment `#cell=<cell id>`.
"""

from __future__ import annotations

PAGE_CSS = """
:root { --fg: #1d232b; --muted: #5b6570; --line: #d5dbe1; --band: #f4f6f8; --accent: #1f5fa8; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1240px; padding: 12px 20px 40px; color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header h1 { font-size: 20px; margin: 4px 0; }
header p { margin: 0 0 4px; color: var(--muted); font-size: 12px; }
nav { font-size: 12px; margin-bottom: 8px; }
nav a, .permalink { color: var(--accent); text-decoration: none; }
details.section { border-top: 1px solid var(--line); padding: 2px 0 6px; }
details.section > summary { cursor: pointer; list-style-position: outside; }
details.section > summary h2 { display: inline; font-size: 16px; margin: 0; }
.body { padding: 4px 0 0 2px; }
.body p, .body ul, .body ol { margin: 4px 0 8px; }
.body li { margin: 2px 0; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: var(--band); position: sticky; top: 0; }
tbody tr:nth-child(even) { background: #fafbfc; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
#headline table { font-size: 12.5px; }
#headline th, #headline td { padding: 2px 6px; }
.scroll { max-height: 460px; overflow: auto; border: 1px solid var(--line); display: inline-block;
  max-width: 100%; }
.scroll table { margin: 0; }
code { background: var(--band); padding: 0 3px; border-radius: 3px; font-size: 12.5px; }
pre { background: var(--band); padding: 6px 8px; overflow: auto; max-height: 420px;
  white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12.5px; margin: 4px 0; }
figure { margin: 8px 0 14px; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 12px; }
.filters { display: flex; flex-wrap: wrap; gap: 6px 14px; align-items: center; margin: 6px 0;
  font-size: 12px; }
.filters select, .filters input { font-size: 12px; }
.count { color: var(--muted); }
details.cell { border: 1px solid var(--line); border-radius: 4px; margin: 4px 0; padding: 2px 8px; }
details.cell[open] { background: #fdfdfe; }
details.cell.target { outline: 2px solid var(--accent); }
details.cell > summary { cursor: pointer; }
.turn { border-left: 3px solid var(--line); margin: 8px 0; padding: 2px 0 2px 10px; }
.turn h4 { margin: 4px 0; font-size: 13px; }
.label { color: var(--muted); font-size: 12px; margin: 6px 0 0; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 12px;
  background: var(--band); }
.pass, .first_attempt_green, .green_after_k { background: #dcf3e0; }
.fail, .exhausted, .no_artefact { background: #fbe3e3; }
.api_failure, .checker_error, .budget_stopped, .not_checked { background: #fff1cc; }
.note { color: var(--muted); }
#js-errors { border: 2px solid #b00020; padding: 4px 8px; color: #b00020; }
footer { margin-top: 18px; color: var(--muted); font-size: 12px; }
"""

ERRORS_JS = """
(function () {
  "use strict";
  var box = document.getElementById("js-errors");
  box.setAttribute("data-watching", "yes");  // a test reads this: the recorder itself ran
  function note(text) {
    var line = document.createElement("pre");
    line.textContent = String(text);
    box.appendChild(line);
    box.hidden = false;
  }
  window.addEventListener("error", function (e) {
    var what = e.message || ((e.target && e.target.tagName) || "a resource") + " failed to load";
    note("error: " + what);
  }, true);
  window.addEventListener("unhandledrejection", function (e) { note("rejected: " + e.reason); });
  document.addEventListener("securitypolicyviolation", function (e) {
    note("refused by the page's policy: " + e.violatedDirective + " " + e.blockedURI);
  });
  var original = console.error;
  console.error = function () {
    note("console.error: " + Array.prototype.join.call(arguments, " "));
    return original.apply(console, arguments);
  };
  window.alert = function (message) { note("alert: " + message); };
})();
"""

PAGE_JS = """
(function () {
  "use strict";
  function facetBar(block) {
    var spec = JSON.parse(block.textContent);
    var box = document.getElementById(block.getAttribute("data-for"));
    if (!box) { console.error("facets for a missing element"); return; }
    var items = Array.prototype.slice.call(box.querySelectorAll("[data-i]"));
    var bar = document.createElement("div");
    bar.className = "filters";
    var selects = spec.keys.map(function (key, k) {
      var label = document.createElement("label");
      label.textContent = key + " ";
      var select = document.createElement("select");
      select.add(new Option("all", ""));
      var values = Array.from(new Set(spec.rows.map(function (r) { return String(r[k]); })));
      values.sort().forEach(function (v) { select.add(new Option(v, v)); });
      select.addEventListener("change", apply);
      label.appendChild(select);
      bar.appendChild(label);
      return select;
    });
    var search = document.createElement("input");
    search.type = "search";
    search.placeholder = "search text";
    search.addEventListener("input", apply);
    bar.appendChild(search);
    var count = document.createElement("span");
    count.className = "count";
    bar.appendChild(count);
    box.parentNode.insertBefore(bar, box);
    function apply() {
      var query = search.value.toLowerCase();
      var shown = 0;
      items.forEach(function (item) {
        var row = spec.rows[Number(item.getAttribute("data-i"))] || [];
        var ok = selects.every(function (s, k) { return !s.value || String(row[k]) === s.value; });
        ok = ok && (!query || item.textContent.toLowerCase().indexOf(query) >= 0);
        item.hidden = !ok;
        if (ok) { shown += 1; }
      });
      count.textContent = shown + " of " + items.length + " shown";
    }
    box.mtpsweepReset = function () {
      selects.forEach(function (s) { s.value = ""; });
      search.value = "";
      apply();
    };
    apply();
  }
  function openAncestors(node) {
    for (var p = node.parentElement; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") { p.open = true; }
      if (p.mtpsweepReset) { p.mtpsweepReset(); }
    }
  }
  function openFromHash() {
    var name;
    try { name = decodeURIComponent(location.hash.slice(1)); } catch (e) { return; }
    if (!name) { return; }
    var status = document.getElementById("drill-status");
    var target = document.getElementById(name.indexOf("cell=") === 0 ? "cell-" + name.slice(5) : name);
    if (!target) {
      if (status) { status.textContent = "This report holds no " + name + "."; }
      return;
    }
    if (status) { status.textContent = ""; }
    openAncestors(target);
    if (target.tagName === "DETAILS") { target.open = true; }
    Array.prototype.forEach.call(document.querySelectorAll(".target"), function (t) {
      t.classList.remove("target");
    });
    target.classList.add("target");
    target.scrollIntoView();
  }
  Array.prototype.forEach.call(document.querySelectorAll("script.facets"), facetBar);
  window.addEventListener("hashchange", openFromHash);
  openFromHash();
})();
"""
