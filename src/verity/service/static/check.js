// Live progress of one check on its page: the API's event stream, then the verdict.
//
// The page is complete without this script (it lists the events stored so far and, once
// the check has ended, the verdict). Here, while the check runs, each event of
// GET /v1/checks/{id}/events is added to the list as it arrives; the stream's `end` event
// fetches the server-rendered verdict part and puts it in place. Event texts come from
// claims, pages and models: they are only ever set as textContent, never as HTML.
(function () {
  "use strict";
  var page = document.getElementById("check");
  if (!page || page.dataset.final === "true" || !window.EventSource) return;
  var list = document.getElementById("progress");
  var status = document.getElementById("status");
  var waiting = document.getElementById("waiting");
  var shown = Number(page.dataset.lastSeq || 0);
  var KINDS = ["check.start", "check.end", "call.start", "call.end", "retrieval", "milestone"];

  function add(event) {
    var seq = Number(event.lastEventId);
    // The stream replays from the first event; the page already lists some of them.
    if (seq && seq <= shown) return;
    var data;
    try { data = JSON.parse(event.data); } catch (e) { return; }
    shown = seq || shown;
    var item = document.createElement("li");
    item.className = "event kind-" + event.type.replace(".", "-");
    item.dataset.seq = String(seq);
    var at = document.createElement("span");
    at.className = "at";
    at.textContent = typeof data.at === "number" ? data.at.toFixed(1) + " s" : "";
    item.appendChild(at);
    item.appendChild(document.createTextNode(" " + String(data.message || event.type)));
    list.appendChild(item);
    if (status.textContent === "queued") setStatus("running");
    // Other scripts of the page (document.js) follow the same events without a stream
    // of their own: the parsed event is handed on as data, never as markup.
    page.dispatchEvent(new CustomEvent("verity:event", { detail: { kind: event.type, data: data } }));
  }

  function setStatus(name) {
    status.textContent = name;
    status.className = "status status-" + name.replace(/[^a-z]/g, "");
  }

  function finish(event) {
    stream.close();
    var info = {};
    try { info = JSON.parse(event.data); } catch (e) { /* the result part says it all */ }
    if (info.status) setStatus(String(info.status));
    waiting.hidden = true;
    fetch(page.dataset.result, { headers: { Accept: "text/html" } })
      .then(function (answer) { return answer.ok ? answer.text() : Promise.reject(answer.status); })
      .then(function (html) {
        // Our own server's rendering (every text in it escaped), not a text from outside.
        document.getElementById("result").innerHTML = html;
        page.dispatchEvent(new CustomEvent("verity:result"));
      })
      .catch(function () { window.location.reload(); });
  }

  var stream = new EventSource(page.dataset.events);
  KINDS.forEach(function (kind) { stream.addEventListener(kind, add); });
  stream.addEventListener("end", finish);
})();
