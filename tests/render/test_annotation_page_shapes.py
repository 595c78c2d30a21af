"""The annotation page of an imported SWE-agent run shows its edit as a diff, its script as numbered code and
its submitted patch as a diff, with the run's markup still text."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_a_coder_reads_the_edit_the_script_and_the_patch(client, swe_world):
    project, _trace, slot = swe_world
    client.force_login(slot.annotator)
    page = client.get(f"/p/{project.slug}/a/{slot.pk}/").content.decode()
    assert page.count('class="shape shape-diff"') == 2  # the str_replace edit and the submitted patch
    assert '<span class="d del">-    return a - b</span>' in page
    assert '<span class="d add">+    return a + b</span>' in page
    assert '<span class="l" data-n="3">' in page  # the heredoc script, numbered
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/pre&gt;␛[31m" in page


def test_a_search_hit_inside_a_diff_is_marked(client, swe_world):
    project, _trace, slot = swe_world
    client.force_login(slot.annotator)
    page = client.get(f"/p/{project.slug}/a/{slot.pk}/?q=a%20%2B%20b").content.decode()
    assert '<span class="d add">+    return <mark class="hit">a + b</mark></span>' in page
