"""Member verbs for project administration (the members page and /api/projects/<slug>/members/): add an
existing account, invite a new person by e-mail with a one-time set-password link, change a role, deactivate.

They build on `annotator.services.assignment` (`do_add_member`, `do_remove_annotator`), so every change
re-plans the assignments the same way. The caller checks who may administer the project
(`annotator.access.access_project_admin`).

The set-password link is Django's password-reset token: it names the user and a hash of their password and
last login, so it stops working once used (the password changes) or after PASSWORD_RESET_TIMEOUT.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from annotator.models import Membership, Project, Role
from annotator.raters import receives_work_q
from annotator.services.assignment import do_add_member, do_remove_annotator

log = logging.getLogger(__name__)

_USERNAME = re.compile(r"^[\w.@+-]{1,150}$")


class MemberError(ValueError):
    """Shown to the owner as it is."""


@dataclass
class MemberChange:
    membership: Membership
    assignments_created: int = 0
    user_created: bool = False
    # The one-time set-password link of a newly created account (a path; the caller makes it absolute).
    set_password_path: str = ""
    emailed: bool = False


def set_password_path(user) -> str:
    """A one-time link for `user` to choose a password (Django's password-reset confirm view)."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("password-set", kwargs={"uidb64": uid, "token": default_token_generator.make_token(user)})


def _check_role(role: str) -> None:
    if role not in Role.values:
        raise MemberError(f"Unknown role {role!r}; choose one of {', '.join(Role.values)}")


def _membership(project: Project, user, role: str) -> Membership:
    return Membership.objects.get(project=project, user=user, role=role)


def do_add_existing(project: Project, username: str, role: str) -> MemberChange:
    """Add an existing person (a human who signs in, never an imported or LLM rater) with `role`."""
    _check_role(role)
    username = username.strip()
    user = get_user_model().objects.filter(receives_work_q(), username=username).first()
    if user is None:
        raise MemberError(f"There is no user “{username}”; invite them by e-mail instead")
    created = do_add_member(project, user, role)
    return MemberChange(_membership(project, user, role), assignments_created=created)


def do_invite(
    project: Project, *, email: str, role: str, username: str = "", base_url: str = "", actor=None
) -> MemberChange:
    """Invite a person by e-mail: an account with that address is added as it is; otherwise an account is
    created without a usable password and a one-time set-password link is returned (and e-mailed through
    EMAIL_BACKEND, when `base_url` lets the mail carry a full link)."""
    _check_role(role)
    email = email.strip()
    try:
        validate_email(email)
    except ValidationError:
        raise MemberError(f"“{email}” is not an e-mail address") from None
    User = get_user_model()
    existing = User.objects.filter(receives_work_q(), email__iexact=email).order_by("pk").first()
    if existing is not None:
        created = do_add_member(project, existing, role)
        return MemberChange(_membership(project, existing, role), assignments_created=created)
    username = (username or email.split("@", 1)[0]).strip()
    if not _USERNAME.match(username):
        raise MemberError("A username has at most 150 letters, digits and @ . + - _ characters")
    if User.objects.filter(username=username).exists():
        raise MemberError(f"The username “{username}” is taken; choose another one for {email}")
    with transaction.atomic():
        user = User(username=username, email=email)
        user.set_unusable_password()
        user.save()
        created = do_add_member(project, user, role)
    change = MemberChange(
        _membership(project, user, role),
        assignments_created=created,
        user_created=True,
        set_password_path=set_password_path(user),
    )
    if base_url:
        change.emailed = _send_invitation(project, user, base_url + change.set_password_path, actor)
    log.info("project %s: %s invited %s as %s", project.slug, actor, username, role)
    return change


def _send_invitation(project: Project, user, link: str, actor) -> bool:
    inviter = getattr(actor, "username", "") or "An owner"
    body = (
        f"{inviter} invited you to the annotation project “{project.name}” as {user.username}.\n\n"
        f"Choose your password here (the link works once):\n{link}\n"
    )
    try:
        send_mail(f"Invitation to {project.name}", body, settings.DEFAULT_FROM_EMAIL, [user.email])
    except Exception:  # the owner still has the link to pass on; the log says why the mail failed
        log.exception("project %s: the invitation mail to user %s failed", project.slug, user.pk)
        return False
    return True


def _other_owners(project: Project, membership: Membership) -> int:
    return project.memberships.filter(role=Role.OWNER, active=True).exclude(pk=membership.pk).count()


def do_deactivate(project: Project, membership: Membership) -> MemberChange:
    """Take a role away: annotators' unfinished traces go to others (their submitted work stays); the last
    owner cannot leave (a project needs one)."""
    if membership.role == Role.OWNER and not _other_owners(project, membership):
        raise MemberError("A project needs at least one owner; add another owner first")
    created = 0
    if membership.role == Role.ANNOTATOR:
        created = do_remove_annotator(project, membership.user)
    else:
        Membership.objects.filter(pk=membership.pk).update(active=False)
    membership.refresh_from_db()
    return MemberChange(membership, assignments_created=created)


def do_change_role(project: Project, membership: Membership, role: str) -> MemberChange:
    """Move a member from one role to another (the old membership is deactivated, kept for history)."""
    _check_role(role)
    if not membership.active:
        raise MemberError(f"{membership.user.username} is no longer {membership.role}; add them again")
    if role == membership.role:
        return MemberChange(membership)
    with transaction.atomic():
        created = do_add_member(project, membership.user, role)
        created += do_deactivate(project, membership).assignments_created
    return MemberChange(_membership(project, membership.user, role), assignments_created=created)
