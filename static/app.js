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
// The header's project switcher submits on change (the button stays for no-JS).
document.addEventListener("change", (event) => {
  if (event.target.matches("select[data-autosubmit]")) event.target.form.requestSubmit();
});
