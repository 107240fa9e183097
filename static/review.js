// Review queues (interruptions, failures): j/k move through the list, the
// digit (or c, "confirm") on a label button presses it, and
// errors from the htmx endpoints (403, 400) are shown instead of silently
// dropped. The false-kill chart is drawn by static/charts.js.
(function () {
  let advanceAfterLabel = false;
  let moveAfterMore = false; // j pressed on the last loaded row

  function rows() { return Array.from(document.querySelectorAll("#review-rows .review-row")); }
  function selectedRow() { return document.querySelector("#review-rows .review-row.selected"); }

  // The selection is kept by key: an out-of-band swap replaces a row element.
  let selectedKey = new URL(location.href).searchParams.get("item");
  function markSelected() {
    rows().forEach((r) => r.classList.toggle("selected", r.dataset.item === selectedKey));
  }

  function open(row) {
    if (!row) return;
    selectedKey = row.dataset.item;
    markSelected();
    row.scrollIntoView({block: "nearest"});
    const pane = document.getElementById("review-pane");
    if (!pane) return;
    htmx.ajax("GET", row.dataset.href, {target: "#review-pane", swap: "innerHTML"});
    const url = new URL(location.href);
    url.searchParams.set("item", row.dataset.item);
    history.replaceState(history.state, "", url);
  }

  function move(delta) {
    const all = rows();
    if (!all.length) return;
    const current = selectedRow();
    let i = current ? all.indexOf(current) + delta : 0;
    if (i >= all.length) {
      // At the end of the loaded page: fetch the next one, then move on.
      const more = document.querySelector("#review-rows tr.more a");
      if (more) { moveAfterMore = true; more.click(); return; }
      i = all.length - 1;
    }
    open(all[Math.max(0, i)]);
  }

  document.addEventListener("click", (event) => {
    const row = event.target.closest("#review-rows .review-row");
    if (!row || event.metaKey || event.ctrlKey || event.shiftKey) return;
    event.preventDefault();
    open(row);
  });

  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const t = event.target;
    if (t.closest && t.closest("input, textarea, select, [contenteditable]")) {
      if (event.key === "Escape") t.blur();
      return;
    }
    if (event.key === "j") { event.preventDefault(); move(+1); }
    else if (event.key === "k") { event.preventDefault(); move(-1); }
    else if (/^[1-9c]$/.test(event.key)) {
      const button = document.querySelector(`#label-panel button[data-label-key="${event.key}"]`);
      if (button) { event.preventDefault(); advanceAfterLabel = !!selectedRow(); button.click(); }
    }
  });


  // htmx does not swap 4xx/5xx responses: show their message instead.
  document.addEventListener("htmx:responseError", (event) => {
    advanceAfterLabel = false;
    const flash = document.getElementById("review-flash");
    if (!flash) return;
    const xhr = event.detail.xhr;
    const text = (xhr.getResponseHeader("Content-Type") || "").startsWith("text/plain")
      ? xhr.responseText : `${xhr.status} ${xhr.statusText}`;
    flash.innerHTML = "";
    const p = document.createElement("p");
    p.className = "errors";
    const notAllowed = document.body.dataset.msgNotAllowed || "Not allowed:"; // base.html, the page's language
    p.textContent = xhr.status === 403 ? `${notAllowed} ${text}` : text; // text, never HTML
    flash.appendChild(p);
    setTimeout(() => { if (flash.contains(p)) p.remove(); }, 6000);
  });

  document.addEventListener("htmx:afterSettle", (event) => {
    markSelected();
    const target = event.detail.target;
    if (advanceAfterLabel && target && target.id === "label-panel") {
      advanceAfterLabel = false; // labelled by keyboard: on to the next item
      move(+1);
      return;
    }
    if (moveAfterMore && selectedRow()) {
      moveAfterMore = false; // the next page arrived: carry on down the list
      move(+1);
    }
  });

  document.addEventListener("DOMContentLoaded", markSelected);
})();
