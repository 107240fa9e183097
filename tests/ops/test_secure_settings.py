"""Secure defaults outside the demo (issue 13, item 6): DEBUG off, no default
SECRET_KEY, ALLOWED_HOSTS not "*", check --deploy clean in a production-like
configuration, HSTS over HTTPS, a CSP on every page."""

from __future__ import annotations

import ast
import re
import secrets
from pathlib import Path

import pytest

from tests.ops.settings_probe import manage, run_python, settings_value

KEY = secrets.token_urlsafe(50)


def test_without_a_secret_key_the_settings_refuse_to_load():
    result = settings_value("settings.SECRET_KEY")
    assert result.returncode != 0
    assert "SECRET_KEY is not set and DEBUG is off" in result.stderr


def test_a_short_secret_key_is_refused():
    result = settings_value("settings.SECRET_KEY", SECRET_KEY="change-me")
    assert result.returncode != 0
    assert "SECRET_KEY is too short" in result.stderr


def test_debug_runs_without_a_key_but_is_off_by_default():
    assert settings_value("settings.DEBUG", DEBUG="true").stdout.strip() == "True"
    result = settings_value("(settings.DEBUG, settings.ALLOWED_HOSTS)", SECRET_KEY=KEY)
    assert result.returncode == 0, result.stderr
    debug, hosts = ast.literal_eval(result.stdout.strip())
    assert debug is False
    assert "*" not in hosts


def test_check_deploy_is_clean_in_a_production_like_configuration():
    result = manage("check", "--deploy", SECRET_KEY=KEY, HTTPS="true", ALLOWED_HOSTS="agentlab.example.com")
    assert result.returncode == 0, result.stderr
    report = result.stdout + result.stderr
    for code in ("W004", "W008", "W009", "W012", "W016", "W018", "W020"):
        assert f"security.{code}" not in report, report
    # What is left are opt-ins documented in .env.example (HSTS_INCLUDE_SUBDOMAINS, HSTS_PRELOAD).
    assert set(re.findall(r"security\.W\d+", report)) <= {"security.W005", "security.W021"}


def test_https_turns_on_redirect_secure_cookies_and_hsts():
    code = """
import django, os
os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'agentlab.settings')
django.setup()
from django.test import Client
c = Client(HTTP_HOST='agentlab.example.com')
plain = c.get('/accounts/login/')
tls = c.get('/accounts/login/', secure=True)
print(plain.status_code, plain['Location'])
print(tls.status_code, tls['Strict-Transport-Security'])
print('secure' in str(tls.cookies['csrftoken']).lower())
"""
    result = run_python(code, SECRET_KEY=KEY, HTTPS="true", ALLOWED_HOSTS="agentlab.example.com")
    assert result.returncode == 0, result.stderr
    plain, tls, secure_cookie = result.stdout.strip().splitlines()
    assert plain == "301 https://agentlab.example.com/accounts/login/"
    assert tls == "200 max-age=31536000"
    assert secure_cookie == "True"


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/accounts/login/", "/runs/", "/dashboard/", "/api/openapi.json"])
def test_every_page_has_a_content_security_policy(auth_client, path):
    response = auth_client.get(path)
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "frame-ancestors 'none'" in policy


def test_plotlys_styles_file_matches_the_installed_plotly():
    """static/vendor/plotly.css stands in for the inline styles of this plotly.js
    version: after an upgrade, run scripts/plotly_css.py."""
    import plotly

    from tests.servers import ROOT

    head = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()[:200]
    version = head.split("plotly.js v", 1)[1].split()[0]
    for name in ("plotly.css", "plotly-styles.js"):
        assert f"plotly.js v{version}:" in (ROOT / "static" / "vendor" / name).read_text()[:200], name
