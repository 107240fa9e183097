"""The ingestion endpoints (JSON API, OTLP/HTTP, OpenAPI) and the API token settings page.

API views are CSRF-exempt: they authenticate with a bearer token, never with
the session cookie, so a cross-site form cannot use a signed-in browser.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agentlab.projects import current
from agentlab.projects.models import RANK, Role
from tracing.core.formats.jsonapi import ApiError, load_json, parse_finish, parse_runs, parse_steps
from tracing.core.formats.openapi import openapi_spec
from tracing.core.formats.otlp import OtlpError, decode_json, decode_protobuf
from tracing.core.formats.otlp_logs import decode_json as decode_logs_json
from tracing.core.formats.otlp_logs import decode_protobuf as decode_logs_protobuf
from tracing.core.label_limits import LabelError, Labels, apply_patch
from tracing.store.ingest import services
from tracing.store.ingest.writes import token_create, token_revoke, token_user
from tracing.store.models import ApiToken
from tracing.store.run_sink import RunChange, run_sink
from tracing.store.step_deletion import runs_delete

# The OTLP default exporters send up to 512 spans a batch; 20 MiB leaves room
# for long prompts in every span while bounding one request's memory.
DEFAULT_MAX_BODY_BYTES = 20 * 1024 * 1024
PROTOBUF = "application/x-protobuf"
log = logging.getLogger(__name__)
# gRPC status codes used in OTLP error bodies (google.rpc.Status.code).
_RPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 409: 9, 411: 3, 413: 8, 415: 3}


def max_body_bytes() -> int:
    return int(getattr(settings, "INGEST_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES))


def _error(message: str, status: int) -> JsonResponse:
    response = JsonResponse({"error": message}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="agentlab"'
    return response


def _authenticate(request: HttpRequest) -> ApiToken:
    header = request.headers.get("Authorization", "")
    scheme, _sep, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError("missing bearer token: send 'Authorization: Bearer <token>'", 401)
    found = token_user(token.strip())
    if found is None:
        raise ApiError("unknown or revoked token", 401)
    return found


def require_token_role(token: ApiToken, role: str) -> None:
    """The web's role rule for a token (README "Who may do what"): its member's
    role now, read with the token, so a demotion binds the token at once."""
    have = Role(token.role)
    if RANK[have] < RANK[Role(role)]:
        raise ApiError(f"this token's member is a {have.value} in {token.project_name}; this needs the "
                       f"{Role(role).value} role: ask a project admin", 403)


def _body_stream(request: HttpRequest):
    """The request, or for a chunked body (no Content-Length: OTLP exporters
    may stream) the server's de-chunked input: Django reads a body without a
    length as empty. Servers that de-chunk say so with `wsgi.input_terminated`
    (gunicorn does); on any other, reading on would block, so it is a 411."""
    meta = request.META
    if meta.get("CONTENT_LENGTH") or "chunked" not in meta.get("HTTP_TRANSFER_ENCODING", "").lower():
        return request
    if not meta.get("wsgi.input_terminated") or "wsgi.input" not in meta:
        raise ApiError("a chunked body needs a server that de-chunks it: send Content-Length", 411)
    return meta["wsgi.input"]


def _read_body(request: HttpRequest) -> bytes:
    """The request body, gunzipped, refused past the size cap (before and after decompression)."""
    cap = max_body_bytes()
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError as exc:
        raise ApiError("Content-Length is not a number") from exc
    if declared > cap:
        raise ApiError(f"the body is {declared} bytes; the limit is {cap} bytes", 413)
    # request.read, not request.body: the latter applies Django's 2.5 MB form limit.
    raw = _body_stream(request).read(cap + 1)
    if len(raw) > cap:
        raise ApiError(f"the body is over the limit of {cap} bytes", 413)
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding != "gzip":
        raise ApiError(f"Content-Encoding {encoding!r} is not supported (use gzip or none)", 415)
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        body = inflater.decompress(raw, cap + 1)
    except zlib.error as exc:
        raise ApiError(f"the body is not valid gzip: {exc}") from exc
    if len(body) > cap or inflater.unconsumed_tail:
        raise ApiError(f"the body is over the limit of {cap} bytes once decompressed", 413)
    if not inflater.eof:
        raise ApiError("the body is not valid gzip: the stream is truncated")
    return body


def _json_request(request: HttpRequest):
    content_type = request.content_type or ""
    if content_type not in ("application/json", ""):
        raise ApiError(f"Content-Type must be application/json, not {content_type}", 415)
    return load_json(_read_body(request))


def api_endpoint(view: Callable) -> Callable:
    """Bearer auth, ApiError -> a JSON error body, CSRF exemption. The view
    gets the token: its user owns what it writes, its project bounds what it
    reads and writes."""

    @csrf_exempt
    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            token = _authenticate(request)
            return view(request, token, *args, **kwargs)
        except ApiError as exc:
            return _error(str(exc), exc.status)

    return wrapper


def _run_summary(run) -> dict:
    return {
        "id": run.pk, "status": run.status, "source": run.source, "model": run.model_name, "prompt": run.prompt,
        "step_count": run.step_count, "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens, "latency_ms": run.latency_ms,
        "intervention_count": run.intervention_count, "final_answer": run.final_answer, "success": run.success,
        "first_anchor_break": getattr(run, "first_anchor_break", None),
        "anchor_pattern": (getattr(run, "anchor_evidence", None) or {}).get("pattern"),
        "anchor_findings": getattr(run, "anchor_findings", None) or [], "settings": run.settings,
        "tags": run.tags, "metadata": run.metadata, "session_id": run.session_id,
        "url": run.get_absolute_url(),
    }


@require_POST
@api_endpoint
def runs_create(request: HttpRequest, token: ApiToken) -> HttpResponse:
    require_token_role(token, Role.REVIEWER)
    requests = parse_runs(_json_request(request))
    results = services.runs_ingest(owner=token.user, project_id=token.project_id, requests=requests)
    return JsonResponse({"runs": [r.as_dict() for r in results]}, status=201)


@require_http_methods(["GET", "DELETE"])
@api_endpoint
def run_show(request: HttpRequest, token: ApiToken, run_id: int) -> HttpResponse:
    """GET: any run of the token's project (a team reads its runs); DELETE: an
    admin's token deletes it, recorded (tracing.store.step_deletion). Another project's is a 404."""
    if request.method == "DELETE":
        require_token_role(token, Role.ADMIN)
    run = run_sink().model.objects.filter(pk=run_id, project_id=token.project_id).select_related("project").first()
    if run is None:
        raise ApiError(f"run {run_id} not found", 404)
    if request.method == "DELETE":
        record = runs_delete(run_ids=[run.pk], user=token.user, project=run.project, target=f"run {run.pk}")
        return JsonResponse({"deleted": run_id, "counts": record.counts})
    return JsonResponse(_run_summary(run))


@require_POST
@api_endpoint
def run_steps(request: HttpRequest, token: ApiToken, run_id: int) -> HttpResponse:
    require_token_role(token, Role.REVIEWER)
    body = _json_request(request)
    if not isinstance(body, dict) or "steps" not in body:
        raise ApiError('the body must be an object {"steps": [...]}')
    if body.keys() - {"steps"}:
        raise ApiError(f"the body has unknown field(s): {', '.join(sorted(body.keys() - {'steps'}))}")
    steps = parse_steps(body["steps"])
    appended, guard = services.run_append(owner=token.user, project_id=token.project_id, run_id=run_id, steps=steps)
    return JsonResponse({"run": run_id, "written": appended.written, "duplicates": appended.duplicates,
                         **guard.as_dict()})


@require_POST
@api_endpoint
def run_finish(request: HttpRequest, token: ApiToken, run_id: int) -> HttpResponse:
    require_token_role(token, Role.REVIEWER)
    finish = parse_finish(_json_request(request))
    run = services.run_finish_api(owner=token.user, project_id=token.project_id, run_id=run_id, finish=finish)
    return JsonResponse(_run_summary(run))


@require_http_methods(["PATCH"])
@api_endpoint
def run_labels(request: HttpRequest, token: ApiToken, run_id: int) -> HttpResponse:
    """Tags, metadata and session of a run (tracing.core.label_limits.apply_patch): the
    run row is locked so two patches adding tags cannot lose one."""
    require_token_role(token, Role.REVIEWER)
    body = _json_request(request)
    with transaction.atomic():
        # A write, as the steps API's: a run of the token's project and its member.
        run = run_sink().model.objects.select_for_update().filter(
            pk=run_id, project_id=token.project_id, owner=token.user_id).first()
        if run is None:
            raise ApiError(f"run {run_id} not found", 404)
        try:
            labels = apply_patch(Labels(tags=run.tags, metadata=run.metadata, session_id=run.session_id), body)
        except LabelError as exc:
            raise ApiError(str(exc)) from exc
        run_sink().change(run, RunChange(labels=labels))
    return JsonResponse(_run_summary(run))


# --- OTLP -------------------------------------------------------------------------


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte = number & 0x7F
        number >>= 7
        if number:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _otlp_reply(proto: bool, status: int, message: str = "", *, rejected: int = 0,
                logs: bool = False) -> HttpResponse:
    """Export{Trace,Logs}ServiceResponse on success, google.rpc.Status on failure, in the request's encoding."""
    if status == 200:
        if proto:
            if logs:
                from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

                response = ExportLogsServiceResponse()
            else:
                from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

                response = ExportTraceServiceResponse()
            if rejected or message:
                setattr(response.partial_success, "rejected_log_records" if logs else "rejected_spans", rejected)
                response.partial_success.error_message = message
            return HttpResponse(response.SerializeToString(), content_type=PROTOBUF)
        count = "rejectedLogRecords" if logs else "rejectedSpans"
        body = {"partialSuccess": {count: str(rejected), "errorMessage": message}} if (rejected or message) else {}
        return JsonResponse(body)
    code = _RPC_CODES.get(status, 3)
    if proto:
        text = message.encode()
        # google.rpc.Status: field 1 code (varint), field 2 message (string).
        payload = b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text
        response = HttpResponse(payload, status=status, content_type=PROTOBUF)
    else:
        response = JsonResponse({"code": code, "message": message, "error": message}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="agentlab"'
    return response


def _otlp_body(request: HttpRequest) -> tuple[ApiToken, bool, bytes, bool]:
    """The token, whether the body is protobuf, the body, and whether to analyse (OTLP's common checks)."""
    content_type = request.content_type or ""
    proto = content_type in (PROTOBUF, "application/protobuf")
    token = _authenticate(request)
    require_token_role(token, Role.REVIEWER)
    if not proto and content_type != "application/json":
        raise ApiError(f"Content-Type must be {PROTOBUF} or application/json, not {content_type or 'missing'}", 415)
    # A backfill may defer the per-run analysis (`manage.py analyse --source otlp` later).
    analyse = request.headers.get("X-Agentlab-Analyse", "true").strip().lower() not in ("false", "0", "no")
    return token, proto, _read_body(request), analyse


def _is_proto(request: HttpRequest) -> bool:
    return (request.content_type or "") in (PROTOBUF, "application/protobuf")


@csrf_exempt
@require_POST
def otlp_traces(request: HttpRequest) -> HttpResponse:
    proto = _is_proto(request)
    try:
        token, proto, body, analyse = _otlp_body(request)
        try:
            spans = decode_protobuf(body) if proto else decode_json(load_json(body))
        except OtlpError as exc:
            raise ApiError(str(exc)) from exc
        try:
            result = services.otlp_ingest(owner=token.user, project_id=token.project_id, spans=spans,
                                          analyse=analyse)
        except ApiError:
            raise
        except services.UNREADABLE as exc:
            log.exception("OTLP batch of %d spans refused as a partial success", len(spans))
            # Past the per-trace guard (a run's fields, a label): the batch is
            # refused as a partial success, which exporters log and never resend.
            return _otlp_reply(proto, 200, f"the spans could not be read: {str(exc)[:200]}", rejected=len(spans))
        except IntegrityError:
            # Two requests created the same trace's run at once; the second
            # attempt finds it and appends.
            result = services.otlp_ingest(owner=token.user, project_id=token.project_id, spans=spans,
                                          analyse=analyse)
    except ApiError as exc:
        return _otlp_reply(proto, exc.status, str(exc))
    return _otlp_reply(proto, 200, result.message(), rejected=result.rejected)


@csrf_exempt
@require_POST
def otlp_logs(request: HttpRequest) -> HttpResponse:
    """GenAI log events (the messages of model calls), joined to their spans whichever arrives first."""
    proto = _is_proto(request)
    try:
        token, proto, body, analyse = _otlp_body(request)
        try:
            batch = decode_logs_protobuf(body) if proto else decode_logs_json(load_json(body))
        except OtlpError as exc:
            raise ApiError(str(exc)) from exc
        try:
            result = services.otlp_logs_ingest(owner=token.user, project_id=token.project_id, batch=batch,
                                               analyse=analyse)
        except ApiError:
            raise
        except services.UNREADABLE as exc:
            log.exception("OTLP batch of %d log records refused as a partial success", batch.records)
            return _otlp_reply(proto, 200, f"the log records could not be read: {str(exc)[:200]}",
                               rejected=batch.records, logs=True)
    except ApiError as exc:
        return _otlp_reply(proto, exc.status, str(exc), logs=True)
    return _otlp_reply(proto, 200, result.rejected_reason, rejected=result.rejected, logs=True)


@require_GET
def openapi(request: HttpRequest) -> JsonResponse:
    return JsonResponse(openapi_spec(max_body_bytes=max_body_bytes()), json_dumps_params={"indent": 1})


# --- settings page: API tokens ----------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    """The current project's tokens (project admins): each is one member's, and
    what it sends lands in the project as that member's runs."""
    admin = current.require_role(request, Role.ADMIN)
    created = None
    error = ""
    if request.method == "POST":
        name = request.POST.get("name", "").strip()
        if not name or len(name) > 100:
            error = _("Give the token a name of 1 to 100 characters.")
        elif "\x00" in name:
            error = _("The name contains a NUL character, which cannot be stored.")
        else:
            token, plain = token_create(user=request.user, project_id=admin.project_id, name=name)
            created = {"token": token, "plain": plain}
    tokens = ApiToken.objects.filter(project_id=admin.project_id).select_related("user")
    return render(request, "tracing/tokens.html", {
        "tokens": tokens, "project": admin.project, "created": created, "error": error,
        "otlp_url": request.build_absolute_uri("/v1/traces"),
        "otlp_logs_url": request.build_absolute_uri("/v1/logs"),
    }, status=400 if error else 200)


@login_required
@require_POST
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    admin = current.require_role(request, Role.ADMIN)
    token = get_object_or_404(ApiToken, pk=token_id, project_id=admin.project_id)
    token_revoke(token=token)
    messages.success(request, _("Token %(name)s revoked.") % {"name": token.name})
    return redirect("tracing:tokens")
