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
  button.classList.add("copied"); button.textContent = "copied";
  setTimeout(() => { button.classList.remove("copied"); button.textContent = "copy"; }, 1500);
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
