// Compare page: draw the plotly charts from their json_script data, also after
// the live poll swaps the page body in, and open / close grid cell expansions.
(function () {
  const CONFIG = {displayModeBar: false, responsive: true};

  function draw(root) {
    if (!window.Plotly || !root.querySelectorAll) return;
    root.querySelectorAll("[data-chart]").forEach((div) => {
      // Look the data up inside the new content: during an outerHTML swap the
      // old body (with the same ids) may still be in the document.
      const data = root.querySelector(`#${CSS.escape(div.dataset.chart)}`) || document.getElementById(div.dataset.chart);
      if (!data) return;
      const fig = JSON.parse(data.textContent);
      Plotly.react(div, fig.data, fig.layout, CONFIG);
    });
  }

  // htmx.onLoad runs for the initial page and for every piece of swapped-in content.
  if (window.htmx) htmx.onLoad(draw);
  else document.addEventListener("DOMContentLoaded", () => draw(document));

  // A second click on an open cell folds it instead of loading it again.
  document.addEventListener("htmx:beforeRequest", (event) => {
    const key = event.detail.elt.dataset && event.detail.elt.dataset.x;
    if (!key) return;
    const open = document.querySelector(`tr[data-x-open="${CSS.escape(key)}"]`);
    if (open) {
      event.preventDefault();
      open.remove();
    }
  });
  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-close-expand]");
    if (button) button.closest("tr").remove();
  });
})();
