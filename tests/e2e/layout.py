"""Layout checks through element boxes, for browser tests at a given width: what a user would call
"overlapping" (one control drawn over another, a bar covering a button) and "squeezed" (text too narrow)."""

from __future__ import annotations

# Every visible control and heading whose centre is on screen (inside every scrolling box around it) must be
# the topmost element there, or hold or be held by it; and no two controls' boxes may cross unless one holds
# the other. Returns a description of each problem, empty when the page is clean.
_OVERLAPS_JS = """
() => {
  const sel = 'a[href], button, input:not([type=hidden]), select, textarea, h1, h2, summary, .navlink, .stackbar';
  const visible = (e) => {
    const r = e.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return false;
    if (e.closest('[hidden], dialog:not([open]), .sr-only, .visually-hidden, .htmx-indicator')) return false;
    for (let p = e.parentElement; p; p = p.parentElement) {
      if (p.tagName === 'DETAILS' && !p.open && !e.closest('summary')) return false;
    }
    const s = getComputedStyle(e);
    return s.visibility !== 'hidden' && s.display !== 'none' && Number(s.opacity) > 0;
  };
  const clip = (e) => {
    let box = {left: 0, top: 0, right: innerWidth, bottom: innerHeight};
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      const s = getComputedStyle(p);
      if (s.overflowX !== 'visible' || s.overflowY !== 'visible') {
        const r = p.getBoundingClientRect();
        box = {left: Math.max(box.left, r.left), top: Math.max(box.top, r.top),
               right: Math.min(box.right, r.right), bottom: Math.min(box.bottom, r.bottom)};
      }
    }
    return box;
  };
  const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
    (e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\\s+/).join('.') : '') +
    ' "' + (e.innerText || e.value || e.getAttribute('aria-label') || '').trim().slice(0, 40) + '"';
  function* ancestors(e) { for (let p = e; p && p !== document.body; p = p.parentElement) yield p; }
  const inSticky = (e) => [...ancestors(e)].find((p) => getComputedStyle(p).position === 'sticky') || null;
  const els = [...document.querySelectorAll(sel)].filter(visible);
  const problems = [];
  const shown = [];
  for (const e of els) {
    const r = e.getBoundingClientRect();
    const c = clip(e);
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    if (x < c.left || x > c.right || y < c.top || y > c.bottom) continue;
    shown.push(e);
    const top = document.elementFromPoint(x, y);
    // A sticky bar passes over what scrolls under it: `reachable` checks that each control comes out.
    const stuck = top && [...ancestors(top)].some((p) => getComputedStyle(p).position === 'sticky');
    if (top && !stuck && top !== e && !e.contains(top) && !top.contains(e) && !(top.closest('label') && top.closest('label').contains(e))) {
      problems.push(name(e) + ' is covered by ' + name(top));
    }
  }
  for (let i = 0; i < shown.length; i++) {
    for (let j = i + 1; j < shown.length; j++) {
      const a = shown[i], b = shown[j];
      if (a.contains(b) || b.contains(a)) continue;
      if (inSticky(a) !== inSticky(b)) continue;  // scrolled under a sticky bar: see `reachable`
      const p = a.getBoundingClientRect(), q = b.getBoundingClientRect();
      const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
      const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
      if (w > 2 && h > 2) problems.push(name(a) + ' overlaps ' + name(b));
    }
  }
  // Content wider than the screen makes the whole page scroll sideways.
  if (document.documentElement.scrollWidth > innerWidth + 1) {
    problems.push('the page is ' + document.documentElement.scrollWidth + ' px wide at ' + innerWidth + ' px');
  }
  return problems;
}
"""


def overlaps(page) -> list[str]:
    """What overlaps on the page as it is scrolled now (see _OVERLAPS_JS)."""
    return page.evaluate(_OVERLAPS_JS)


def width_of(page, selector: str) -> float:
    """The rendered width of the first element matching `selector`."""
    return page.locator(selector).first.bounding_box()["width"]


_REACHABLE_JS = """
(container) => {
  const sel = 'a[href], button, input:not([type=hidden]), select, textarea, summary';
  const problems = [];
  for (const e of container.querySelectorAll(sel)) {
    const r0 = e.getBoundingClientRect();
    if (r0.width < 1 || r0.height < 1 || e.closest('[hidden], dialog:not([open])')) continue;
    if ([...document.querySelectorAll('details:not([open])')].some((d) => d.contains(e) && !e.closest('summary'))) continue;
    e.scrollIntoView({block: 'nearest', inline: 'nearest'});
    const r = e.getBoundingClientRect();
    const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    if (top && top !== e && !e.contains(top) && !top.contains(e) && !(top.closest('label') && top.closest('label').contains(e))) {
      problems.push((e.name || e.innerText || e.tagName).toString().trim().slice(0, 40) + ' stays under ' +
        (top.className || top.tagName));
    }
  }
  return problems;
}
"""


def unreachable(page, container: str) -> list[str]:
    """Controls in `container` that stay covered (by a sticky bar, say) when scrolled into view the way
    the keyboard's focus scrolls them."""
    return page.locator(container).first.evaluate(_REACHABLE_JS)
