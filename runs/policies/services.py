"""Policy versioning: a save is always the next version of its name."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from runs.policies.models import Policy
from tracing.watchdog import Policy as WatchdogPolicy

# Keys of a watchdog policy that live in their own columns, not in Policy.config.
COLUMNS = ("name", "version", "description")


class PolicyExists(IntegrityError):
    """A new policy was asked for under a name that has versions already."""


def policy_config(policy: WatchdogPolicy | dict) -> dict:
    """What Policy.config stores of a watchdog policy (or of its to_dict())."""
    data = policy if isinstance(policy, dict) else policy.to_dict()
    return {k: v for k, v in data.items() if k not in COLUMNS}


def policy_version_save(*, name: str, config: dict, description: str = "", created_by=None,
                        new: bool = False) -> Policy:
    """Save `config` as the next version of policy `name` (version 1 when new).

    The latest version's row is locked, so two saves at once get consecutive
    versions or, when both start from nothing, one IntegrityError (the unique
    (name, version) constraint). `new` refuses a name that exists (PolicyExists).
    """
    with transaction.atomic():
        last = Policy.objects.select_for_update().filter(name=name).order_by("-version").first()
        if new and last is not None:
            raise PolicyExists(f"a policy named {name!r} exists")
        return Policy.objects.create(name=name, version=(last.version + 1) if last else 1, config=policy_config(config),
                                     description=description, created_by=created_by)
