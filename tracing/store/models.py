from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Lookup

from agentlab.projects.models import Project
from tracing.core.packing import unpack
from tracing.core.steps import ROLES, is_reply
from tracing.core.steps import Step as StepRecord

# The runs tracing records into: the owner's model, named as Django names a
# model of another app (like the user model), never imported (DESIGN.md 3). What
# tracing writes to those rows goes through tracing.store.run_sink.
RUN_MODEL = "runs.Run"


class StepManager(models.Manager):
    def get_queryset(self) -> models.QuerySet:
        # The search column serves the index only: no page reads it back, and
        # a 300-step page would otherwise fetch every step's tsvector too.
        return super().get_queryset().defer("search")


class Step(models.Model):
    """One Thought, Action, Observation, Final, Intervention or Error of a run.

    Written as it happens, one commit per step; (run, index) is unique, so a
    re-delivered task can neither duplicate nor skip an index.
    """

    class Kind(models.TextChoices):
        THOUGHT = "thought"
        ACTION = "action"
        OBSERVATION = "observation"
        FINAL = "final"
        INTERVENTION = "intervention"
        ERROR = "error"

    class Role(models.TextChoices):
        """Whose words the step carries (tracing.core.steps.ROLES; a test keeps the two equal)."""

        ASSISTANT = "assistant"
        TOOL = "tool"
        USER = "user"
        SYSTEM = "system"
        WATCHDOG = "watchdog"

    # No index of its own: the unique (run, index) serves every "steps of a run"
    # query. A plain (run_id) index beside it misled the planner on a run ANALYZE
    # had not seen yet: it read all the run's steps and sorted them (issue 31).
    run = models.ForeignKey(RUN_MODEL, on_delete=models.CASCADE, related_name="steps", db_index=False)
    index = models.PositiveIntegerField()
    kind = models.CharField(max_length=12, choices=Kind.choices)
    # Stored resolved (tracing.core.steps.role_of), so pages and queries never infer
    # it again. The database default covers writers that predate the column.
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.ASSISTANT, db_default=Role.ASSISTANT)
    text = models.TextField(blank=True)
    tool = models.CharField(max_length=120, blank=True)
    args = models.JSONField(null=True, blank=True)
    meta = models.JSONField(default=dict, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)
    # What the run list's search finds the step by (tracing.core.stepsearch): its
    # tokens as a tsvector. Writers leave it NULL; tracing.store.step_indexer
    # fills it within seconds (searches read a NULL row's raw text meanwhile).
    search = SearchVectorField(null=True, blank=True, editable=False)

    objects = StepManager()

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="step_run_index_uniq")]
        indexes = [
            # The run list's text search: steps containing every query token.
            GinIndex(fields=["search"], name="step_search_gin"),
            # The steps the indexer has yet to reach, in id order: a few seconds'
            # worth, so finding them (indexer and search fallback) stays cheap.
            models.Index(fields=["id"], name="step_unindexed_idx", condition=models.Q(search__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} step {self.index} ({self.kind})"

    def to_record(self) -> StepRecord:
        return StepRecord(
            index=self.index,
            kind=self.kind,
            text=self.text,
            tool=self.tool or None,
            args=self.args,
            meta=self.meta,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            latency_ms=self.latency_ms,
            role=self.role if self.role in ROLES else None,
        )

    @property
    def is_reply(self) -> bool:
        """The agent addressing the user. is_reply reads only kind and tool, which
        this row has too: one rule for the detectors and the page."""
        return is_reply(self)  # type: ignore[arg-type]

    @property
    def label(self) -> str:
        """What the timeline's kind column says: a dialogue reads as user turns
        and replies, a system note as such; everything else by its kind."""
        if self.role in (self.Role.USER, self.Role.SYSTEM):
            return self.role
        if self.is_reply:
            return "reply"
        return self.kind

    @property
    def args_display(self) -> str:
        if self.args is None:
            return ""
        if isinstance(self.args, str):
            return self.args
        return json.dumps(self.args, ensure_ascii=False, sort_keys=True)


@SearchVectorField.register_lookup
class TsMatch(Lookup):
    """`search__tsmatch="'a' & 'b'"`: the tsquery literal is cast, not parsed by
    to_tsquery, so the query's tokens are exactly tracing.core.stepsearch's (the
    `simple` parser would split CJK bigrams its own way)."""

    lookup_name = "tsmatch"

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} @@ ({rhs})::tsquery", [*lhs_params, *rhs_params]


class ApiToken(models.Model):
    """A bearer token of one user in one project, for the ingestion API and OTLP.

    Only the SHA-256 of the token is stored: a leaked database does not leak
    working tokens. The prefix is kept so a user can tell tokens apart.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    # Runs sent with the token land in this project, and it reads only this project's runs.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class ExternalRun(models.Model):
    """A run that came from outside, under the id its sender knows it by.

    For OTLP the external id is the trace id; for the JSON API it is the
    client's ``external_id``, which makes creating a run idempotent. ``state``
    is the OTLP mapper's cursor (tracing.core.formats.otlp.TraceState: next index,
    tool calls waiting for their result, the latest span position written), so
    a batch of spans appends without re-reading the run's steps.
    """

    class Source(models.TextChoices):
        OTLP = "otlp"
        API = "api"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # The run's project, copied: the sender's ids are unique within a project.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=8, choices=Source.choices)
    external_id = models.CharField(max_length=200)
    run = models.OneToOneField(RUN_MODEL, on_delete=models.CASCADE, related_name="external")
    state = models.JSONField(default=dict, blank=True)
    span_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "owner", "source", "external_id"], name="external_run_uniq"),
        ]
        indexes = [
            # The run list's search box finds a run by its trace id / external id, whoever sent it.
            models.Index(fields=["external_id"], name="external_run_external_id_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.source} {self.external_id} -> run {self.run_id}"


class IngestedSpan(models.Model):
    """One received span: the de-dup key (exporters resend) and the normalised span,
    kept so the run's steps can be re-derived when a span arrives out of order."""

    trace = models.ForeignKey(ExternalRun, on_delete=models.CASCADE, related_name="spans")
    span_id = models.CharField(max_length=16)
    payload = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trace", "span_id"], name="ingested_span_uniq")]

    def __str__(self) -> str:
        return f"span {self.span_id}"


class CallMessage(models.Model):
    """One message (or a text prompt's segment, or a list of tool schemas) sent
    to a model, stored once by content: consecutive turns of a run resend the
    whole conversation, and every run resends the same system prompt."""

    # The first 128 bits of the SHA-256 of the canonical JSON: as unlikely to
    # collide as the whole digest for any number of messages a database holds,
    # and half the unique index, which is a third of this table's size.
    digest = models.UUIDField(unique=True)
    deflated = models.BinaryField()  # the canonical JSON, tracing.core.packing

    def __str__(self) -> str:
        return f"message {self.pk}"

    @property
    def body(self) -> Any:
        return unpack(self.deflated)


class ModelCall(models.Model):
    """One request to a model endpoint: the messages as sent (after context
    fitting), the parameters, the raw response, usage and latency.

    The messages are ``prefix_len`` messages of the run's previous call (the
    one at the next lower ``step_index``) followed by ``suffix_ids``
    (tracing.store.call_store): a turn stores what it added, not the conversation
    again. ``step_index`` is the turn's first step.
    """

    class Api(models.TextChoices):
        CHAT = "chat"
        COMPLETIONS = "completions"

    # Every lookup by run is served by the unique (run, step_index) index.
    run = models.ForeignKey(RUN_MODEL, on_delete=models.CASCADE, related_name="model_calls", db_index=False)
    step_index = models.PositiveIntegerField()
    api = models.CharField(max_length=12, choices=Api.choices)
    prefix_len = models.PositiveIntegerField(default=0)
    suffix_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    # The tool schemas offered and the parameters (model, temperature, max
    # tokens, stop, seed, extra body) are the same turn after turn and run
    # after run: stored once, like messages. Not indexed: messages are never
    # deleted, so nothing looks calls up by them.
    tools = models.ForeignKey(CallMessage, on_delete=models.PROTECT, null=True, blank=True, related_name="+",
                              db_index=False)
    params_ref = models.ForeignKey(CallMessage, on_delete=models.PROTECT, null=True, blank=True, related_name="+",
                                   db_index=False)
    # The endpoint's JSON as received (tracing.core.packing): deflated it is a fifth
    # of its jsonb size, and nothing queries inside it.
    response_deflated = models.BinaryField(null=True, blank=True)
    error = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "step_index"]
        # One call per turn: a re-delivered run does not record it twice.
        constraints = [models.UniqueConstraint(fields=["run", "step_index"], name="model_call_run_step_uniq")]

    def __str__(self) -> str:
        return f"run {self.run_id} call at step {self.step_index}"

    @property
    def response(self) -> Any:
        return unpack(self.response_deflated)

    @property
    def params(self) -> dict:
        body = self.params_ref.body if self.params_ref_id else None
        return body if isinstance(body, dict) else {}


class DeletionRecord(models.Model):
    """One deletion (a run, a project, a retention sweep): who, when, what, how many rows.

    Kept after what it names is gone, so the project and user are copied as
    text beside their (nullable) references.
    """

    class What(models.TextChoices):
        RUN = "run"
        PROJECT = "project"
        RETENTION = "retention"

    what = models.CharField(max_length=10, choices=What.choices)
    # "run 42", "project team", "runs older than 30 days": what the record is about, in words.
    target = models.CharField(max_length=200)
    project = models.ForeignKey(Project, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    project_name = models.CharField(max_length=100)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="+")
    username = models.CharField(max_length=150, blank=True)  # "" for the retention task
    # Rows deleted per table ("runs", "steps", "model calls", ...).
    counts = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.get_what_display()} {self.target} by {self.username or 'retention'}"

    @property
    def rows(self) -> int:
        return sum(self.counts.values())


class Retention(models.Model):
    """A project's retention: its runs older than `keep_days` are deleted (tracing.store.step_deletion.retention_sweep)."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="retention")
    keep_days = models.PositiveIntegerField()

    def __str__(self) -> str:
        return f"{self.project}: keep runs {self.keep_days} days"


class GuardState(models.Model):
    """The watchdog of a guarded API run between two step requests (tracing.store.guard).

    ``state`` is ``Watchdog.snapshot()``: bounded JSON, so a batch costs the
    same at step 10 and at step 10,000; what grows with the run is in
    GuardMemo. ``policy`` is the one chosen when the run was created (its
    project's default), so the run is judged by one policy throughout.
    """

    class Mode(models.TextChoices):
        ACT = "act"  # decisions sent to the agent, a stop ends the run
        OBSERVE = "observe"  # shadow mode: decisions recorded, nothing acted on

    run = models.OneToOneField(RUN_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="guard")
    mode = models.CharField(max_length=8, choices=Mode.choices)
    policy = models.JSONField()
    state = models.JSONField(default=dict, blank=True)
    # The highest step index the watchdog has seen: a resent or late step is not judged twice.
    last_index = models.IntegerField(default=-1)
    # The stop sent to the agent ({"step", "detector", "text"}), until the run ends.
    stop = models.JSONField(null=True, blank=True)
    stop_sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # The sweep of stops the agent never acknowledged (GUARD_STOP_TIMEOUT_S).
            models.Index(fields=["stop_sent_at"], name="guard_stop_pending_idx",
                         condition=models.Q(stop_sent_at__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"guard of run {self.run_id} ({self.mode})"


class GuardMemo(models.Model):
    """What a guarded run's watchdog remembers for the whole run (RunMemory):
    the digests of the features observed, and of each valid result with the
    call that first returned it. Looked up by the features of one batch, so the
    cost of a batch does not grow with the run."""

    class Kind(models.IntegerChoices):
        FEATURE = 0
        SOURCE = 1

    run = models.ForeignKey(RUN_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    kind = models.SmallIntegerField(choices=Kind.choices)
    digest = models.BigIntegerField()
    source = models.BigIntegerField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "kind", "digest"], name="guard_memo_uniq")]

    def __str__(self) -> str:
        return f"run {self.run_id} memo {self.kind}:{self.digest}"


class PendingEvent(models.Model):
    """A GenAI log event whose span has not arrived yet (OTLP sends logs and
    spans apart, in either order). Joined to the span, and deleted, when it
    comes; ``manage.py closetraces`` drops the ones whose span never did."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    # genai_events.event_key: an exporter's resend is stored once.
    key = models.CharField(max_length=32)
    event = models.JSONField()
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "owner", "trace_id", "span_id", "key"],
                                    name="pending_event_uniq"),
        ]
        indexes = [models.Index(fields=["received_at"], name="pending_event_received_idx")]

    def __str__(self) -> str:
        return f"{self.event.get('name', 'event')} for span {self.span_id}"
