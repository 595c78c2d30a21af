/* The trace list's keyboard: "/" focuses the step-content search (unless the user is typing somewhere),
 * Escape leaves it. The form itself works without this script (plain GET). */
(function () {
  "use strict";
  document.addEventListener("keydown", function (e) {
    var search = document.getElementById("f-q");
    if (!search) return;
    var el = document.activeElement;
    var typing = el && el.closest && el.closest("input, textarea, select, [contenteditable='true']");
    if (e.key === "/" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      search.focus();
      search.select();
    } else if (e.key === "Escape" && el === search) {
      search.blur();
    }
  });
})();
