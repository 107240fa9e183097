"""Django looks for an app's models in its `models` module: this one gathers
the feature packages' models under the one `runs` label, so tables and
migrations stay where they were. Code imports a model from its package."""

from runs.approvals.models import Approval
from runs.breaks.models import BreakLabel, BreakSettings, PatternState
from runs.core.models import Document, Policy, RerunGroup, Run, SandboxMessage, Task
from runs.core.prices import ModelPrice
from runs.dashboard.models import DayCounts, DayRollup
from runs.evaluations.models import Evaluation, EvaluationRun
from runs.failures.models import LayerLabel
from runs.health.models import SweepMark
from runs.reviews.models import ReviewItem, ReviewLabel
from runs.whatif.models import WhatIfJob

__all__ = ["Approval", "BreakLabel", "BreakSettings", "DayCounts", "DayRollup", "Document", "Evaluation", "EvaluationRun", "LayerLabel",
           "ModelPrice", "PatternState", "Policy", "RerunGroup", "ReviewItem", "ReviewLabel", "Run", "SandboxMessage",
           "SweepMark", "Task", "WhatIfJob"]
