// Plotly charts from json_script data: <div data-chart="ID"> + <script id="ID" type="application/json">.
// plotly.min.js is large (~4.6 MB): pages preload it (<link rel="preload" data-plotly>)
// and it runs only after the page has painted. A click on a point whose customdata
// is a URL opens the runs behind it. htmx-swapped content is drawn too.
window.agentlabCharts = (function () {
  const CONFIG = {displayModeBar: false, responsive: true};
  let waiting = null; // callbacks queued while plotly.min.js loads

  function withPlotly(callback) {
    if (window.Plotly) return callback();
    const link = document.querySelector("link[data-plotly]");
    if (!link) return;
    if (waiting) return waiting.push(callback);
    waiting = [callback];
    // plotly's own styles as a file first (the Content-Security-Policy forbids the
    // inline <style> it would add): vendor/plotly-styles.js, from scripts/plotly_css.py.
    const styles = document.createElement("script");
    styles.src = new URL("../vendor/plotly-styles.js", link.href).href;
    styles.async = false; // dynamically added scripts with async off run in order
    const script = document.createElement("script");
    script.src = link.href;
    script.async = false;
    script.onload = () => waiting.splice(0).forEach((f) => f());
    requestAnimationFrame(() => setTimeout(() => document.head.append(styles, script), 0));
  }

  // One chart per task, so drawing many never freezes the page in one go.
  function draw(root) {
    const divs = Array.from(root.querySelectorAll("[data-chart]"));
    const next = () => {
      const div = divs.shift();
      if (!div || !div.isConnected) return;
      // During an outerHTML swap the old content (same ids) may still be in
      // the document: look the data up inside the new content first.
      const data = root.querySelector(`#${CSS.escape(div.dataset.chart)}`) || document.getElementById(div.dataset.chart);
      if (data) {
        const fig = JSON.parse(data.textContent);
        Plotly.react(div, fig.data, fig.layout, CONFIG);
        if (!div.dataset.linked) {
          div.dataset.linked = "1";
          div.on("plotly_click", (event) => {
            const url = event.points && event.points[0] && event.points[0].customdata;
            if (typeof url === "string" && url.startsWith("/")) window.location.href = url;
          });
        }
      }
      setTimeout(next, 0);
    };
    setTimeout(next, 0);
  }

  function drawAll(root) {
    if (root && root.querySelector && root.querySelector("[data-chart]")) withPlotly(() => draw(root));
  }

  if (window.htmx) htmx.onLoad(drawAll);
  else document.addEventListener("DOMContentLoaded", () => drawAll(document));
  return {withPlotly, drawAll};
})();
