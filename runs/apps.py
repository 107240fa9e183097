from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"

    def ready(self) -> None:
        # Receivers import models, so they are connected once the models are
        # loaded: Django's rule for signals, not a way around an import circle.
        from runs.approvals.pause import GATE
        from runs.breaks.reanalysis import reanalysis_judge_use
        from runs.core.run_rows import RunRows
        from runs.launch.approval_gate import approval_gate_use
        from runs.launch.run_analysis import default_policy
        from runs.lifecycle import on_run_ended, runs_judge
        from tracing.store.guard import guard_policy_use
        from tracing.store.run_sink import run_sink_use
        from tracing.store.signals import run_ended

        run_ended.connect(on_run_ended, dispatch_uid="runs.lifecycle.on_run_ended")
        # Launching is handed the approvals feature's gate instead of importing it.
        approval_gate_use(GATE)
        # Re-analysis after a pattern's demotion is handed the lifecycle's judge.
        reanalysis_judge_use(runs_judge)
        # The step API's guard judges a run by the policy its project gives new runs.
        guard_policy_use(default_policy)
        # Ingestion and the recorder make, end and sum up runs through runs' own rows.
        run_sink_use(RunRows())
