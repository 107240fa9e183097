// New run: show only the fields that apply to the chosen model, and pick the
// mode it works in (the form's data-modes-of-provider: provider -> its modes).
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("new-run");
  if (!form) return;
  const provider = form.querySelector("[name=provider]");
  const mode = form.querySelector("[name=mode]");
  const modesOf = JSON.parse(form.dataset.modesOfProvider || "{}");

  function apply() {
    const chosen = provider.value;
    form.querySelectorAll("[data-providers]").forEach((el) => {
      el.hidden = !el.dataset.providers.split(" ").includes(chosen);
    });
    const allowed = modesOf[chosen];
    Array.from(mode.options).forEach((option) => {
      option.disabled = Boolean(allowed) && !allowed.includes(option.value);
    });
    if (allowed && !allowed.includes(mode.value)) mode.value = allowed[0];
  }

  provider.addEventListener("change", apply);
  apply();
});
