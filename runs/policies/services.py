"""Policy versioning: a save is always the next version of its name."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from runs.core.models import Policy
from tracing.core.watchdog import BUILTIN_POLICIES
from tracing.core.watchdog import Policy as WatchdogPolicy

# Keys of a watchdog policy that live in their own columns, not in Policy.config.
COLUMNS = ("name", "version", "description")


# The policy the New-run form picks for every new run of a project.
DEFAULT_NAME = "default"


class PolicyExists(IntegrityError):
    """A new policy was asked for under a name that has versions already."""


class PolicyProtected(ValueError):
    """A save that would leave a project's `default` policy doing nothing."""


def _check_default(name: str, config: dict) -> None:
    # `default` is what every new run gets unless its launcher picks another:
    # turning it off would silently take the watchdog away from everyone.
    if name != DEFAULT_NAME:
        return
    if config.get("enabled") is False:
        raise PolicyProtected("the default policy cannot be disabled: every new run uses it. Save a policy under "
                              "another name to run without the watchdog.")
    if not (config.get("ladder") or {}).get("tiers", True):
        raise PolicyProtected("the default policy needs at least one tier (hint, redirect or stop).")


def policy_config(policy: WatchdogPolicy | dict) -> dict:
    """What Policy.config stores of a watchdog policy (or of its to_dict())."""
    data = policy if isinstance(policy, dict) else policy.to_dict()
    return {k: v for k, v in data.items() if k not in COLUMNS}


def policy_version_save(*, project_id: int, name: str, config: dict, description: str = "", created_by=None,
                        new: bool = False) -> Policy:
    """Save `config` as the next version of policy `name` (version 1 when new).

    The latest version's row is locked, so two saves at once get consecutive
    versions or, when both start from nothing, one IntegrityError (the unique
    (project, name, version) constraint). `new` refuses a name that exists
    (PolicyExists); `default` cannot be turned off (PolicyProtected).
    """
    config = policy_config(config)
    _check_default(name, config)
    with transaction.atomic():
        last = (Policy.objects.select_for_update().filter(project_id=project_id, name=name)
                .order_by("-version").first())
        if new and last is not None:
            raise PolicyExists(f"a policy named {name!r} exists")
        return Policy.objects.create(project_id=project_id, name=name, version=(last.version + 1) if last else 1,
                                     config=config, description=description, created_by=created_by)


def builtin_policies_load(*, project_id: int) -> None:
    """The built-in policies (`default` among them) as a project's first versions; idempotent."""
    for policy in BUILTIN_POLICIES.values():
        Policy.objects.get_or_create(project_id=project_id, name=policy.name, version=policy.version,
                                     defaults={"config": policy_config(policy), "description": policy.description})
