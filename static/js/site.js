/* One error channel for the whole site: every htmx request that fails reaches the person who made it.
 *
 * - A 400/409/422 answer that is a fragment (the form's own partial, which names what to fix) is swapped into
 *   its target like a success; htmx would drop it by default. Focus then moves to the error inside it.
 * - Any other failure (403, 404, 500, a full error page, a proxy's 502, no network, a timeout) shows a short
 *   message in the alert region at the top of the page (#site-alert, role="alert"), and focus moves there.
 *   Our error pages carry their plain-words reason in [data-error-message]; that is what the toast shows.
 * - While the user is typing in a text field, focus stays there (the region is still announced and scrolled
 *   into view): stealing the caret mid-sentence would lose keystrokes.
 *
 * Other scripts use window.siteErrors.show(text, element?) to report their own checks the same way.
 */
(function () {
  "use strict";

  var SWAPPABLE = { 400: true, 409: true, 422: true };
  var ERROR_SELECTOR = '[role="alert"], .errors, .error, .conflict, .alert';
  var typingSelector = 'input:not([type="checkbox"]):not([type="radio"]):not([type="button"]):not([type="submit"]), textarea, select, [contenteditable="true"]';

  function isTyping() {
    var el = document.activeElement;
    return !!(el && el.closest && el.closest(typingSelector));
  }

  function reveal(el) {
    if (!el) return;
    if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "-1");
    el.scrollIntoView({ block: "nearest" });
    if (!isTyping()) el.focus({ preventScroll: true });
  }

  function region() { return document.getElementById("site-alert"); }

  function show(text, where) {
    // `where`: an element near the user's action that should hold the message (e.g. next to Submit).
    var box = where || region();
    if (!box) { window.alert(text); return; }
    var slot = box.querySelector("[data-error-text]") || box;
    slot.textContent = text;
    box.hidden = false;
    reveal(box);
  }

  function hide(box) {
    box = box || region();
    if (box) box.hidden = true;
  }

  function messageFrom(xhr) {
    var status = xhr ? xhr.status : 0;
    var body = (xhr && xhr.responseText) || "";
    var type = (xhr && xhr.getResponseHeader("Content-Type")) || "";
    if (type.indexOf("html") !== -1 && body) {
      var doc = new DOMParser().parseFromString(body, "text/html");
      var ours = doc.querySelector("[data-error-message]");
      if (ours && ours.textContent.trim()) return ours.textContent.trim();
      var alert = doc.querySelector(ERROR_SELECTOR);
      if (alert && alert.textContent.trim()) return alert.textContent.trim().replace(/\s+/g, " ");
    } else if (type.indexOf("json") !== -1 && body) {
      try {
        var data = JSON.parse(body);
        if (data && (data.detail || data.error)) return String(data.detail || data.error);
      } catch (e) { /* fall through to the generic text */ }
    } else if (body && body.length < 300 && body.indexOf("<") === -1) {
      return body.trim();
    }
    if (status === 403) return "You are not allowed to do this in this project. Ask the project owner if you need to.";
    if (status === 404) return "That was not found: it may have been deleted, or you are no longer a member of this project.";
    if (status === 413) return "That upload is too large for the server.";
    if (status >= 500) return "The server failed to finish this (error " + status + "). Nothing was changed; try again, and tell the project owner if it keeps happening.";
    return "The server refused this (error " + status + ").";
  }

  function looksLikeFragment(xhr) {
    var body = xhr.responseText || "";
    var type = xhr.getResponseHeader("Content-Type") || "";
    return type.indexOf("html") !== -1 && !/<html[\s>]/i.test(body.slice(0, 500));
  }

  function signedOut(xhr) {
    // The session ended: the request was redirected to the sign-in page, which must not land in a fragment.
    return xhr.status === 200 && /\/accounts\/login\//.test(xhr.responseURL || "") &&
      !/\/accounts\/login\//.test(location.pathname);
  }

  document.addEventListener("htmx:beforeSwap", function (e) {
    var xhr = e.detail.xhr;
    if (xhr && signedOut(xhr)) {
      e.detail.shouldSwap = false;
      show("You are signed out (your session ended), so this was not saved. Sign in again in a new tab, then retry here.");
      return;
    }
    if (!xhr || xhr.status < 400) return;
    if (SWAPPABLE[xhr.status] && looksLikeFragment(xhr)) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
      return;
    }
    e.detail.shouldSwap = false;
    show(messageFrom(xhr));
  });

  document.addEventListener("htmx:afterSwap", function (e) {
    var xhr = e.detail.xhr;
    if (!xhr || xhr.status < 400) return;
    var target = e.detail.target;
    // An outerHTML swap replaced the target: the new element with the same id holds the message.
    if (target && !target.isConnected && target.id) target = document.getElementById(target.id);
    var found = target && (target.matches(ERROR_SELECTOR) ? target : target.querySelector(ERROR_SELECTOR));
    if (found) reveal(found);
    else show(messageFrom(xhr));
  });

  function unreachable() {
    show("Could not reach the server: check your connection and try again. Nothing was saved by this request.");
  }
  document.addEventListener("htmx:sendError", unreachable);
  document.addEventListener("htmx:timeout", unreachable);

  document.addEventListener("click", function (e) {
    var dismiss = e.target.closest && e.target.closest("[data-dismiss-alert]");
    if (dismiss) hide(dismiss.closest("[data-alert]"));
  });

  window.siteErrors = { show: show, hide: hide, reveal: reveal };
})();
