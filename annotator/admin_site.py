"""Django's admin, for the people who run the installation: superusers only.

The admin reads every row of every model (annotations, gold labels, answer keys) without the project access
policy (annotator.access), so a blind annotator who also had `is_staff` and a model permission could read
the labels of the traces they still have to label. Project owners administer their projects in the app's
own pages and API, which go through the policy; the admin is left to superusers.
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest


class OperatorsAdminSite(admin.AdminSite):
    site_header = "Trace annotator: operators"

    def has_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_superuser
