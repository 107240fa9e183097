from __future__ import annotations

import time
from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError

from agentlab.projects.services import project_named
from runs.agent.strategies import REACT, STRATEGIES
from runs.core.models import Policy, Run, Task
from runs.core.queue import QueueUnavailable
from runs.evaluations.selectors import evaluation_progress, evaluation_report
from runs.evaluations.services import EvaluationError, EvaluationSpec, evaluation_create


def _tasks(value: str) -> list[Task]:
    """A suite name ("builtin") or task slugs, comma-separated."""
    names = [v.strip() for v in value.split(",") if v.strip()]
    by_suite = list(Task.objects.filter(suite__in=names).order_by("slug"))
    by_slug = {t.slug: t for t in Task.objects.filter(slug__in=names)}
    unknown = [n for n in names if n not in by_slug and not any(t.suite == n for t in by_suite)]
    if unknown:
        raise CommandError(f"no task or suite named {', '.join(unknown)} (manage.py loaddemo loads 'builtin')")
    return list({t.pk: t for t in [*by_suite, *by_slug.values()]}.values())


def _cost_budget(value: str | None) -> Decimal | None:
    """--max-cost as the form takes it: above 0 (zero is refused like a zero
    step budget), at most 100000, four decimals."""
    if value is None:
        return None
    try:
        cost = Decimal(value)
    except InvalidOperation:
        raise CommandError(f"--max-cost must be a number of dollars, not {value!r}") from None
    # NaN and infinity compare as nothing sensible; the form refuses them too.
    if not cost.is_finite() or not Decimal("0.0001") <= cost <= 100_000:
        raise CommandError("--max-cost must be at least 0.0001 and at most 100000 (dollars)")
    return cost.quantize(Decimal("0.0001"))


class Command(BaseCommand):
    help = ("Queue an evaluation: tasks × strategies × reruns under one budget (Celery workers run it); "
            "--wait prints the figures per strategy.")

    def add_arguments(self, parser):
        parser.add_argument("--tasks", required=True, help="a suite name (builtin) or task slugs, comma-separated")
        parser.add_argument("--model", default="sim", help="sim, local, or a model name on OPENAI_BASE_URL")
        parser.add_argument("--strategies", default=",".join(s for s in STRATEGIES if s != "react_off"),
                            help=f"comma-separated, of: {', '.join(STRATEGIES)}")
        parser.add_argument("--reruns", type=int, default=5)
        parser.add_argument("--base-url", default="", help="the model endpoint, when not the configured one")
        parser.add_argument("--mode", choices=["tools", "text"], default=None)
        parser.add_argument("--temperature", type=float, default=0.0)
        parser.add_argument("--max-steps", type=int, default=10)
        parser.add_argument("--max-tokens", type=int, default=20_000)
        parser.add_argument("--max-seconds", type=int, default=120)
        parser.add_argument("--max-cost", default=None,
                            help="cost budget per run in dollars at the price table's prices (default: none)")
        parser.add_argument("--policy", default="default", help="watchdog policy of the 'react' strategy")
        parser.add_argument("--seed", type=int, default=None)
        parser.add_argument("--name", default="")
        parser.add_argument("--project", default=None, help="project slug (default: the only project)")
        parser.add_argument("--wait", action="store_true", help="wait for the runs to end and print the figures")
        parser.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait with --wait")

    def handle(self, *args, **opts):
        model = opts["model"]
        provider = model if model in ("sim", "local") else Run.Provider.OPENAI
        mode = opts["mode"] or ("text" if provider == "local" else "tools")
        if provider == "local" and mode == "tools":
            raise CommandError("the local model has no tool calling: use --mode text")
        try:
            project = project_named(opts["project"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        max_cost = _cost_budget(opts["max_cost"])
        tasks = _tasks(opts["tasks"])
        strategies = [s.strip() for s in opts["strategies"].split(",") if s.strip()]
        policy = None
        if REACT in strategies:
            policy = Policy.objects.for_project(project.pk).filter(name=opts["policy"]).order_by("-version").first()
            if policy is None:
                raise CommandError(f"unknown policy {opts['policy']!r} for the 'react' strategy")
        spec = EvaluationSpec(
            tasks=tasks, strategies=strategies, reruns=opts["reruns"], provider=provider,
            model_name={"sim": "sim", "local": "gemma-3-270m"}.get(model, model), base_url=opts["base_url"], mode=mode,
            temperature=opts["temperature"], max_steps=opts["max_steps"], max_tokens=opts["max_tokens"],
            max_seconds=opts["max_seconds"], max_cost=max_cost, policy=policy, seed=opts["seed"], name=opts["name"],
        )
        try:
            evaluation = evaluation_create(owner=None, project=project, spec=spec)
        except (EvaluationError, QueueUnavailable) as exc:
            raise CommandError(str(exc)) from exc
        progress = evaluation_progress(evaluation)
        self.stdout.write(f"evaluation {evaluation.pk}: {progress['total']} runs queued "
                          f"({evaluation.get_absolute_url()})")
        if not opts["wait"]:
            return
        deadline = time.monotonic() + opts["timeout"]
        while evaluation_progress(evaluation)["live"]:
            if time.monotonic() > deadline:
                raise CommandError("timed out waiting; is a Celery worker running?")
            time.sleep(0.5)
        report = evaluation_report(evaluation)
        for s in report.strategies:
            rate = "—" if s.success.value is None else f"{s.success.value:.0%}"
            steps = "—" if s.steps.value is None else f"{s.steps.value:.1f}"
            self.stdout.write(f"{s.strategy:15} success {rate:>5} ({s.success.count}/{s.success.n}), "
                              f"mean steps {steps}, errors {s.errors}")
