(function () {
  // Times come as UTC (<time datetime="...Z">); shown in the reader's own zone, the UTC text kept on hover.
  // (dateStyle and timeZoneName may not be combined: the parts are named one by one.)
  var format = new Intl.DateTimeFormat(undefined, {year: "numeric", month: "short", day: "numeric",
                                                   hour: "2-digit", minute: "2-digit", timeZoneName: "short"});
  document.querySelectorAll("time[datetime]").forEach(function (node) {
    var moment = new Date(node.getAttribute("datetime"));
    if (!isNaN(moment.getTime())) { node.textContent = format.format(moment); }
  });
  // A page that reloads itself (the class page, an attempt being graded) has a button that pauses it (WCAG 2.2.1).
  var bar = document.getElementById("agtool-refresh");
  if (!bar) { return; }
  var seconds = parseInt(bar.getAttribute("data-seconds"), 10);
  var button = document.getElementById("agtool-refresh-pause");
  var timer = null;
  function start() { timer = window.setTimeout(function () { window.location.reload(); }, seconds * 1000); }
  button.hidden = false;
  button.addEventListener("click", function () {
    var pausing = timer !== null;
    if (pausing) { window.clearTimeout(timer); timer = null; } else { start(); }
    button.setAttribute("aria-pressed", pausing ? "true" : "false");
    button.textContent = pausing ? "Resume reloading" : "Pause reloading";
  });
  start();
})();
