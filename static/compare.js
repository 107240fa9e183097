// Compare page: open / fold grid cells (charts: static/charts.js).
(function () {
  // Charts are drawn by static/charts.js (loaded before this file).

  // A grid cell opens its unit's steps in a full-width row below (htmx GET);
  // a second click folds it. One listener instead of thousands of hx-get cells.
  document.addEventListener("click", (event) => {
    const close = event.target.closest("[data-close-expand]");
    if (close) return close.closest("tr").remove();
    const link = event.target.closest("a[data-cell]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    const open = document.querySelector(`tr[data-x-open="${CSS.escape(link.dataset.x)}"]`);
    if (open) return open.remove();
    htmx.ajax("GET", link.dataset.cell, {target: link.closest("tr"), swap: "afterend"});
  });

  // The grid's width depends on its column count: set from data-width, since the
  // Content-Security-Policy allows no inline style attribute.
  function sizeGrids(root) {
    if (!root || !root.querySelectorAll) return;
    const grids = Array.from(root.querySelectorAll("table.cmp-grid[data-width]"));
    if (root.matches && root.matches("table.cmp-grid[data-width]")) grids.push(root);
    grids.forEach((table) => { table.style.width = table.dataset.width; });
  }
  if (window.htmx) htmx.onLoad(sizeGrids);
  else document.addEventListener("DOMContentLoaded", () => sizeGrids(document));
})();
