// Draw plotly figures from their json_script data; a click on a point with a
// URL in its customdata opens the runs behind it.
(function () {
  function draw(root) {
    if (!window.Plotly) return;
    root.querySelectorAll("[data-chart]").forEach((div) => {
      const data = document.getElementById(div.dataset.chart);
      if (!data) return;
      const fig = JSON.parse(data.textContent);
      Plotly.newPlot(div, fig.data, fig.layout, {displayModeBar: false, responsive: true});
      div.on("plotly_click", (event) => {
        const url = event.points && event.points[0] && event.points[0].customdata;
        if (typeof url === "string" && url.startsWith("/")) window.location.href = url;
      });
    });
  }
  document.addEventListener("DOMContentLoaded", () => draw(document));
})();
