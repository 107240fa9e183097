"""An invite from start to end in headless Chromium (issue 30, item 11): the
admin invites by email on the members page and copies the link it shows; the
invited person opens it in a browser of their own, sets a password and lands
in the project with the role given; the link then answers 410 with a page that
says so. At a laptop's 1440 px and a phone's 390 px, no page wider than the screen."""

from __future__ import annotations

import pytest
from django.core import mail

from agentlab.projects.models import Membership, Role
from tests import test_browser_pages
from tests.test_browser_pages import page_width, shoot

chromium, open_as = test_browser_pages.chromium, test_browser_pages.open_as

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not __import__("shutil").which("chromium"), reason="Debian chromium is not installed"),
]

PASSWORD = "correct horse battery staple"


@pytest.mark.parametrize("width", [1440, 390])
def test_an_invite_by_email_from_the_members_page_to_the_project(live_server, chromium, open_as, user, project,
                                                                  width):
    admin = open_as(user, width)
    admin.goto(f"{live_server.url}/projects/members/")
    assert "invite link" in admin.locator("#add + p").inner_text()  # the page says how
    admin.fill("#add-form input[name=who]", "nina@example.com")
    admin.select_option("#add-form select[name=role]", Role.REVIEWER)
    admin.click("#add-form button[type=submit]")
    admin.wait_for_selector("#invite-link")
    link = admin.locator("#invite-link code").inner_text().strip()
    assert link.startswith(f"{live_server.url}/projects/invites/")
    assert "Emailed to nina@example.com" in admin.locator("#invite-link").inner_text()
    assert admin.locator("table.invites").inner_text().count("nina@example.com") == 1
    assert page_width(admin) <= width
    shoot(admin, f"invite-members-{width}")
    (sent,) = mail.outbox
    assert link in sent.body

    # The invited person: a browser of their own, signed in as nobody.
    context = chromium.new_context(viewport={"width": width, "height": 900})
    newcomer = context.new_page()
    newcomer.goto(link)
    assert "Join Team" in newcomer.locator("h1").inner_text()
    assert newcomer.input_value("#id_username") == "nina"
    assert page_width(newcomer) <= width
    shoot(newcomer, f"invite-accept-{width}")
    newcomer.fill("#id_password1", PASSWORD)
    newcomer.fill("#id_password2", PASSWORD + " typo")
    newcomer.click("#accept-form button[type=submit]")
    assert "didn’t match" in newcomer.locator("#accept-form").inner_text()  # the link still works after a slip
    newcomer.fill("#id_password1", PASSWORD)
    newcomer.fill("#id_password2", PASSWORD)
    newcomer.click("#accept-form button[type=submit]")
    newcomer.wait_for_url(f"{live_server.url}/runs/")
    assert "Welcome to Team: you are a reviewer." in newcomer.locator(".flash").first.inner_text()
    switcher = newcomer.locator("select[name=project] option:checked").inner_text()
    assert switcher == "Team (reviewer)"
    assert Membership.objects.get(user__username="nina", project=project).role == Role.REVIEWER
    shoot(newcomer, f"invite-landed-{width}")

    # Once only: the same link, from anywhere, is 410 with a page that says what to do.
    again = chromium.new_context(viewport={"width": width, "height": 900}).new_page()
    response = again.goto(link)
    assert response.status == 410
    assert "This invite no longer works" in again.locator("h1").inner_text()
    assert "was used on" in again.locator("main").inner_text()
    assert page_width(again) <= width
    shoot(again, f"invite-gone-{width}")
    # And the admin's list of pending invites no longer has it.
    admin.goto(f"{live_server.url}/projects/members/")
    assert "nina@example.com" not in admin.locator("table.invites").inner_text()
    assert "nina" in admin.locator("table.members").inner_text()
    assert admin.js_errors == [] and newcomer.url.endswith("/runs/")
