"""A heatmap cell whose rate comes from a handful of traces is drawn pale and says its n: one trace of one
is "100%", which must not look like the darkest, surest cell of the map."""

from __future__ import annotations

from annotator.signatures.charts import SMALL_N, _cell


def test_a_rate_from_one_trace_is_pale_and_says_n():
    cell = _cell("100%", "FM-1.1 with model x: 1/1", 1.0, n=1)
    assert cell.faint and cell.n == 1
    assert not cell.dark
    assert float(cell.shade) < 0.3


def test_a_rate_from_enough_traces_keeps_its_full_shade():
    cell = _cell("100%", "FM-1.1 with model x: 40/40", 1.0, n=40)
    assert not cell.faint
    assert cell.dark
    assert float(cell.shade) > 0.9


def test_the_fade_grows_with_n_up_to_the_threshold():
    shades = [float(_cell("50%", "", 0.8, n=n).shade) for n in range(1, SMALL_N + 1)]
    assert shades == sorted(shades)
    assert shades[-1] == float(_cell("50%", "", 0.8, n=100).shade)
