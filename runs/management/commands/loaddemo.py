from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from runs.agent.suite import load_suite
from runs.models import Document, Policy, Task
from tracing.watchdog import BUILTIN_POLICIES


class Command(BaseCommand):
    help = "Load the built-in task suite, its corpus, the built-in watchdog policies and a demo user (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--runs", type=int, default=0,
                            help="also execute this many simulated runs in-process so the pages have data")

    @transaction.atomic
    def handle(self, *args, **opts):
        tasks, documents = load_suite()
        for t in tasks:
            Task.objects.update_or_create(
                slug=t["slug"],
                defaults={
                    "title": t["title"],
                    "prompt": t["prompt"],
                    "gold_answer": t["gold"],
                    "scoring": t["scoring"],
                    "tolerance": t.get("tolerance", 0.0),
                    "suite": t.get("suite", "builtin"),
                    "lang": t.get("lang", "en"),
                    "trap": t.get("trap", "")[:200],
                },
            )
        for d in documents:
            doc = Document.objects.filter(slug=d["slug"]).first() or Document(slug=d["slug"])
            doc.title, doc.body, doc.lang = d["title"], d["body"], d.get("lang", "en")
            doc.flags = {"fault": d["fault"]} if d.get("fault") else {}
            doc.save()  # save() refreshes the search tokens
        for policy in BUILTIN_POLICIES.values():
            config = policy.to_dict()
            for key in ("name", "version", "description"):
                config.pop(key)
            Policy.objects.get_or_create(
                name=policy.name, version=policy.version, defaults={"config": config, "description": policy.description}
            )
        user_model = get_user_model()
        demo, created = user_model.objects.get_or_create(username="demo", defaults={"is_staff": True, "is_superuser": True})
        if created:
            demo.set_password("demo")
            demo.save()
        self.stdout.write(f"loaded {len(tasks)} tasks, {len(documents)} documents, "
                          f"{len(BUILTIN_POLICIES)} policies; user demo/demo")
        if opts["runs"]:
            transaction.on_commit(lambda: self._demo_runs(opts["runs"], demo))

    def _demo_runs(self, count: int, owner) -> None:
        from runs import services
        from runs.agent.sim_server import sim_client

        tasks = list(Task.objects.all())
        for i in range(count):
            task = tasks[i % len(tasks)]
            spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim",
                                    mode="tools" if i % 2 == 0 else "text", temperature=0.7, max_steps=15,
                                    max_tokens=20000, seed=1000 + i,
                                    policy=Policy.objects.filter(name="default").first())
            run = services.run_create(owner=owner, spec=spec)
            # The in-process sim transport: the demo data exists before any server is up.
            services.run_execute(run_id=run.pk, client=sim_client())
        self.stdout.write(f"executed {count} simulated demo runs")
