// Click a clamped step text to expand it; click again to fold it.
document.addEventListener("click", (event) => {
  const text = event.target.closest(".clamp");
  if (text && !window.getSelection().toString()) text.classList.toggle("open");
});
