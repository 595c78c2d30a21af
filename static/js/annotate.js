/* Keyboard-first annotation workbench. Vanilla JS, no build step; htmx does the requests.
 *
 * Trace text never passes through innerHTML here: new DOM (evidence pins) is built with textContent and
 * input.value, and every event handler is attached from this file (no inline handlers).
 *
 * Keys: j/k step, / search, n/N hits, digits toggle a mode by the number on its chip (two digits, e.g. 1 2,
 * for the tenth mode onwards), p pin, d definition, s submit, x skip, g next trace (asks: keep or release),
 * ? help, Esc close. Errors go through window.siteErrors (static/js/site.js), the site's one error channel.
 */
(function () {
  "use strict";

  var root = document.querySelector("[data-annotate]");
  if (!root) return;
  var form = document.getElementById("label-form");
  var state = { current: null, activeMode: null, pendingFocus: null, elapsed: 0, sent: 0, dirty: false, submitted: false };
  // 409 (stale) and 422 (invalid) answers carry the status partial; site.js swaps them and focuses the error.
  var stepCount = Number(root.dataset.stepCount);

  // ---- steps -------------------------------------------------------------------------------------
  function stepsBox() { return document.getElementById("trace-steps"); }
  function articles() { return Array.prototype.slice.call(document.querySelectorAll("#trace-steps article.step")); }
  function article(index) { return document.getElementById("step-" + index); }

  function setCurrent(index, scroll) {
    var target = article(index);
    if (!target) return false;
    document.querySelectorAll(".step.is-current, .step-link.is-current").forEach(function (el) {
      el.classList.remove("is-current");
    });
    target.classList.add("is-current");
    var link = document.querySelector('.step-link[data-step="' + index + '"]');
    if (link) {
      link.classList.add("is-current");
      if (scroll) reveal(link, link.closest(".step-index"), false);
    }
    if (scroll) reveal(target, target.closest(".step-bodies"), true);
    target.focus({ preventScroll: true });
    state.current = Number(index);
    return true;
  }

  // Scroll only the column that holds `el` (scrollIntoView would also scroll the page itself).
  function reveal(el, column, toTop) {
    if (!column) return;
    var top = el.getBoundingClientRect().top - column.getBoundingClientRect().top + column.scrollTop;
    var bottom = top + el.offsetHeight;
    if (toTop) column.scrollTop = Math.max(0, top - 8);
    else if (top < column.scrollTop) column.scrollTop = top - 40;
    else if (bottom > column.scrollTop + column.clientHeight) column.scrollTop = bottom - column.clientHeight + 8;
  }

  function move(delta) {
    var list = articles();
    if (!list.length) return;
    var at = list.findIndex(function (a) { return Number(a.dataset.step) === state.current; });
    var next = at + delta;
    if (at === -1) next = delta > 0 ? 0 : list.length - 1;
    if (next >= 0 && next < list.length) return setCurrent(list[next].dataset.step, true);
    var nav = document.querySelector('#trace-steps .step-index [data-nav="' + (delta > 0 ? "next" : "prev") + '"]');
    if (nav) {
      state.pendingFocus = delta > 0 ? "first" : "last";
      nav.click();
    }
  }

  function goToStep(index) {
    index = Number(index);
    if (setCurrent(index, true)) return;
    var box = stepsBox();
    var query = box.dataset.query ? box.dataset.query + "&" : "";
    state.pendingFocus = index;
    htmx.ajax("GET", box.dataset.stepsUrl + "?" + query + "step=" + index, { target: "#trace-steps", swap: "outerHTML" });
  }

  function hits() {
    try { return JSON.parse(stepsBox().dataset.hits || "[]"); } catch (e) { return []; }
  }

  function jumpHit(delta) {
    var list = hits();
    if (!list.length) return toast(document.getElementById("trace-search-input").value ? "No hits" : "Search first (/)");
    var here = state.current === null ? -1 : state.current;
    var target = delta > 0
      ? list.find(function (i) { return i > here; })
      : list.slice().reverse().find(function (i) { return i < here; });
    if (target === undefined) target = delta > 0 ? list[0] : list[list.length - 1];
    goToStep(target);
    toast("Hit " + (list.indexOf(target) + 1) + " of " + list.length);
  }

  function afterStepsSwap() {
    var box = stepsBox();
    var list = articles();
    var focus = state.pendingFocus;
    state.pendingFocus = null;
    if (focus === "first" && list.length) focus = list[0].dataset.step;
    else if (focus === "last" && list.length) focus = list[list.length - 1].dataset.step;
    else if (focus === null && box.dataset.focus !== undefined) focus = box.dataset.focus;
    else if (focus === null && list.length) focus = list[0].dataset.step;
    if (focus !== null && focus !== undefined) setCurrent(focus, true);
    markPinned();
  }

  // ---- modes and evidence --------------------------------------------------------------------------
  function visibleModes() {
    if (!form) return [];
    return Array.prototype.slice.call(form.querySelectorAll(".mode-row")).filter(function (row) {
      return !row.parentElement.closest("details:not([open])");
    });
  }

  // Every mode has a fixed number in panel order (subtypes included), shown on its chip. With ten or more
  // modes, a digit that starts a longer number waits briefly for the next one: "1" then "2" is mode 12.
  function allModes() { return form ? Array.prototype.slice.call(form.querySelectorAll(".mode-row")) : []; }

  function renumber() {
    allModes().forEach(function (row, i) {
      var key = row.querySelector(".mode-key");
      key.textContent = String(i + 1);
      key.classList.toggle("chord", i >= 9);
      key.title = i >= 9 ? "Press " + String(i + 1).split("").join(" then ") : "Press " + (i + 1);
    });
  }

  var chord = { buffer: "", timer: null };
  function digit(d) {
    clearTimeout(chord.timer);
    chord.buffer += d;
    var n = Number(chord.buffer);
    var total = allModes().length;
    var longer = n > 0 && n * 10 <= total; // some mode's number starts with these digits and is longer
    if (!longer) return fireChord();
    toast(chord.buffer + "… (next digit, or wait)");
    chord.timer = setTimeout(fireChord, 900);
  }
  function fireChord() {
    clearTimeout(chord.timer);
    var typed = chord.buffer;
    chord.buffer = "";
    var n = Number(typed);
    if (n >= 1 && n <= allModes().length) toggleMode(n - 1);
    else toast("No mode " + typed);
  }

  function rowOf(code) { return form.querySelector('.mode-row[data-mode="' + CSS.escape(code) + '"]'); }
  function box(row) { return row.querySelector(':scope > .mode-line input[name="labels"]'); }
  function primaryRadio(row) { return row.querySelector(':scope > .mode-line input[name="primary"]'); }

  function setActive(row) {
    form.querySelectorAll(".mode-row.is-active").forEach(function (r) { r.classList.remove("is-active"); });
    row.classList.add("is-active");
    state.activeMode = row.dataset.mode;
    var target = form.querySelector("[data-pin-target]");
    if (target) target.textContent = row.dataset.mode + " " + row.querySelector(".mode-name").textContent;
  }

  function syncRow(row) {
    var checked = box(row).checked;
    row.classList.toggle("is-checked", checked);
    row.querySelector(":scope > .evidence").hidden = !checked;
    if (root.dataset.labelling !== "single") return;
    var radio = primaryRadio(row);
    var chosen = form.querySelectorAll('input[name="labels"]:checked');
    if (checked && !form.querySelector('input[name="primary"]:checked')) radio.checked = true;
    if (!checked && radio.checked) {
      radio.checked = false;
      if (chosen.length === 1) primaryRadio(chosen[0].closest(".mode-row")).checked = true;
    }
  }

  function changed(el) { (el || form).dispatchEvent(new Event("change", { bubbles: true })); }

  function toggleMode(n) {
    var row = allModes()[n];
    if (!row || !form || form.querySelector("fieldset[disabled]")) return;
    // A mode inside a collapsed category or subtype list opens it, so the change is seen.
    for (var d = row.parentElement.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
    var input = box(row);
    input.checked = !input.checked;
    syncRow(row);
    setActive(row);
    changed(input);
    toast((input.checked ? "✓ " : "✗ ") + row.dataset.mode);
  }

  function selectedQuote() {
    var sel = window.getSelection();
    if (!sel || sel.isCollapsed) return null;
    var node = sel.anchorNode && (sel.anchorNode.nodeType === 1 ? sel.anchorNode : sel.anchorNode.parentElement);
    var step = node && node.closest("article.step");
    if (!step) return null;
    return { step: Number(step.dataset.step), quote: sel.toString().trim().slice(0, 2000) };
  }

  function addPin(row, step, quote) {
    var code = row.dataset.mode;
    var list = row.querySelector(".pins");
    var exists = Array.prototype.some.call(list.querySelectorAll("input"), function (input) {
      var v = JSON.parse(input.value);
      return v.step === step && (v.quote || "") === (quote || "");
    });
    if (exists) return toast("Step " + step + " is already evidence for " + code);
    var li = document.createElement("li");
    li.className = "pin";
    var a = document.createElement("a");
    a.href = "?step=" + step + "#step-" + step;
    a.dataset.gotoStep = String(step);
    a.textContent = "step " + step;
    li.appendChild(a);
    if (quote) {
      var q = document.createElement("q");
      q.textContent = quote.length > 120 ? quote.slice(0, 119) + "…" : quote;
      li.appendChild(document.createTextNode(" "));
      li.appendChild(q);
    }
    var x = document.createElement("button");
    x.type = "button";
    x.className = "unpin";
    x.dataset.action = "unpin";
    x.setAttribute("aria-label", "Remove evidence step " + step);
    x.textContent = "×";
    li.appendChild(x);
    var input = document.createElement("input");
    input.type = "hidden";
    input.name = "evidence:" + code;
    input.value = JSON.stringify(quote ? { step: step, quote: quote } : { step: step });
    li.appendChild(input);
    list.appendChild(li);
    markPinned();
    changed(input);
    toast("Pinned step " + step + " to " + code + (quote ? " with the selected text" : ""));
  }

  function pin(row) {
    row = row || (state.activeMode && rowOf(state.activeMode));
    if (!row) return toast("Toggle a mode first (its number), then press p");
    var picked = selectedQuote();
    var step = picked ? picked.step : state.current;
    if (step === null) return toast("Select a step first (j/k or click)");
    if (!box(row).checked) {
      box(row).checked = true;
      syncRow(row);
    }
    setActive(row);
    addPin(row, step, picked ? picked.quote : "");
  }

  function markPinned() {
    if (!form) return;
    var pinned = {};
    form.querySelectorAll('.pins input[type="hidden"]').forEach(function (input) {
      var code = input.name.slice("evidence:".length);
      try { (pinned[JSON.parse(input.value).step] = pinned[JSON.parse(input.value).step] || []).push(code); } catch (e) { /* ignore */ }
    });
    articles().forEach(function (a) {
      var codes = pinned[a.dataset.step] || [];
      a.classList.toggle("is-pinned", codes.length > 0);
      var mark = a.querySelector(".pinned-mark");
      if (mark) mark.textContent = codes.length ? "evidence: " + codes.join(", ") : "";
    });
    document.querySelectorAll(".step-link").forEach(function (l) { l.classList.toggle("is-pinned", !!pinned[l.dataset.step]); });
  }

  function toggleInfo(row) {
    row = row || (state.activeMode && rowOf(state.activeMode)) || visibleModes()[0];
    if (!row) return;
    var info = row.querySelector(":scope > .mode-info");
    info.hidden = !info.hidden;
    row.querySelector(":scope > .mode-line .info-toggle").setAttribute("aria-expanded", String(!info.hidden));
    setActive(row);
  }

  // ---- dialogs, toast, time --------------------------------------------------------------------------
  function openDialog(id) {
    var d = document.getElementById(id);
    if (d && !d.open) d.showModal();
    return d;
  }
  function closeDialogs() { document.querySelectorAll("dialog[open]").forEach(function (d) { d.close(); }); }

  var toastTimer = null;
  function toast(text) {
    var t = document.getElementById("toast");
    if (!t) return;
    t.textContent = text;
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { t.hidden = true; }, 1600);
  }

  // Time spent: seconds this page was visible, sent with each save; the server adds them up.
  var elapsedInput = form && form.querySelector("[data-elapsed]");
  setInterval(function () {
    if (document.hidden) return;
    state.elapsed += 1;
    if (elapsedInput) elapsedInput.value = String(state.elapsed);
  }, 1000);

  function submit() {
    var button = form && form.querySelector('[data-action="submit"]');
    if (button && !button.disabled) button.click();
  }

  // ---- checks before sending: the same rules the server applies, shown next to Submit ----------------
  function checkProblems() {
    var list = [];
    var chosen = Array.prototype.slice.call(form.querySelectorAll('input[name="labels"]:checked'));
    var none = form.querySelector('input[name="no_failure"]');
    none = none && none.checked;
    if (!chosen.length && !none) list.push("Choose at least one failure mode, or tick “No failure observed”.");
    if (chosen.length && none) list.push("Choose either failure modes or “No failure observed”, not both.");
    if (root.dataset.labelling === "single" && chosen.length && !form.querySelector('input[name="primary"]:checked')) {
      list.push("Choose which failure mode is the primary one.");
    }
    list = list.concat(evidenceProblems());
    return list;
  }

  function evidenceProblems() {
    var list = [];
    if (!stepCount) return list;
    form.querySelectorAll('.pins input[type="hidden"]').forEach(function (input) {
      var step;
      try { step = JSON.parse(input.value).step; } catch (e) { return; }
      if (step >= stepCount) {
        list.push("Evidence step " + step + " for " + input.name.slice("evidence:".length) +
          " does not exist: this trace's steps are #0 to #" + (stepCount - 1) + ". Remove that pin.");
      }
    });
    return list;
  }

  // The message goes into #client-check, next to Submit; `keepFocus`: a field the user is typing in.
  function checkFailed(list, keepFocus) {
    var region = document.getElementById("client-check");
    if (!region || !window.siteErrors) { toast(list.join(" ")); return false; }
    window.siteErrors.show(list.join(" "), region);
    if (keepFocus) keepFocus.focus();
    return false;
  }
  function clearCheck() { var region = document.getElementById("client-check"); if (region) region.hidden = true; }

  // ---- next trace: keep the draft or release the trace ------------------------------------------------
  function nextTrace() {
    var dialog = openDialog("next-dialog");
    if (!dialog) return;
    var keep = dialog.querySelector('[data-action="keep-draft"]') || dialog.querySelector('button[type="submit"]');
    if (keep) keep.focus();
  }

  function leave(then) {
    var next = document.getElementById("next-form");
    var editable = form && form.getAttribute("hx-post") && form.dataset.submitted !== "1";
    var go = function () {
      var input = document.createElement("input");
      input.type = "hidden";
      input.name = "then";
      input.value = then;
      next.appendChild(input);
      state.dirty = false;
      next.submit();
    };
    if (!editable || (then !== "keep" && !state.dirty)) return go();
    // Store the draft first: kept, the trace waits under Drafts with the last change in it; released, an
    // unsaved change is still not lost.
    var answered = function (e) {
      if (e.detail.elt !== form) return;
      document.body.removeEventListener("htmx:afterRequest", answered);
      if (e.detail.successful) go();
      else closeDialogs(); // the save was refused: site.js has put the reason next to Submit
    };
    document.body.addEventListener("htmx:afterRequest", answered);
    htmx.ajax("POST", form.dataset.saveUrl, { source: form, target: "#save-status", swap: "outerHTML" });
  }

  // ---- events ------------------------------------------------------------------------------------
  var typingSelector = 'input:not([type="checkbox"]):not([type="radio"]):not([type="button"]):not([type="submit"]), textarea, select, [contenteditable="true"]';

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var typing = e.target.closest && e.target.closest(typingSelector);
    if (e.key === "Escape") {
      if (typing) e.target.blur();
      closeDialogs();
      return;
    }
    if (e.key === "Enter" && typing && form && form.contains(e.target) && e.target.tagName !== "TEXTAREA") {
      e.preventDefault(); // Enter in a note must not submit the annotation
      if (e.target.classList.contains("pin-number")) pinNumber(e.target.closest(".mode-row"));
      return;
    }
    var nextOpen = document.querySelector("#next-dialog[open]");
    if (nextOpen && !typing && e.key === "r" && nextOpen.querySelector('[data-action="release"]')) {
      e.preventDefault();
      leave("release");
      return;
    }
    if (typing || document.querySelector("dialog[open]:not(#help-dialog)")) return;
    var key = e.key;
    if (confidenceChord) {
      confidenceChord = false;
      if (/^[1-5]$/.test(key) && form) { setConfidence(key); e.preventDefault(); return; }
    }
    if (key === "j") move(1);
    else if (key === "k") move(-1);
    else if (key === "/") { var s = document.getElementById("trace-search-input"); s.focus(); s.select(); }
    else if (key === "n") jumpHit(1);
    else if (key === "N") jumpHit(-1);
    else if (key === "p" && form) pin();
    else if (key === "d" && form) toggleInfo();
    else if (key === "s" && form) submit();
    else if (key === "x" && form) openSkip();
    else if (key === "g") nextTrace();
    else if (key === "a" && form) toggleAmbiguous();
    else if (key === "c" && form) { confidenceChord = true; toast("Confidence: press 1 to 5"); }
    else if (key === "o" && form) focusNote();
    else if (key === "?") { var h = document.getElementById("help-dialog"); if (h.open) h.close(); else h.showModal(); }
    else if (/^[0-9]$/.test(key) && form) digit(key);
    else return;
    e.preventDefault();
  });

  // Confidence, "ambiguous" and the note from the keyboard (c then 1-5, a, o): the same inputs the mouse
  // uses, with a change event so autosave sees them.
  var confidenceChord = false;
  function toggleAmbiguous() {
    var box = form.querySelector('input[name="ambiguous"]');
    if (!box || box.disabled) return;
    box.checked = !box.checked;
    changed(box);
    toast(box.checked ? "Marked ambiguous" : "Not ambiguous");
  }
  function setConfidence(n) {
    var radio = form.querySelector('input[name="confidence"][value="' + n + '"]');
    if (!radio || radio.disabled) return;
    radio.checked = true;
    changed(radio);
    toast("Confidence " + n);
  }
  function focusNote() {
    var note = document.getElementById("trace-note");
    if (!note) return;
    note.scrollIntoView({ block: "nearest" });
    note.focus();
  }

  function openSkip() {
    var button = form.querySelector('[data-action="skip"]');
    if (button && button.disabled) return toast("Submitted traces cannot be skipped");
    var d = openDialog("skip-dialog");
    if (d) d.querySelector("textarea").focus();
  }

  function pinNumber(row) {
    var input = row.querySelector(".pin-number");
    var n = parseInt(input.value, 10);
    if (isNaN(n) || n < 0) return toast("Type a step number");
    if (stepCount && n >= stepCount) {
      return checkFailed(["Step " + n + " does not exist: this trace's steps are #0 to #" + (stepCount - 1) + "."], input);
    }
    input.value = "";
    if (!box(row).checked) { box(row).checked = true; syncRow(row); }
    setActive(row);
    addPin(row, n, "");
  }

  document.addEventListener("click", function (e) {
    var action = e.target.closest("[data-action]");
    var goto = e.target.closest("[data-goto-step]");
    var link = e.target.closest(".step-link");
    var step = e.target.closest("article.step");
    if (goto) { e.preventDefault(); goToStep(goto.dataset.gotoStep); return; }
    if (link) { e.preventDefault(); setCurrent(link.dataset.step, true); return; }
    if (step && !action) {
      var sel = window.getSelection();
      if (!sel || sel.isCollapsed) setCurrent(step.dataset.step, false);
    }
    if (!action) return;
    var name = action.dataset.action;
    var row = action.closest(".mode-row");
    if (name === "help") openDialog("help-dialog");
    else if (name === "next") { e.preventDefault(); nextTrace(); }
    else if (name === "keep-draft" || name === "release") { e.preventDefault(); leave(name === "release" ? "release" : "keep"); }
    else if (name === "guidelines") openDialog("guidelines-dialog");
    else if (name === "close-dialog") action.closest("dialog").close();
    else if (name === "skip") openSkip();
    else if (name === "next-hit") jumpHit(1);
    else if (name === "prev-hit") jumpHit(-1);
    else if (name === "info") toggleInfo(row);
    else if (name === "pin") pin(row);
    else if (name === "pin-number") pinNumber(row);
    else if (name === "unpin") {
      var li = action.closest(".pin");
      li.remove();
      markPinned();
      changed(row || form);
    } else if (name === "keep-mine") {
      e.preventDefault();
      form.querySelector('input[name="version"]').value = action.dataset.version;
      if (form.getAttribute("hx-post")) changed(); else submit();
      toast("Saving your version over the other one");
    } else return;
  });

  if (form) {
    form.addEventListener("change", function (e) {
      var t = e.target;
      state.dirty = true;
      if (t.name === "labels") { syncRow(t.closest(".mode-row")); setActive(t.closest(".mode-row")); }
      if (t.name === "primary") {
        var row = t.closest(".mode-row");
        if (!box(row).checked) { box(row).checked = true; syncRow(row); }
        setActive(row);
      }
      if (t.name === "no_failure") form.classList.toggle("is-no-failure", t.checked);
    });
    form.addEventListener("change", clearCheck);
    renumber();
    // Submit is checked here first: what would be refused is said next to Submit, and nothing is sent.
    var submitButton = form.querySelector('[data-action="submit"]');
    if (submitButton) {
      submitButton.addEventListener("htmx:confirm", function (e) {
        var list = checkProblems();
        if (list.length) { e.preventDefault(); checkFailed(list); }
      });
    }
  }

  document.body.addEventListener("htmx:configRequest", function (e) {
    if (!form || !form.contains(e.detail.elt)) return;
    state.sent = state.elapsed;
    // A submit carries the whole form: once it leaves, nothing is pending any more.
    if (e.detail.elt.matches('[data-action="submit"]')) state.dirty = false;
  });
  // An autosave still waiting out its delay when Submit is clicked would reach the server after the submit,
  // on the version the submit replaced: a 409 "changed in another tab" flashing while the next trace loads.
  // The submit carried the whole form, so once it succeeded there is nothing left to autosave.
  document.body.addEventListener("htmx:beforeRequest", function (e) {
    if (form && e.detail.elt === form && state.submitted) e.preventDefault();
  });
  document.body.addEventListener("htmx:afterRequest", function (e) {
    if (!form || !form.contains(e.detail.elt)) return;
    var status = e.detail.xhr && e.detail.xhr.status;
    if (status >= 200 && status < 300 && e.detail.elt.matches('[data-action="submit"]')) state.submitted = true;
    if (status >= 200 && status < 300) {
      state.elapsed = Math.max(0, state.elapsed - state.sent);
      if (elapsedInput) elapsedInput.value = String(state.elapsed);
      state.dirty = false;
    }
    state.sent = 0;
  });
  document.body.addEventListener("htmx:afterSettle", function (e) {
    if (e.detail.target && e.detail.target.id === "trace-steps") afterStepsSwap();
  });
  window.addEventListener("beforeunload", function (e) {
    if (state.dirty && form && form.getAttribute("hx-post")) { e.preventDefault(); e.returnValue = ""; }
  });
  var nextForm = document.getElementById("next-form");
  if (nextForm) {
    nextForm.addEventListener("submit", function (e) {
      // Enter on the dialog's default button, or a plain click: route it through leave() (it saves first).
      e.preventDefault();
      leave(e.submitter && e.submitter.value === "release" ? "release" : "keep");
    });
  }
  var skipForm = document.querySelector("#skip-dialog form");
  if (skipForm) skipForm.addEventListener("submit", function () { state.dirty = false; });

  afterStepsSwap();
  if (!location.hash && state.current === null && articles().length) setCurrent(articles()[0].dataset.step, false);
  // Every handler is attached: keys pressed from now on are heard (browser tests wait for this).
  root.dataset.keys = "ready";
})();
