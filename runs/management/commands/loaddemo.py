from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from agentlab.projects.models import Membership, Project, Role
from runs.agent.sim_server import sim_client
from runs.agent.suite import load_suite
from runs.core.models import Document, Policy, Run, Task
from runs.launch import services
from runs.launch.execution import run_execute
from runs.policies.services import builtin_policies_load
from tracing.core.watchdog import BUILTIN_POLICIES

DEMO_PROJECT = "demo"


class Command(BaseCommand):
    help = ("Load the built-in task suite (shared by every project), its corpus, a demo project with the built-in "
            "watchdog policies, and a demo user who is its admin (idempotent).")

    def add_arguments(self, parser):
        parser.add_argument("--runs", type=int, default=0,
                            help="when there are no runs yet, execute this many simulated runs in-process so the "
                                 "pages have data")

    def handle(self, *args, **opts):
        demo, project = self._load()
        # After the suite is committed: each demo run commits its own steps.
        if opts["runs"] and not Run.objects.filter(project=project).exists():
            self._demo_runs(opts["runs"], demo, project)

    @transaction.atomic
    def _load(self):
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
        project, _ = Project.objects.get_or_create(slug=DEMO_PROJECT, defaults={"name": "Demo"})
        builtin_policies_load(project_id=project.pk)
        user_model = get_user_model()
        demo, created = user_model.objects.get_or_create(username="demo")
        # The demo account is an ordinary user, the admin of its project only:
        # what it can do is what a team admin can, nothing site-wide.
        demo.is_staff = demo.is_superuser = False
        if created:
            demo.set_password("demo")
        demo.save()
        Membership.objects.update_or_create(user=demo, project=project, defaults={"role": Role.ADMIN})
        self.stdout.write(f"loaded {len(tasks)} tasks, {len(documents)} documents, "
                          f"{len(BUILTIN_POLICIES)} policies; project {project.slug}, user demo/demo (its admin)")
        return demo, project

    def _demo_runs(self, count: int, owner, project: Project) -> None:
        tasks = list(Task.objects.for_project(project.pk))
        policy = Policy.objects.for_project(project.pk).latest_versions().filter(name="default").first()
        for i in range(count):
            task = tasks[i % len(tasks)]
            # Every other run gets the behaviour knobs that make the failure modes show.
            knobs = {"rephrase": 0.8, "forget": 0.3, "wrong_premise": 0.5} if i % 2 else {}
            spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim",
                                    mode="tools" if i % 3 else "text", temperature=0.7, max_steps=15,
                                    max_tokens=20000, seed=1000 + i, settings={"sim": knobs}, policy=policy)
            run = services.run_create(owner=owner, project=project, spec=spec)
            # The in-process sim transport: the demo data exists before any server is up.
            run_execute(run_id=run.pk, client=sim_client())
        self.stdout.write(f"executed {count} simulated demo runs")
