// Click a clamped step text to expand it; click again to fold it.
document.addEventListener("click", (event) => {
  const text = event.target.closest(".clamp");
  if (text && !window.getSelection().toString()) text.classList.toggle("open");
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
// A form answered 400 comes back with its errors in place: swap it in (htmx
// drops 4xx bodies by default) where the target says it holds such a form.
document.addEventListener("htmx:beforeSwap", (event) => {
  if (event.detail.xhr.status === 400 && event.detail.target.closest("[data-swap-form-errors]")) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});
