"""What a drill asks of the private stack through Django, in a process of its
own (the test process's Django is bound to the shared test database):
`python -m tests.drills.cli setup` migrates and loads the demo suite;
`python -m tests.drills.cli launch N [STEPS]` launches N long simulated runs
(12 model turns, or STEPS) through the same service as the New-run form and
prints their ids as JSON;
`python -m tests.drills.cli stop ID` presses Stop on a run;
`python -m tests.drills.cli token` prints an API token of a reviewer of the
demo project (an OTLP exporter's)."""

from __future__ import annotations

import json
import sys
import time

import django


def main(argv: list[str]) -> None:
    django.setup()
    from django.core.management import call_command

    if argv[0] == "setup":
        call_command("migrate", verbosity=0)
        call_command("loaddemo", verbosity=0)
        return
    from agentlab.projects.models import Project
    from runs.core.models import Run, Task
    from runs.launch import services

    if argv[0] == "token":
        from django.contrib.auth.models import User

        from agentlab.projects.models import Membership, Role
        from tracing.store.ingest.writes import token_create

        user = User.objects.get_or_create(username="drill-exporter")[0]
        project = Project.objects.order_by("pk").first()
        Membership.objects.get_or_create(user=user, project=project, defaults={"role": Role.REVIEWER})
        print(token_create(user=user, project_id=project.pk, name="drill")[1])
        return
    if argv[0] == "stop":
        run = Run.objects.get(pk=int(argv[1]))
        started = time.perf_counter()
        run = services.run_stop(run=run)
        print(json.dumps({"status": run.status, "stopped_by": run.stopped_by, "reason": run.reason,
                          "seconds": time.perf_counter() - started}))
        return
    count = int(argv[1])
    max_steps = int(argv[2]) if len(argv) > 2 else 12
    task = Task.objects.get(slug="tollby-playhouse-seats")
    project = Project.objects.order_by("pk").first()  # loaddemo's "demo"
    ids = []
    for i in range(count):
        # Rephrasing in circles with the watchdog off: it goes on until its
        # step budget, a model turn every `latency_ms`.
        spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim", mode="tools",
                                temperature=1.0, max_steps=max_steps, max_tokens=1_000_000, seed=100 + i,
                                settings={"sim": {"rephrase": 1.0, "early_finish": 0.0, "ignore_hint": 1.0,
                                                  "latency_ms": 250}})
        ids += [run.pk for run in services.runs_launch(owner=None, project=project, spec=spec)]
    print(json.dumps(ids))


if __name__ == "__main__":
    main(sys.argv[1:])
