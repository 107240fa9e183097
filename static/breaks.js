// Verdicts on a run's shown break (runs/breaks), as in the review queue: the
// digit on a verdict button presses it (not while typing a note; Esc leaves
// the note), and the message of a refused label (400, 403) is shown instead
// of silently dropped.
(function () {
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const t = event.target;
    if (t.closest && t.closest("input, textarea, select, [contenteditable]")) {
      if (event.key === "Escape") t.blur();
      return;
    }
    if (!/^[1-9]$/.test(event.key)) return;
    const button = document.querySelector(`#break-panel button[data-break-key="${event.key}"]`);
    if (button) { event.preventDefault(); button.click(); }
  });

  document.addEventListener("htmx:responseError", (event) => {
    const flash = document.getElementById("break-flash") || document.getElementById("breaks-flash");
    if (!flash) return;
    const xhr = event.detail.xhr;
    const text = (xhr.getResponseHeader("Content-Type") || "").startsWith("text/plain")
      ? xhr.responseText : `${xhr.status} ${xhr.statusText}`;
    flash.textContent = "";
    const p = document.createElement("p");
    p.className = "errors";
    const notAllowed = document.body.dataset.msgNotAllowed || "Not allowed:"; // base.html, the page's language
    p.textContent = xhr.status === 403 ? `${notAllowed} ${text}` : text; // text, never HTML
    flash.appendChild(p);
  });
})();
