// Scripts run: what only a page without them needs (the project switcher's button) hides.
document.documentElement.classList.add("js");
// Click a clamped step text to expand it; click again to fold it.
document.addEventListener("click", (event) => {
  const text = event.target.closest(".clamp");
  if (!text || window.getSelection().toString() || event.target.closest("a")) return;
  const open = text.classList.toggle("open");
  const button = text.nextElementSibling;
  if (button && button.matches("button.show-all")) {
    button.setAttribute("aria-expanded", String(open));
    button.textContent = open ? button.dataset.less : button.dataset.more;
  }
});
// Header chips jump to the first intervention of their detector.
document.addEventListener("click", (event) => {
  const chip = event.target.closest("[data-jump-detector]");
  if (!chip) return;
  const step = document.querySelector(`.step[data-detector="${CSS.escape(chip.dataset.jumpDetector)}"]`);
  if (step) { event.preventDefault(); step.scrollIntoView({block: "center"}); location.hash = step.id; }
});
// A run page opens at the first anchor break unless the URL names a step.
document.addEventListener("DOMContentLoaded", () => {
  const wrap = document.querySelector("[data-anchor-break]");
  if (!wrap || location.hash) return;
  const step = document.getElementById(`step-${wrap.dataset.anchorBreak}`);
  if (step) step.scrollIntoView({block: "center"});
});
// Readable payloads (runs/payloads.py): "show all" unfolds a clamped text or a
// folded JSON block; "copy" copies the block's JSON as text.
document.addEventListener("click", (event) => {
  const button = event.target.closest("button.show-all, button.fold-toggle");
  if (!button) return;
  const target = button.classList.contains("fold-toggle") ? button.closest(".payload") : button.previousElementSibling;
  if (!target) return;
  const open = target.classList.toggle("open");
  button.setAttribute("aria-expanded", String(open));
  button.textContent = open ? button.dataset.less : button.dataset.more;
});
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button.copy");
  if (!button) return;
  const text = button.closest(".payload").querySelector("pre").textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard API (plain http on another host): copy through a selection.
    const area = document.createElement("textarea");
    area.value = text; document.body.append(area); area.select(); document.execCommand("copy"); area.remove();
  }
  // The words come with the button, in the page's language (runs/core/step_payloads.py).
  const idle = button.textContent;
  button.classList.add("copied"); button.textContent = button.dataset.copied || "copied";
  setTimeout(() => { button.classList.remove("copied"); button.textContent = idle; }, 1500);
});
// A waterfall bar or a span names its step: on this page, scroll to it; a step
// not loaded yet follows the link (the run page opens with that step loaded).
document.addEventListener("click", (event) => {
  const link = event.target.closest("a[data-step]");
  if (!link) return;
  const step = document.getElementById(`step-${link.dataset.step}`);
  if (!step) return;
  event.preventDefault();
  step.scrollIntoView({block: "center"});
  history.replaceState(null, "", `#${step.id}`);
  step.classList.add("flash-target");
  setTimeout(() => step.classList.remove("flash-target"), 1200);
});
// The header's project switcher submits on change (the button stays for no-JS).
document.addEventListener("change", (event) => {
  if (event.target.matches("select[data-autosubmit]")) event.target.form.requestSubmit();
});
// A form answered 400 comes back with its errors in place: swap it in (htmx
// drops 4xx bodies by default) where the target says it holds such a form.
document.addEventListener("htmx:beforeSwap", (event) => {
  if (event.detail.xhr.status === 400 && event.detail.target.closest("[data-swap-form-errors]")) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});
// The header's menu at phone width (app.css): the button opens and closes it.
document.addEventListener("click", (event) => {
  const button = event.target.closest("button.menu-toggle");
  if (!button) return;
  const open = button.closest(".topbar").classList.toggle("menu-open");
  button.setAttribute("aria-expanded", String(open));
});
// Any other htmx request answered with an error: htmx swaps nothing and shows
// nothing, so its message goes where the user acted (at the end of the form that
// sent it, or after the control), as text: the answer's own text for a 4xx (a
// page's alert or main content, never its markup), a plain sentence otherwise.
// A sentence of base.html's <body data-msg-…> (the page's language), with %s the HTTP status.
function pageMessage(name, fallback, status) {
  return (document.body.dataset[name] || fallback).replace("%s", String(status));
}
function htmxErrorText(xhr) {
  if (!xhr || xhr.status === 0) return pageMessage("msgUnreachable", "The server could not be reached; try again.", 0);
  if (xhr.status >= 500) return pageMessage("msgFailed", "The server failed (%s); try again.", xhr.status);
  let text = xhr.responseText || "";
  if ((xhr.getResponseHeader("Content-Type") || "").includes("html")) {
    const doc = new DOMParser().parseFromString(text, "text/html");
    const part = doc.querySelector("[role=alert], .errors, .error") || doc.querySelector("main") || doc.body;
    text = part ? part.textContent : "";
  }
  text = text.replace(/\s+/g, " ").trim();
  return (text.length > 400 ? `${text.slice(0, 400)}…` : text) ||
    pageMessage("msgRefused", "The request was refused (%s).", xhr.status);
}
function htmxErrorPlace(elt) {
  return elt.closest("form") || elt.closest("table") || elt;
}
function showHtmxError(event) {
  if (document.querySelector("[data-htmx-errors]")) return; // the page shows them itself (review.js)
  const place = htmxErrorPlace(event.detail.elt);
  let slot = place.matches("form") ? place.querySelector(":scope > .htmx-error") : place.nextElementSibling;
  if (!slot || !slot.matches(".htmx-error")) {
    slot = document.createElement("p");
    slot.className = "htmx-error error";
    slot.setAttribute("role", "alert");
    if (place.matches("form")) place.append(slot); else place.after(slot);
  }
  slot.textContent = htmxErrorText(event.detail.xhr);
}
document.addEventListener("htmx:responseError", showHtmxError);
document.addEventListener("htmx:sendError", showHtmxError);
// The next request from there clears the last error.
document.addEventListener("htmx:beforeRequest", (event) => {
  const place = htmxErrorPlace(event.detail.elt);
  const slot = place.matches("form") ? place.querySelector(":scope > .htmx-error") : place.nextElementSibling;
  if (slot && slot.matches(".htmx-error")) slot.remove();
});
// A GET form (the run list's search and filters) sends only the fields that say
// something: a shared link reads "?q=bridge", not twenty empty parameters. The
// whole-page submit goes through here; htmx's own requests drop them below.
function nonEmptyQuery(form, submitter) {
  const params = new URLSearchParams();
  for (const [key, value] of new FormData(form, submitter)) {
    if (typeof value === "string" && value.trim() !== "") params.append(key, value);
  }
  return params.toString();
}
document.addEventListener("submit", (event) => {
  const form = event.target;
  if ((form.getAttribute("method") || "get").toLowerCase() !== "get" || event.defaultPrevented) return;
  event.preventDefault();
  const query = nonEmptyQuery(form, event.submitter);
  const action = new URL(form.getAttribute("action") || location.pathname, location.href);
  location.assign(`${action.pathname}${query ? `?${query}` : ""}`);
});
document.addEventListener("htmx:configRequest", (event) => {
  if (event.detail.verb !== "get") return;
  const params = event.detail.parameters;
  // htmx 2 hands a FormData-like object; drop the keys whose every value is empty.
  for (const key of [...new Set(params.keys ? params.keys() : Object.keys(params))]) {
    const values = params.getAll ? params.getAll(key) : [params[key]].flat();
    if (values.every((v) => typeof v === "string" && v.trim() === "")) {
      if (params.delete) params.delete(key); else delete params[key];
    }
  }
});
