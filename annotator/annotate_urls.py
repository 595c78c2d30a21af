"""Pages under /p/<slug>/: the queue, the annotation page, the step viewer partials, review, members."""

from django.urls import path

from annotator.views import annotate, members, queue, review, trace

urlpatterns = [
    path("next/", queue.start_next, name="start-next"),
    path("a/<int:assignment_id>/", annotate.annotate, name="annotate"),
    path("a/<int:assignment_id>/save/", annotate.save_draft, name="annotate-save"),
    path("a/<int:assignment_id>/submit/", annotate.submit, name="annotate-submit"),
    path("a/<int:assignment_id>/skip/", annotate.skip, name="annotate-skip"),
    path("t/<int:trace_id>/steps/", trace.trace_steps, name="trace-steps"),
    path("t/<int:trace_id>/steps/<int:index>/", trace.trace_step, name="trace-step"),
    path("t/<int:trace_id>/review/", review.trace_review, name="trace-review"),
    path("t/<int:trace_id>/review/steps/", review.review_steps, name="trace-review-steps"),
    path("traces/", review.trace_list, name="project-traces"),
    path("members/", members.members, name="project-members"),
    path("members/add/", members.add_member, name="project-member-add"),
    path("members/<int:membership_id>/remove/", members.remove_member, name="project-member-remove"),
    path("members/<int:membership_id>/role/", members.change_role, name="project-member-role"),
    path("archive/", members.archive, name="project-archive"),
    path("batches/attach/", members.attach_batch, name="project-batch-attach"),
    path("settings/", members.update_settings, name="project-settings"),
]
