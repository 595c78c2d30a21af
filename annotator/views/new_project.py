"""Create a project in the browser (/projects/new/): who may is PROJECT_CREATORS (staff by default); the
creator becomes its owner. The same verb as POST /api/projects/ (`do_new_project`)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.validators import validate_slug
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from annotator.batches import visible_batches
from annotator.services.projects import ProjectSetupError, do_new_project, may_create_projects
from taxonomy.models import TaxonomyVersion

NOT_ALLOWED = "Only staff may create projects here (the administrator's PROJECT_CREATORS setting)."


class NewProjectForm(forms.Form):
    name = forms.CharField(max_length=200)
    slug = forms.CharField(
        max_length=80, validators=[validate_slug], help_text="Letters, digits and dashes; used in the URLs"
    )
    taxonomy_version = forms.ModelChoiceField(queryset=TaxonomyVersion.objects.none(), label="Taxonomy")
    overlap = forms.IntegerField(min_value=1, max_value=20, initial=2, label="Annotators per trace (overlap)")
    guidelines = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), required=False, max_length=100_000)
    batches = forms.ModelMultipleChoiceField(queryset=None, required=False, help_text="Batches you may see")

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["taxonomy_version"].queryset = TaxonomyVersion.objects.select_related(
            "taxonomy"
        ).order_by("taxonomy__name", "-number")
        self.fields["taxonomy_version"].label_from_instance = lambda version: (
            f"{version.taxonomy.name} v{version.number}"
        )
        # Only batches this user may see: another project's batch is not offered and not accepted.
        self.fields["batches"].queryset = visible_batches(user).order_by("-created_at")


def new_project(request: HttpRequest) -> HttpResponse:
    if not may_create_projects(request.user):
        raise PermissionDenied(NOT_ALLOWED)
    form = NewProjectForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        version = data["taxonomy_version"]
        try:
            setup = do_new_project(
                request.user,
                slug=data["slug"],
                name=data["name"],
                taxonomy=version.taxonomy.slug,
                version=version.number,
                overlap=data["overlap"],
                guidelines=data["guidelines"],
                batches=list(data["batches"]),
            )
        except ProjectSetupError as error:
            form.add_error(None, str(error))
        else:
            messages.success(
                request,
                f"Project {setup.project.name} created; you are its owner. Add members and batches here.",
            )
            return redirect("project-members", setup.project.slug)
    status = 422 if request.method == "POST" else 200
    return render(request, "annotator/new_project.html", {"form": form}, status=status)
