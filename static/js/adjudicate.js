/* Adjudication by keyboard: m/M next/previous disputed mode, a/b accept A/B, e present (own evidence),
 * x absent, 1-6 reason, d definition, s save and next. Reading keys (j/k, /, n/N, ?) come from annotate.js.
 * A choice and a reason on the current mode move on to the next undecided one by themselves.
 */
(function () {
  "use strict";

  var form = document.getElementById("decision-form");
  if (!document.querySelector("[data-adjudicate]") || !form) return;
  var rows = Array.prototype.slice.call(form.querySelectorAll("tr.decision-row[data-decision]"));
  var current = -1;

  function toast(text) {
    var t = document.getElementById("toast");
    if (!t) return;
    t.textContent = text;
    t.hidden = false;
    clearTimeout(toast.timer);
    toast.timer = setTimeout(function () { t.hidden = true; }, 1600);
  }

  function code(i) { return rows[i].dataset.decision; }
  function modeRow(i) { return document.getElementById("row-" + code(i)); }

  function select(i) {
    if (!rows.length) return;
    current = (i + rows.length) % rows.length;
    form.querySelectorAll(".is-current-decision").forEach(function (el) { el.classList.remove("is-current-decision"); });
    rows[current].classList.add("is-current-decision");
    modeRow(current).classList.add("is-current-decision");
    modeRow(current).scrollIntoView({ block: "nearest" });
    rows[current].scrollIntoView({ block: "nearest" });
    toast(code(current) + " (" + (current + 1) + " of " + rows.length + " disputed)");
  }

  function ensure() {
    if (current === -1) select(firstUndecided());
    return current !== -1;
  }

  function decided(i) {
    var choice = rows[i].querySelector('input[type="radio"]:checked');
    var reason = rows[i].querySelector("select").value;
    return !!(choice && reason);
  }

  function firstUndecided() {
    for (var i = 0; i < rows.length; i++) if (!decided(i)) return i;
    return rows.length ? 0 : -1;
  }

  function advanceIfDone() {
    if (!decided(current)) return;
    for (var k = 1; k <= rows.length; k++) {
      var i = (current + k) % rows.length;
      if (!decided(i)) return select(i);
    }
    if (window.siteErrors) window.siteErrors.hide(); // an earlier "not saved: choose ..." no longer holds
    toast("Every disputed mode is decided: s saves and opens the next disagreement");
  }

  function choose(value) {
    if (!ensure()) return;
    var radio = rows[current].querySelector('input[type="radio"][value="' + value + '"]');
    if (!radio) return toast("No such choice here");
    radio.checked = true;
    var label = radio.closest("label").textContent.replace(/\s+/g, " ").trim();
    if (value === "present") {
      rows[current].querySelector('input[name^="steps-"]').focus();
      return toast(code(current) + ": " + label + ", type the steps");
    }
    if (!rows[current].querySelector("select").value) toast(code(current) + ": " + label + ". Now the reason (1–6)");
    else advanceIfDone();
  }

  function reason(n) {
    if (!ensure()) return;
    var select = rows[current].querySelector("select");
    var option = select.options[n]; // options[0] is "Choose…"
    if (!option) return toast("No reason " + n);
    select.value = option.value;
    toast(code(current) + ": " + option.textContent);
    if (option.value === "other") {
      rows[current].querySelector('input[name^="note-"]').focus();
      return;
    }
    advanceIfDone();
  }

  function definition() {
    if (!ensure()) return;
    var details = modeRow(current).querySelector("details.mode-def");
    if (details) details.open = !details.open;
  }

  function saveNext() {
    var undecided = [];
    rows.forEach(function (_, i) { if (!decided(i)) undecided.push(i); });
    if (undecided.length && window.siteErrors) {
      select(undecided[0]);
      var codes = undecided.map(code).join(", ");
      return window.siteErrors.show("Not saved: choose an answer and a reason for " + codes + ".");
    }
    form.querySelector('[data-action="save-next"]').click();
  }

  var typingSelector = 'input:not([type="checkbox"]):not([type="radio"]), textarea, select, [contenteditable="true"]';
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.target.closest && e.target.closest(typingSelector)) return;
    if (document.querySelector("dialog[open]")) return;
    var key = e.key;
    if (key === "m") select(current + 1);
    else if (key === "M") select(current === -1 ? rows.length - 1 : current - 1);
    else if (key === "a") choose("a");
    else if (key === "b") choose("b");
    else if (key === "e") choose("present");
    else if (key === "x") choose("absent");
    else if (key === "d") definition();
    else if (key === "s") saveNext();
    else if (/^[1-9]$/.test(key)) reason(Number(key));
    else return;
    e.preventDefault();
  });

  form.addEventListener("change", function (e) {
    var row = e.target.closest("tr.decision-row");
    if (row) current = rows.indexOf(row);
  });
})();
