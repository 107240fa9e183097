"""The model call behind a turn: its panel on the run page, as JSON, and "Replay this call"."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from runs.calls.display import messages_view, raw_json, reply_view, tool_names
from runs.calls.forms import ReplayForm
from runs.calls.resend import REPLAY_TIMEOUT_S, call_replay
from runs.core import access
from runs.core.models import Run
from runs.core.prices import price_of
from tracing.store.call_store import call_messages
from tracing.store.models import ModelCall


def _call_for(request: HttpRequest, run_id: int, step_index: int) -> tuple[Run, ModelCall]:
    run = access.run_for(request, run_id)
    call = ModelCall.objects.select_related("tools", "params_ref").filter(run=run, step_index=step_index).first()
    if call is None:
        raise Http404(_("No model call was recorded for this step."))
    return run, call


def _render(request: HttpRequest, partial: str, context: dict, status: int = 200) -> HttpResponse:
    # Opened in place by htmx; a direct link gets the same partial on a page.
    template = f"calls/_{partial}.html"
    if not request.htmx:
        context = {**context, "partial": template}
        template = "calls/call.html"
    return render(request, template, context, status=status)


# A long conversation opens with its first messages (system prompt, question)
# and its latest; the ones between come on request ("earlier=1"): a 100-turn
# run's last call has 200 messages, which would make opening it slow and long.
HEAD_MESSAGES = 2
TAIL_MESSAGES = 20


@login_required
@require_GET
def call_detail(request: HttpRequest, run_id: int, step_index: int) -> HttpResponse:
    run, call = _call_for(request, run_id, step_index)
    messages = messages_view(call.api, call_messages(call))
    middle = messages[HEAD_MESSAGES:-TAIL_MESSAGES] if len(messages) > HEAD_MESSAGES + TAIL_MESSAGES else []
    if request.GET.get("earlier") == "1":
        return render(request, "calls/_messages.html", {"run": run, "call": call, "messages": middle})
    price = price_of(run.provider, call.params.get("model") or run.model_name)
    context = {
        "run": run, "call": call,
        "head": messages[:HEAD_MESSAGES] if middle else messages, "earlier": len(middle),
        "tail": messages[-TAIL_MESSAGES:] if middle else [], "message_count": len(messages),
        "tools": call.tools.body if call.tools_id else None,
        "tool_names": tool_names(call.tools.body) if call.tools_id else [],
        "reply": reply_view(call.response),
        "raw": raw_json(call.response) if call.response is not None else None,
        "cost": price.cost(call.prompt_tokens, call.completion_tokens),
    }
    return _render(request, "panel", context)


@login_required
@require_GET
def call_json(request: HttpRequest, run_id: int, step_index: int) -> JsonResponse:
    """The whole call, nothing folded: what the panel cuts short."""
    run, call = _call_for(request, run_id, step_index)
    return JsonResponse({
        "run": run.pk, "step_index": call.step_index, "api": call.api, "params": call.params,
        "tools": call.tools.body if call.tools_id else None, "messages": call_messages(call),
        "response": call.response, "error": call.error, "prompt_tokens": call.prompt_tokens,
        "completion_tokens": call.completion_tokens, "latency_ms": call.latency_ms,
    }, json_dumps_params={"ensure_ascii": False})


def _replay_initial(run: Run, call: ModelCall) -> dict:
    return {"provider": run.provider if run.provider in ("sim", "local", "openai") else "openai",
            "model_name": "" if run.provider in ("sim", "local") else (call.params.get("model") or run.model_name),
            "temperature": call.params.get("temperature"), "max_tokens": call.params.get("max_tokens")}


@login_required
@require_http_methods(["GET", "POST"])
def call_replay_view(request: HttpRequest, run_id: int, step_index: int) -> HttpResponse:
    """GET: the call in a form; POST: send it (edited) to the model chosen and
    show the new answer beside the recorded one. Nothing is stored."""
    run, call = _call_for(request, run_id, step_index)
    if request.method == "POST":
        access.require_reviewer(request)  # a replay calls a model: a reviewer's tool, as forks are
    messages = call_messages(call)
    form = ReplayForm(request.POST or None, api=call.api, messages=messages, initial=_replay_initial(run, call))
    context = {"run": run, "call": call, "form": form, "timeout": REPLAY_TIMEOUT_S,
               "old_reply": reply_view(call.response)}
    if request.method == "POST":
        if not form.is_valid():
            return _render(request, "replay", context, status=400)
        data = form.cleaned_data
        params = dict(call.params)
        for key in ("temperature", "max_tokens"):
            if data.get(key) is not None:
                params[key] = data[key]
        result = call_replay(provider=data["provider"], model_name=(data.get("model_name") or "").strip(),
                             api=call.api, messages=form.edited_messages(), params=params,
                             tools=call.tools.body if call.tools_id else None)
        context.update(result=result, new_reply=reply_view(result.response))
    return _render(request, "replay", context)
