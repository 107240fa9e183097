"""The models every feature reads: watchdog policies, tasks, the search corpus,
rerun groups and runs (what a run is and what it ran on), and the sandbox the
demo's writing tool writes to. They keep the `runs` app label and their tables."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import F, Q
from django.db.models.fields.json import KeyTextTransform
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.translation import gettext_lazy as _

from agentlab.projects.models import Project
from runs.agent.loop import Price
from runs.core.prices import price_of
from tracing.core.normalize import search_tokens
from tracing.core.steps import Trajectory
from tracing.core.watchdog import Policy as WatchdogPolicy


class PolicyQuerySet(models.QuerySet):
    def for_project(self, project_id: int | None) -> PolicyQuerySet:
        return self.filter(project_id=project_id)

    def latest_versions(self) -> PolicyQuerySet:
        return self.order_by("name", "-version").distinct("name")


class Policy(models.Model):
    """A named, versioned watchdog policy. Editing saves a new version, so a run
    always points at the exact thresholds it ran under."""

    # Each project has its own policies (and its own `default`).
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="policies")
    name = models.SlugField(max_length=80)
    version = models.PositiveIntegerField(default=1)
    description = models.CharField(max_length=300, blank=True)
    # tracing.core.watchdog.Policy.to_dict() without name/version: thresholds,
    # windows, ladder, enabled, use_complexity.
    config = models.JSONField(default=dict)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = PolicyQuerySet.as_manager()

    class Meta:
        ordering = ["name", "-version"]
        constraints = [models.UniqueConstraint(fields=["project", "name", "version"], name="policy_name_version_uniq")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    def as_policy(self):
        return WatchdogPolicy.from_dict(
            {**self.config, "name": self.name, "version": self.version, "description": self.description}
        )


class TaskQuerySet(models.QuerySet):
    def for_project(self, project_id: int | None) -> TaskQuerySet:
        return self.filter(Q(project_id=project_id) | Q(project__isnull=True))


class Task(models.Model):
    class Scoring(models.TextChoices):
        EXACT = "exact", _("normalised exact match")
        CONTAINS = "contains", _("answer contains gold")
        NUMERIC = "numeric", _("numeric within tolerance")

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    prompt = models.TextField()
    gold_answer = models.CharField(max_length=500, blank=True)
    scoring = models.CharField(max_length=10, choices=Scoring.choices, default=Scoring.EXACT)
    tolerance = models.FloatField(default=0.0)
    suite = models.CharField(max_length=50, default="builtin")
    lang = models.CharField(max_length=8, default="en")
    trap = models.CharField(max_length=200, blank=True)
    # No project: a shared built-in task every project may run.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, null=True, blank=True, related_name="tasks")

    objects = TaskQuerySet.as_manager()

    class Meta:
        ordering = ["suite", "slug"]

    def __str__(self) -> str:
        return self.slug

    def as_suite_dict(self) -> dict:
        return {"slug": self.slug, "gold": self.gold_answer, "scoring": self.scoring, "tolerance": self.tolerance}


class Document(models.Model):
    """The corpus behind the `search` tool; admins may add their own."""

    slug = models.SlugField(max_length=120, unique=True)
    title = models.CharField(max_length=300)
    body = models.TextField()
    lang = models.CharField(max_length=8, default="en")
    # Trap behaviour for observation governance (timeout_first, junk, injection).
    flags = models.JSONField(default=dict, blank=True)
    # Words and CJK bigrams, space-separated: Postgres has no Chinese parser, so
    # the `simple` configuration indexes what we segment ourselves.
    search_tokens = models.TextField(blank=True, editable=False)

    class Meta:
        ordering = ["slug"]
        indexes = [
            GinIndex(
                models.Func(
                    models.Value("simple"),
                    "search_tokens",
                    function="to_tsvector",
                    output_field=models.TextField(),
                ),
                name="document_search_gin",
            )
        ]

    def __str__(self) -> str:
        return self.slug

    def save(self, *args, **kwargs) -> None:
        # Words and CJK bigrams (tracing.core.normalize), the units the search matches on.
        self.search_tokens = " ".join(dict.fromkeys(search_tokens(f"{self.title} {self.body}")))
        super().save(*args, **kwargs)


def run_goal(prompt: str, settings: dict | None) -> str:
    """The task as the agent was shown it, as tracing.core.steps.Trajectory.goal
    reads it: an imported run keeps its trajectory's meta in its settings (the
    environment's opening description, for ALFWorld). The watchdog, the
    analysis and what-if judge a run against this goal, as the import and
    `python -m tracing.detect` do."""
    meta = (settings or {}).get("meta")
    return Trajectory(run_id="", task=prompt, steps=[], meta=meta if isinstance(meta, dict) else {}).goal


class RerunGroup(models.Model):
    """Runs of the same prompt and settings launched together (or saved as a set)."""

    name = models.CharField(max_length=200, blank=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="groups")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name or f"group {self.pk}"


class RunQuerySet(models.QuerySet):
    def for_project(self, project_id: int | None) -> RunQuerySet:
        # Who may see which project is decided in runs.core.access, the one
        # gate the views ask; this only narrows.
        return self.filter(project_id=project_id) if project_id is not None else self.none()

    def live(self) -> RunQuerySet:
        return self.filter(status__in=Run.LIVE_STATUSES)


class Run(models.Model):
    class Status(models.TextChoices):
        """Where the run is in its life; whether its answer was right is `success`.

        A run that ended on its own (an answer, a budget, a watchdog stop) is
        `finished` whatever its outcome; `stopped` is a person's Stop; `error`
        is the infrastructure failing (the model endpoint, the worker).
        """

        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        FINISHED = "finished", _("Finished")
        STOPPED = "stopped", _("Stopped")
        ERROR = "error", _("Error")
        # Paused on a call to a writing tool until a reviewer decides (runs/approvals).
        AWAITING = "awaiting", _("awaiting approval")

    class Mode(models.TextChoices):
        TOOLS = "tools", _("Tools")
        TEXT = "text", _("Text")

    class Provider(models.TextChoices):
        SIM = "sim", _("simulated")
        LOCAL = "local", _("local (Gemma 3 270M)")
        OPENAI = "openai", _("OpenAI-compatible endpoint")
        IMPORT = "import", _("imported trace")

    LIVE_STATUSES = (Status.QUEUED, Status.RUNNING)

    task = models.ForeignKey(Task, on_delete=models.PROTECT, null=True, blank=True, related_name="runs")
    prompt = models.TextField()
    group = models.ForeignKey(RerunGroup, on_delete=models.SET_NULL, null=True, blank=True, related_name="runs")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    # PROTECT: a project's runs go before the project does, never silently with it.
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="runs")
    source = models.CharField(max_length=40, default="agentlab")
    # A fork continues `parent` from its step `fork_from`: the parent's steps
    # with index < fork_from are read from the parent (never copied); the
    # fork's own steps start at fork_from (an edited step first, if any).
    parent = models.ForeignKey("self", on_delete=models.CASCADE, null=True, blank=True, related_name="forks")
    fork_from = models.PositiveIntegerField(null=True, blank=True)

    provider = models.CharField(max_length=10, choices=Provider.choices, default=Provider.SIM)
    model_name = models.CharField(max_length=120, default="sim")
    base_url = models.CharField(max_length=300, blank=True)
    # Temperature and budgets are None when unknown (imported and ingested
    # runs): shown as "—", never a made-up value.
    temperature = models.FloatField(default=0.0, null=True, blank=True)
    mode = models.CharField(max_length=5, choices=Mode.choices, default=Mode.TOOLS)
    max_steps = models.PositiveIntegerField(default=30, null=True, blank=True)
    max_tokens = models.PositiveIntegerField(default=20000, null=True, blank=True)
    # Cost budget in US dollars at the price table's prices; None: none.
    max_cost = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    # Simulated-model knobs and other per-run settings (fault injection...).
    settings = models.JSONField(default=dict, blank=True)
    # The new columns have database defaults too, so rows written by raw SQL
    # (COPY in benches, writers from before them) stay valid.
    # What the agent was told before its first step (tracing.core.steps.parse_context:
    # {"system": str, "tools": [...]}); evidence for the detectors.
    context = models.JSONField(default=dict, db_default={}, blank=True)
    # The id of an imported run in its source file: (owner, source, this) is
    # unique, so importing the same file again finds the runs it made.
    source_run_id = models.CharField(max_length=200, blank=True, default="", db_default="")
    # Free tags, key/value metadata and the session the run belongs to
    # (tracing.core.label_limits holds the limits; every way in validates with it).
    tags = ArrayField(models.CharField(max_length=64), default=list, db_default=[], blank=True)
    metadata = models.JSONField(default=dict, db_default={}, blank=True)
    session_id = models.CharField(max_length=200, blank=True, default="", db_default="")
    # No policy: the watchdog is off (signals are still computed and shown).
    policy = models.ForeignKey(Policy, on_delete=models.PROTECT, null=True, blank=True, related_name="runs")

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    stop_requested = models.BooleanField(default=False)
    stopped_by = models.CharField(max_length=20, blank=True)
    reason = models.TextField(blank=True)
    final_answer = models.TextField(blank=True)
    success = models.BooleanField(null=True)
    # The first-guess layer of a failed run (tracing.core.attribution.Attribution.to_dict:
    # layer, step, reason, evidence, rule, basis); {} for a run that did not fail.
    attribution = models.JSONField(default=dict, db_default={}, blank=True)

    created_at = models.DateTimeField(auto_now_add=True, db_index=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    celery_id = models.CharField(max_length=64, blank=True)
    # The lease of the worker executing the run (runs.launch.lease): refreshed
    # every RUN_HEARTBEAT_S while it holds the run's advisory lock. How many
    # times a run nobody held was taken up again from its stored steps.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    resumes = models.PositiveIntegerField(default=0, db_default=0)

    # Summary columns, kept current by the recorder at write time so lists and
    # dashboards never scan steps.
    step_count = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    # Interruptions (watchdog tiers, budget truncation, user stop), kept by the
    # recorder so the list can filter on them without reading steps.
    intervention_count = models.PositiveIntegerField(default=0)
    intervention_detectors = ArrayField(models.CharField(max_length=40), default=list, blank=True)
    intervention_tiers = ArrayField(models.CharField(max_length=10), default=list, blank=True)
    # Context pressure, appended by the recorder: the prompt size of each model
    # turn in order, and the step indices of observations truncated for the
    # context. The run page's and the dashboard's charts read these, not steps.
    context_steps = ArrayField(models.PositiveIntegerField(), default=list, blank=True)
    context_tokens = ArrayField(models.PositiveIntegerField(), default=list, blank=True)
    truncated_steps = ArrayField(models.PositiveIntegerField(), default=list, blank=True)
    # The first step where the reasoning stopped tracking the last observation
    # (tracing.core.anchoring), computed when the run ends or is imported.
    first_anchor_break = models.IntegerField(null=True, blank=True)
    anchor_reason = models.TextField(blank=True)
    anchor_evidence = models.JSONField(default=dict, blank=True)
    # Worth a look but not a break (tracing.core.anchoring FINDINGS): [{"step",
    # "pattern", "reason", ...}], written with the anchor break.
    anchor_findings = models.JSONField(default=list, db_default=[], blank=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        indexes = [
            # The run list: newest first, keyset on (created_at, id).
            models.Index(fields=["-created_at", "-id"], name="run_list_idx"),
            # Every list is a project's: newest first within it.
            models.Index(fields=["project", "-created_at", "-id"], name="run_project_list_idx"),
            # The list sorted by size: keysets on (steps, id) and (tokens, id).
            models.Index(fields=["step_count", "id"], name="run_steps_idx"),
            models.Index(models.F("prompt_tokens") + models.F("completion_tokens"), "id", name="run_tokens_idx"),
            models.Index(fields=["status", "-created_at", "-id"], name="run_status_idx"),
            models.Index(fields=["task", "-created_at", "-id"], name="run_task_idx"),
            models.Index(fields=["model_name", "-created_at", "-id"], name="run_model_idx"),
            # "had an intervention of detector X / tier Y": array containment.
            GinIndex(fields=["intervention_detectors"], name="run_detectors_gin"),
            GinIndex(fields=["intervention_tiers"], name="run_tiers_gin"),
            models.Index(fields=["-created_at", "-id"], name="run_anchor_break_idx",
                         condition=Q(first_anchor_break__isnull=False)),
            # The list's "lost its anchor: <pattern>" filter, newest first.
            models.Index(KeyTextTransform("pattern", "anchor_evidence"), F("created_at").desc(), F("id").desc(),
                         name="run_anchor_pattern_idx", condition=Q(first_anchor_break__isnull=False)),
            # Filters on a tag / a metadata key=value: containment, served by GIN.
            GinIndex(fields=["tags"], name="run_tags_gin"),
            GinIndex(fields=["metadata"], name="run_metadata_gin", opclasses=["jsonb_path_ops"]),
            # The search box's "run named X" lookup by an imported run's id.
            models.Index(fields=["source_run_id"], name="run_source_run_id_idx", condition=~Q(source_run_id="")),
            # A session's runs, oldest first (the session page).
            models.Index(fields=["session_id", "created_at", "id"], name="run_session_idx", condition=~Q(session_id="")),
            # Workers and the live views look only at unfinished runs.
            models.Index(fields=["status"], name="run_live_idx", condition=Q(status__in=["queued", "running"])),
        ]
        constraints = [
            # One run per (project, owner, source, id in the file): imports are idempotent.
            # NULLS NOT DISTINCT: runs imported without an owner (the command
            # line) deduplicate among themselves too.
            models.UniqueConstraint(fields=["project", "owner", "source", "source_run_id"], name="run_source_run_uniq",
                                    condition=~Q(source_run_id=""), nulls_distinct=False),
            models.CheckConstraint(condition=Q(parent__isnull=True) | Q(fork_from__isnull=False), name="run_fork_has_step"),
            models.CheckConstraint(condition=Q(max_steps__gte=1) & Q(max_steps__lte=1000), name="run_max_steps_range"),
            models.CheckConstraint(condition=Q(temperature__gte=0) & Q(temperature__lte=2), name="run_temperature_range"),
            models.CheckConstraint(condition=Q(max_cost__gt=0), name="run_max_cost_positive"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk}"

    def get_absolute_url(self) -> str:
        return reverse("runs:detail", args=[self.pk])

    @property
    def is_live(self) -> bool:
        return self.status in self.LIVE_STATUSES

    @property
    def is_simulated(self) -> bool:
        return self.provider == self.Provider.SIM

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @cached_property
    def price(self) -> Price:
        """Its model's price now (a list sets it from one read of the table)."""
        return price_of(self.provider, self.model_name)

    @property
    def cost(self) -> float:
        return self.price.cost(self.prompt_tokens, self.completion_tokens)

    @property
    def goal(self) -> str:
        return run_goal(self.prompt, self.settings)

    @property
    def duration_s(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class SandboxMessage(models.Model):
    """What the demo's `send_message` tool sends: a table, not a real outbox."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="+")
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"message {self.pk} of run {self.run_id}"
