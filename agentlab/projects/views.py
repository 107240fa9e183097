"""The header's project switcher, the members page (project admins) and the invite links."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from agentlab.projects import current, invites
from agentlab.projects.forms import AccountForm, MemberAccountForm
from agentlab.projects.invites import INVITE_DAYS, InviteGone
from agentlab.projects.models import Invite, Membership, Role, role_name
from agentlab.projects.services import MembershipError, membership_add, membership_remove, membership_set_role
from agentlab.storable import unstorable


@login_required
@require_POST
def project_switch(request: HttpRequest) -> HttpResponse:
    raw = request.POST.get("project", "")
    if not raw.isdigit() or current.select(request, int(raw)) is None:
        raise Http404(_("no such project among yours"))
    # Back to the list, not the page we came from: a run page of the old
    # project would now be a 404.
    target = request.POST.get("next", "")
    if not (target.startswith("/") and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()})):
        target = ""
    return redirect(target or "runs:list")


# The link of an invite just made, shown once to the admin who made it (only its hash is stored).
JUST_INVITED = "projects_just_invited"


def _just_invited(request: HttpRequest) -> dict | None:
    """The invite made by the POST before this page (once), its role in the page's language."""
    invited = request.session.pop(JUST_INVITED, None)
    return invited and {**invited, "role_name": role_name(invited["role"])}


def _members_page(request: HttpRequest, admin: Membership, *, error: str = "", account_form=None,
                  status: int = 200) -> HttpResponse:
    members = Membership.objects.filter(project=admin.project).select_related("user").order_by("user__username")
    return render(request, "projects/members.html", {
        "project": admin.project, "members": members, "roles": Role.choices, "error": error, "me": admin,
        "invites": invites.pending_invites(admin.project), "invite_days": INVITE_DAYS,
        "just_invited": _just_invited(request),
        "account_form": account_form or MemberAccountForm(roles=Role.choices, initial={"role": Role.VIEWER}),
    }, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def member_list(request: HttpRequest) -> HttpResponse:
    """GET: the members, the pending invites, the forms. POST `who`: a username
    with an account is added at once; an email, or a username nobody has yet, gets
    an invite link (emailed when it is an email, and shown here to copy)."""
    admin = current.require_role(request, Role.ADMIN)
    if request.method == "GET":
        return _members_page(request, admin)
    who, role = request.POST.get("who", "").strip(), request.POST.get("role", Role.VIEWER)
    why = unstorable(who)
    if why:  # before any query: Postgres refuses a NUL in a lookup too
        return _members_page(request, admin, error=_("username: %(why)s") % {"why": why}, status=400)
    try:
        if who and "@" not in who and get_user_model().objects.filter(username=who).exists():
            added = membership_add(project=admin.project, username=who, role=role)
            messages.success(request, _("%(user)s is now a %(role)s of %(project)s.")
                             % {"user": added.user, "role": added.role_name, "project": admin.project})
            return redirect("projects:members")
        invite, token = invites.invite_create(project=admin.project, invitee=who, role=role, invited_by=request.user)
    except MembershipError as exc:
        return _members_page(request, admin, error=str(exc), status=400)
    link = request.build_absolute_uri(reverse("projects:invite_accept", args=[token]))
    emailed = ""
    if invite.email:
        try:
            invites.invite_email(invite, link)
        except Exception as exc:  # an SMTP server down must not lose the invite: the link is shown anyway
            emailed = (_("The email could not be sent (%(error)s): send them the link yourself.")
                       % {"error": type(exc).__name__})
        else:
            emailed = _("Emailed to %(email)s.") % {"email": invite.email}
    request.session[JUST_INVITED] = {"invitee": invite.invitee, "role": invite.role, "link": link,
                                     "emailed": emailed}
    return redirect("projects:members")


@login_required
@require_POST
def member_create(request: HttpRequest) -> HttpResponse:
    """An admin makes the account (username, password) and tells the person how to sign in."""
    admin = current.require_role(request, Role.ADMIN)
    form = MemberAccountForm(request.POST, roles=Role.choices)
    if not form.is_valid():
        return _members_page(request, admin, account_form=form, status=400)
    with transaction.atomic():
        user = form.save()
        Membership.objects.create(user=user, project=admin.project, role=form.cleaned_data["role"])
    messages.success(request, _("Created %(user)s as a %(role)s of %(project)s: they sign in with the password "
                                "you chose.") % {"user": user, "role": role_name(form.cleaned_data["role"]),
                                                 "project": admin.project})
    return redirect("projects:members")


@login_required
@require_POST
def invite_revoke(request: HttpRequest, invite_id: int) -> HttpResponse:
    admin = current.require_role(request, Role.ADMIN)
    invite = get_object_or_404(Invite, pk=invite_id, project=admin.project, used_at__isnull=True,
                               revoked_at__isnull=True)
    invites.invite_revoke(invite=invite)
    messages.success(request, _("The invite of %(invitee)s no longer works.") % {"invitee": invite.invitee})
    return redirect("projects:members")


@require_http_methods(["GET", "POST"])
def invite_accept(request: HttpRequest, token: str) -> HttpResponse:
    """The invited person's page: choose a username (unless the invite kept one)
    and a password, then land in the project, signed in. 404 for a link nobody
    issued, 410 for one used or expired."""
    try:
        invite = invites.invite_for_token(token)
    except Invite.DoesNotExist:
        # A page that says what to do, not the bare 404: the person has no account to look around with.
        return render(request, "projects/invite_unknown.html", status=404)
    except InviteGone as gone:
        return render(request, "projects/invite_gone.html", {"why": str(gone), "invite": gone.invite}, status=410)
    form = AccountForm(request.POST or None, username=invite.username,
                       initial={"username": invite.email.split("@")[0]} if invite.email else None)
    if request.method == "POST" and form.is_valid():
        try:
            user, invite = invites.invite_accept(token=token, username=form.cleaned_data["username"],
                                         password=form.cleaned_data["password1"])
        except InviteGone as gone:  # used in another tab meanwhile
            return render(request, "projects/invite_gone.html", {"why": str(gone), "invite": gone.invite},
                          status=410)
        except IntegrityError:  # the username was taken between the check and the insert
            form.add_error("username", _("A user with that username already exists."))
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            request.session[current.SESSION_KEY] = invite.project_id
            messages.success(request, _("Welcome to %(project)s: you are a %(role)s.")
                             % {"project": invite.project, "role": invite.role_name})
            return redirect("runs:list")
    return render(request, "projects/invite_accept.html", {"invite": invite, "form": form},
                  status=400 if form.errors else 200)


def _member(request: HttpRequest, membership_id: int) -> Membership:
    admin = current.require_role(request, Role.ADMIN)
    return get_object_or_404(Membership.objects.select_related("user", "project"), pk=membership_id,
                             project=admin.project)


@login_required
@require_POST
def member_role(request: HttpRequest, membership_id: int) -> HttpResponse:
    member = _member(request, membership_id)
    try:
        membership_set_role(membership=member, role=request.POST.get("role", ""))
    except MembershipError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("%(user)s is now a %(role)s.") % {"user": member.user, "role": member.role_name})
    return redirect("projects:members")


@login_required
@require_POST
def member_remove(request: HttpRequest, membership_id: int) -> HttpResponse:
    member = _member(request, membership_id)
    try:
        membership_remove(membership=member)
    except MembershipError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("%(user)s left %(project)s.") % {"user": member.user, "project": member.project})
    return redirect("projects:members")
