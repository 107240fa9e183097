from __future__ import annotations

import time
from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError

from agentlab.projects.services import project_named
from runs.core.models import Policy, Run, Task
from runs.core.queue import QueueUnavailable
from runs.launch import services
from tracing.core.label_limits import LabelError, clean_labels, parse_metadata_text


class Command(BaseCommand):
    help = "Queue runs of a built-in task (a Celery worker executes them); --wait prints outcomes."

    def add_arguments(self, parser):
        parser.add_argument("--task", required=True, help="task slug")
        parser.add_argument("--model", default="sim", help="sim, local, or a model name on OPENAI_BASE_URL")
        parser.add_argument("--mode", choices=["tools", "text"], default=None)
        parser.add_argument("--reruns", type=int, default=1)
        parser.add_argument("--project", default=None, help="project slug (default: the only project)")
        parser.add_argument("--seed", type=int, default=None)
        parser.add_argument("--temperature", type=float, default=0.7)
        parser.add_argument("--max-steps", type=int, default=15)
        parser.add_argument("--max-tokens", type=int, default=20_000)
        parser.add_argument("--max-cost", type=Decimal, default=None,
                            help="cost budget in US dollars at the price table's prices (/prices/)")
        parser.add_argument("--policy", default="default", help="watchdog policy name (latest version), or 'off'")
        parser.add_argument("--tag", action="append", default=[], help="a tag for the runs (repeat for more)")
        parser.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE",
                            help="a metadata pair for the runs (repeat for more)")
        parser.add_argument("--session", default="", help="a session id: runs sharing it are listed together")
        parser.add_argument("--wait", action="store_true", help="wait for the runs to end and print outcomes")
        parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait with --wait")

    def handle(self, *args, **opts):
        try:
            project = project_named(opts["project"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        task = Task.objects.for_project(project.pk).filter(slug=opts["task"]).first()
        if task is None:
            raise CommandError(f"unknown task {opts['task']!r} (python manage.py loaddemo loads the built-in suite)")
        if not 1 <= opts["reruns"] <= 50:
            raise CommandError("--reruns must be between 1 and 50")
        if not 1 <= opts["max_steps"] <= 200:
            raise CommandError("--max-steps must be between 1 and 200")
        if not 0 <= opts["temperature"] <= 2:
            raise CommandError("--temperature must be between 0 and 2")
        if opts["max_cost"] is not None and not (0 < opts["max_cost"] <= 100_000):
            raise CommandError("--max-cost must be above 0 and at most 100000 (dollars)")
        model = opts["model"]
        provider = model if model in ("sim", "local") else Run.Provider.OPENAI
        mode = opts["mode"] or ("text" if provider == "local" else "tools")
        if provider == "local" and mode == "tools":
            raise CommandError("the local model has no tool calling: use --mode text")
        policy = None
        if opts["policy"] != "off":
            policy = Policy.objects.for_project(project.pk).filter(name=opts["policy"]).order_by("-version").first()
            if policy is None:
                raise CommandError(f"unknown policy {opts['policy']!r} (or 'off')")
        try:
            labels = clean_labels(tags=opts["tag"], metadata=parse_metadata_text("\n".join(opts["meta"])),
                                  session_id=opts["session"])
        except LabelError as exc:
            raise CommandError(str(exc)) from exc
        spec = services.RunSpec(
            labels=labels,
            policy=policy,
            task=task,
            prompt=task.prompt,
            provider=provider,
            model_name={"sim": "sim", "local": "gemma-3-270m"}.get(model, model),
            mode=mode,
            temperature=opts["temperature"],
            max_steps=opts["max_steps"],
            max_tokens=opts["max_tokens"],
            max_cost=opts["max_cost"],
            seed=opts["seed"],
        )
        try:
            runs = services.runs_launch(owner=None, project=project, spec=spec, reruns=opts["reruns"])
        except QueueUnavailable as exc:
            raise CommandError(str(exc)) from exc
        for run in runs:
            self.stdout.write(f"run {run.pk} queued")
        if not opts["wait"]:
            return
        ids = [r.pk for r in runs]
        deadline = time.monotonic() + opts["timeout"]
        while Run.objects.filter(pk__in=ids, status__in=Run.LIVE_STATUSES).exists():
            if time.monotonic() > deadline:
                raise CommandError("timed out waiting; is a Celery worker running?")
            time.sleep(0.5)
        for run in Run.objects.filter(pk__in=ids).order_by("pk"):
            verdict = {True: "correct", False: "wrong", None: "unscored"}[run.success]
            self.stdout.write(
                f"run {run.pk}: {run.status} in {run.step_count} steps, answer {run.final_answer!r} ({verdict})"
                + (f" — {run.reason}" if run.reason else "")
            )
