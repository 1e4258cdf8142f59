// A document's page: its claims' rows while they are checked, then the marked text.
//
// While the document is checked, check.js hands on each event of the job's stream
// ("verity:event" on #check); a `document.extracted` milestone gives the number of claims
// (a pending row each), a `document.claim` milestone one claim's outcome and the offsets
// of its sentence, which is cut from the document's own text on the page. Once done, the
// server's rendering of the result marks each claim's sentence; choosing a mark (click,
// Enter or Space) opens its claim's card. Every text here (the document, labels, claim
// ids) is set as textContent or an attribute, never parsed as HTML.
(function () {
  "use strict";
  var page = document.getElementById("check");
  if (!page) return;

  function labelClass(label) {
    var slug = String(label).toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");
    return "v-" + (slug || "unknown");
  }

  // Offsets count code points (the server's strings), not the UTF-16 units of JS strings.
  var points = null;
  function sentence(start, end) {
    var source = document.getElementById("doc-source");
    if (!source || typeof start !== "number" || typeof end !== "number") return "";
    if (points === null) points = Array.from(source.textContent);
    return points.slice(start, end).join("");
  }

  function rows() { return document.getElementById("doc-rows"); }

  function counter() {
    var list = rows();
    var counted = document.getElementById("doc-counter");
    if (!list || !counted) return;
    var all = list.children.length;
    var done = list.querySelectorAll("li[data-claim]").length;
    counted.textContent = done + " of " + all + " claims checked";
  }

  function makeRow() {
    var item = document.createElement("li");
    item.className = "doc-row v-pending";
    var label = document.createElement("span");
    label.className = "doc-label";
    label.textContent = "pending";
    var text = document.createElement("span");
    text.className = "doc-sentence";
    item.appendChild(label);
    item.appendChild(document.createTextNode(" "));
    item.appendChild(text);
    return item;
  }

  function extracted(data) {
    var list = rows();
    var total = Number(data.claims);
    if (!list || !(total >= 0)) return;
    while (list.firstChild) list.removeChild(list.firstChild);  // a rerun starts again
    for (var i = 0; i < Math.min(total, 500); i++) list.appendChild(makeRow());
    counter();
  }

  // The claim's row: the one its id's number names (C3: the third), else the first pending.
  function rowFor(id) {
    var list = rows();
    if (!list) return null;
    var items = list.children;
    for (var i = 0; i < items.length; i++) if (items[i].dataset.claim === id) return items[i];
    var digits = /([0-9]+)$/.exec(id);
    var n = digits ? Number(digits[1]) - 1 : -1;
    if (n >= 0 && n < items.length && !items[n].dataset.claim) return items[n];
    for (var j = 0; j < items.length; j++) if (!items[j].dataset.claim) return items[j];
    var added = makeRow();
    list.appendChild(added);
    return added;
  }

  function claimed(data) {
    var id = String(data.claim || "");
    var row = rowFor(id);
    if (!row) return;
    var label = String(data.label || data.status || "pending");
    row.dataset.claim = id;
    row.className = "doc-row " + labelClass(label);
    row.querySelector(".doc-label").textContent = label;
    row.querySelector(".doc-sentence").textContent = sentence(data.start, data.end);
    counter();
  }

  page.addEventListener("verity:event", function (event) {
    var detail = event.detail || {};
    var data = detail.data || {};
    if (detail.kind !== "milestone") return;
    if (data.name === "document.extracted") extracted(data.data || {});
    if (data.name === "document.claim") claimed(data.data || {});
  });

  // -- the result: a mark opens its claim's card ------------------------------------------

  function open(mark) {
    var ids = String(mark.dataset.cards || "").split(" ");
    var first = null;
    ids.forEach(function (id) {
      var card = id ? document.getElementById(id) : null;
      if (!card || !card.classList.contains("claim-card")) return;
      card.open = true;
      if (!first) first = card;
    });
    if (!first) return;
    first.scrollIntoView({ block: "nearest" });
    var summary = first.querySelector("summary");
    if (summary) summary.focus({ preventScroll: true });
  }

  // Delegated: the result part is put in place after the page loaded.
  document.addEventListener("click", function (event) {
    var mark = event.target.closest ? event.target.closest(".claim-span[data-cards], .doc-open") : null;
    if (!mark) return;
    event.preventDefault();
    open(mark);
  });
  document.addEventListener("keydown", function (event) {
    var mark = event.target.closest ? event.target.closest(".claim-span[data-cards]") : null;
    if (!mark || (event.key !== "Enter" && event.key !== " ")) return;
    event.preventDefault();  // Space would scroll the page
    open(mark);
  });
})();
