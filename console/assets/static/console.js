// toolgate console: keeps the approvals queue live (server-sent events).
// Everything works without it; it only saves reloading the page.
"use strict";
(function () {
  const queue = document.getElementById("queue");
  if (!queue || !window.EventSource) return;
  let busy = false, again = false;
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const res = await fetch("/ui/queue", { credentials: "same-origin", headers: { "Accept": "text/html" } });
      if (res.ok) merge(await res.text());
    } catch (e) { /* the stream reconnects; the next event refreshes */ }
    busy = false;
    if (again) { again = false; refresh(); }
  }
  // merge swaps in the new queue but keeps the items still waiting as they
  // are, so that a message being typed or a focused button survives.
  function merge(html) {
    const next = document.createElement("div");
    next.innerHTML = html;
    const old = new Map();
    queue.querySelectorAll("#pending > li[data-id]").forEach((li) => old.set(li.dataset.id, li));
    const list = next.querySelector("#pending");
    if (list) {
      Array.from(list.children).forEach((li) => {
        const keep = li.dataset.id && old.get(li.dataset.id);
        if (keep) list.replaceChild(keep, li);
      });
    }
    const focused = document.activeElement;
    queue.replaceChildren(...next.childNodes);
    if (focused && queue.contains(focused)) focused.focus();
    const n = queue.querySelectorAll("#pending > li[data-id]").length;
    document.title = (n ? "(" + n + ") " : "") + "Approvals · toolgate console";
  }
  const es = new EventSource("/ui/events");
  es.addEventListener("queue", refresh);
  es.addEventListener("open", () => { document.body.dataset.live = "on"; });
})();
// The sign-in page's link to an upstream's authorization server is followed
// at once (a form's redirect to another origin would break form-action).
(function () {
  const go = document.querySelector("a#continue[data-go]");
  if (go) location.assign(go.href);
})();
