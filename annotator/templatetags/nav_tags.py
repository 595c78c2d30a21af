"""The top bar's links (annotator.navigation.site_nav), for base.html."""

from __future__ import annotations

from django import template

from annotator.navigation import site_nav as _site_nav

register = template.Library()


@register.simple_tag
def site_nav(user) -> dict:
    return _site_nav(user)
