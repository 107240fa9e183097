"""The OpenAPI 3.1 description of the ingestion API, served at /api/openapi.json."""

from __future__ import annotations

from typing import Any

from tracing.core.formats.jsonapi import (
    FINISH_ALIASES,
    FINISH_STATUSES,
    MAX_CONTEXT_BYTES,
    MAX_JSON_DEPTH,
    MAX_STEPS_PER_REQUEST,
    MAX_TOOL_CHARS,
)
from tracing.core.label_limits import (
    MAX_METADATA_BYTES,
    MAX_METADATA_KEY_CHARS,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_CHARS,
    MAX_SESSION_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
)
from tracing.core.steps import CONTEXT_KEYS, KINDS, ROLES

_ERROR = {"description": "the problem, named", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _json_body(ref: str) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


def _ok(ref: str, description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


_ERRORS = {
    "400": _ERROR, "401": {**_ERROR, "description": "missing, unknown or revoked token"},
    "404": {**_ERROR, "description": "no such run (or another user's)"},
    "409": {**_ERROR, "description": "the run is finished or was not created through the API"},
    "413": {**_ERROR, "description": "body over the size cap (after gzip) or too many steps"},
}

_RUN_ID = [{"name": "run_id", "in": "path", "required": True, "schema": {"type": "integer"}}]


def _inputs() -> dict[str, Any]:
    """The schemas of what clients send: steps, a finish, runs."""
    step = {
        "type": "object",
        "required": ["index", "kind"],
        "additionalProperties": False,
        "properties": {
            "index": {"type": "integer", "minimum": 0, "description": "unique per run; (run, index) is idempotent"},
            "kind": {"type": "string", "enum": list(KINDS)},
            "role": {"type": ["string", "null"], "enum": [*ROLES, None],
                     "description": "whose words the step carries. Absent: inferred (an intervention is the "
                                    "watchdog's, an observation of the tool `user` the user's, any other "
                                    "observation a tool's, the rest the assistant's)"},
            "text": {"type": "string", "description": "the thought, the action as written, the observation..."},
            "content": {"type": "string", "description": "alias of text (the shared/eval JSONL format)"},
            "tool": {"type": ["string", "null"], "maxLength": MAX_TOOL_CHARS},
            "args": {"description": f"any JSON (a string for text-mode tools); at most {MAX_JSON_DEPTH} levels"},
            "meta": {"type": "object", "description": "observation status / class, intervention detector and tier..."},
            "prompt_tokens": {"type": "integer", "minimum": 0},
            "completion_tokens": {"type": "integer", "minimum": 0},
            "latency_ms": {"type": "number", "minimum": 0},
        },
    }
    finish = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "status": {"type": "string", "enum": [*FINISH_STATUSES, *FINISH_ALIASES], "default": "finished",
                       "description": "how the run ended: `finished` (on its own, whatever its outcome), `stopped` "
                                      "(a person stopped it; success must be null) or `error` (the infrastructure "
                                      "failed). Deprecated: `succeeded` / `failed` = `finished` with success "
                                      "true / false"},
            "final_answer": {"type": "string"},
            "reason": {"type": "string"},
            "success": {"type": ["boolean", "null"],
                        "description": "the outcome, when the caller knows it (null: unscored)"},
        },
    }
    context = {
        "type": "object",
        "additionalProperties": False,
        "description": f"what the agent was told before its first step; evidence for its claims. At most "
                       f"{MAX_CONTEXT_BYTES} bytes as JSON (larger: 413)",
        "properties": {
            CONTEXT_KEYS[0]: {"type": ["string", "null"], "description": "system prompt or domain policy"},
            CONTEXT_KEYS[1]: {"type": ["array", "null"], "items": {},
                              "description": "tool definitions (any JSON schema format)"},
        },
    }
    run_in = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "prompt": {"type": "string"},
            "model": {"type": "string"},
            "agent": {"type": "string"},
            "external_id": {"type": "string", "description": "makes creation idempotent for this user"},
            "conversation_id": {"type": "string", "description": "the session, unless session_id is given"},
            "metadata": {"type": "object", "description": _METADATA_DOC},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": MAX_TAG_CHARS}, "maxItems": MAX_TAGS},
            "session_id": {"type": "string", "maxLength": MAX_SESSION_CHARS,
                           "description": "runs sharing it are listed together on /runs/sessions/ID/"},
            "context": {"$ref": "#/components/schemas/Context"},
            "steps": {"type": "array", "items": {"$ref": "#/components/schemas/Step"}},
            "finish": {"$ref": "#/components/schemas/Finish"},
            "analyse": {"type": "boolean", "default": True,
                        "description": "compute signals and the anchor break when the run is finished here"},
            "guard": {"oneOf": [{"type": "boolean"}, {"const": "observe"}], "default": False,
                      "description": _GUARD_DOC},
        },
    }
    labels_in = {
        "type": "object", "additionalProperties": False,
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "description": "replaces the tags"},
            "add_tags": {"type": "array", "items": {"type": "string"}},
            "remove_tags": {"type": "array", "items": {"type": "string"}},
            "metadata": {"type": "object", "description": "merged (JSON merge patch: null removes a key). "
                         + _METADATA_DOC},
            "session_id": {"type": "string", "maxLength": MAX_SESSION_CHARS},
        },
    }
    return {"Step": step, "Finish": finish, "Context": context, "RunIn": run_in, "LabelsIn": labels_in}


_GUARD_DOC = (
    "true: agentlab's watchdog judges every step as it arrives, under the project's default policy (fixed when "
    "the run is created), and each steps request answers with its decision; a stop ends the run `stopped` by the "
    "watchdog at the agent's next request or finish, or after GUARD_STOP_TIMEOUT_S (60 s) without one. "
    "\"observe\": shadow mode, the decisions are answered and recorded but nothing ends the run. "
    "Decisions are recorded as the run's interventions (`sent_to_agent` or `shadow` in the step's "
    "`meta.replayed_intervention`)")

_DECISION = {
    "oneOf": [
        {"const": "none"},
        {"type": "object", "required": ["tier", "detector", "text", "evidence", "step"], "properties": {
            "tier": {"type": "string", "enum": ["hint", "redirect", "stop"]},
            "detector": {"type": "string", "description": "repetition, observation, stagnation or drift"},
            "text": {"type": "string", "description": "what to put into the agent's next prompt (the stop's "
                                                      "reason and fallback)"},
            "evidence": {"type": "object", "description": "the threshold met, scores and steps compared"},
            "step": {"type": "integer", "description": "the step it reacted to"}}},
    ],
    "description": "the watchdog's decision on this batch (its last, when it made several): the same "
                   "decision, text and evidence agentlab's own loop gets for the same steps",
}
_GUARD_OUT = {
    "guard": {"type": "string", "enum": ["act", "observe", "off"]},
    "decision": _DECISION,
    "decisions": {"type": "array", "items": {"type": "object"},
                  "description": "every decision of the batch, oldest first, when there were several"},
    "decision_reason": {"type": "string", "description": "why the decision is none when that is not 'nothing "
                                                        "to say': the run is not guarded, has ended, or was "
                                                        "stopped and this request acknowledged it"},
}

_METADATA_DOC = (f"flat key/value pairs: at most {MAX_METADATA_KEYS} keys of {MAX_METADATA_KEY_CHARS} characters, "
                 f"values of {MAX_METADATA_VALUE_CHARS} characters (objects and arrays kept as JSON text), "
                 f"{MAX_METADATA_BYTES} bytes in all")


def _schemas() -> dict[str, Any]:
    return {
        **_inputs(),
        "RunsIn": {"oneOf": [{"$ref": "#/components/schemas/RunIn"},
                             {"type": "object", "required": ["runs"],
                              "properties": {"runs": {"type": "array",
                                                      "items": {"$ref": "#/components/schemas/RunIn"}}}}]},
        "StepsIn": {"type": "object", "required": ["steps"], "additionalProperties": False,
                    "properties": {"steps": {"type": "array", "items": {"$ref": "#/components/schemas/Step"}}}},
        "RunOut": {"type": "object", "properties": {
            "id": {"type": "integer"}, "external_id": {"type": ["string", "null"]},
            "created": {"type": "boolean"}, "status": {"type": "string"},
            "steps_written": {"type": "integer"}, "steps_duplicate": {"type": "integer"},
            "url": {"type": "string"}, **_GUARD_OUT}},
        "RunsOut": {"type": "object", "properties": {"runs": {"type": "array",
                                                             "items": {"$ref": "#/components/schemas/RunOut"}}}},
        "StepsOut": {"type": "object", "properties": {
            "run": {"type": "integer"}, "written": {"type": "integer"},
            "duplicates": {"type": "integer", "description": "indices already stored (first write wins)"},
            **_GUARD_OUT}},
        "RunSummary": {"type": "object", "properties": {
            "id": {"type": "integer"},
            "status": {"type": "string", "enum": ["queued", "running", *FINISH_STATUSES]},
            "success": {"type": ["boolean", "null"], "description": "the outcome (null: unscored)"},
            "source": {"type": "string"},
            "model": {"type": "string"}, "step_count": {"type": "integer"},
            "prompt_tokens": {"type": "integer"}, "completion_tokens": {"type": "integer"},
            "latency_ms": {"type": "number"}, "final_answer": {"type": "string"},
            "first_anchor_break": {"type": ["integer", "null"]},
            "anchor_pattern": {"type": ["string", "null"], "description": "what kind of break it is"},
            "anchor_findings": {"type": "array", "items": {"type": "object"},
                                "description": "worth a look, not breaks: {step, pattern, reason}"},
            "settings": {"type": "object"},
            "tags": {"type": "array", "items": {"type": "string"}}, "metadata": {"type": "object"},
            "session_id": {"type": "string"},
            "url": {"type": "string"}}},
        "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
    }


def _paths() -> dict[str, Any]:
    return {
        "/api/runs": {"post": {
            "summary": "Create a run, or many (`{\"runs\": [...]}`), optionally with steps and the outcome",
            "requestBody": _json_body("RunsIn"),
            "responses": {"201": _ok("RunsOut", "created (or found by external_id)"), **_ERRORS},
        }},
        "/api/runs/{run_id}": {"get": {
            "summary": "A run's summary", "parameters": _RUN_ID,
            "responses": {"200": _ok("RunSummary"), **_ERRORS},
        }},
        "/api/runs/{run_id}/steps": {"post": {
            "summary": "Append a batch of steps (indices strictly increasing; resends are no-ops); a guarded "
                       "run's answer carries the watchdog's decision",
            "parameters": _RUN_ID, "requestBody": _json_body("StepsIn"),
            "responses": {"200": _ok("StepsOut"), **_ERRORS},
        }},
        "/api/runs/{run_id}/finish": {"post": {
            "summary": "Finish a run; its signals and anchor break are computed",
            "parameters": _RUN_ID, "requestBody": _json_body("Finish"),
            "responses": {"200": _ok("RunSummary"), **_ERRORS},
        }},
        "/api/runs/{run_id}/labels": {"patch": {
            "summary": f"Set a run's tags (at most {MAX_TAGS} of {MAX_TAG_CHARS} characters), metadata and session",
            "parameters": _RUN_ID, "requestBody": _json_body("LabelsIn"),
            "responses": {"200": _ok("RunSummary"), **_ERRORS},
        }},
        "/v1/traces": {"post": {
            "summary": "OTLP/HTTP traces (protobuf or JSON): each trace becomes a run, spans become steps",
            "requestBody": {"required": True, "content": {
                "application/x-protobuf": {"schema": {"type": "string", "format": "binary",
                                                      "description": "ExportTraceServiceRequest"}},
                "application/json": {"schema": {"type": "object",
                                                "description": "ExportTraceServiceRequest, OTLP JSON encoding"}}}},
            "responses": {
                "200": {"description": "ExportTraceServiceResponse (partialSuccess when spans were refused)"},
                **_ERRORS, "415": {"description": "not application/x-protobuf or application/json"}},
        }},
        "/v1/logs": {"post": {
            "summary": "OTLP/HTTP logs (protobuf or JSON): GenAI events (gen_ai.*.message, gen_ai.choice, "
                       "gen_ai.client.inference.operation.details) join their model call's span, whichever "
                       "arrives first",
            "requestBody": {"required": True, "content": {
                "application/x-protobuf": {"schema": {"type": "string", "format": "binary",
                                                      "description": "ExportLogsServiceRequest"}},
                "application/json": {"schema": {"type": "object",
                                                "description": "ExportLogsServiceRequest, OTLP JSON encoding"}}}},
            "responses": {
                "200": {"description": "ExportLogsServiceResponse (partialSuccess counts the records not kept: "
                                       "not GenAI events, or without a trace and span id)"},
                **_ERRORS, "415": {"description": "not application/x-protobuf or application/json"}},
        }},
    }


def openapi_spec(*, max_body_bytes: int) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "agentlab ingestion API",
            "version": "1",
            "description": (
                "Stream the steps of any agent into agentlab. Authenticate with `Authorization: Bearer <token>` "
                "(a project admin creates one on /settings/tokens/, or `manage.py apitoken create --user NAME "
                "--project SLUG`); runs it sends land in its project, and it reads only that project's runs. "
                "Bodies may be "
                f"gzip-compressed (`Content-Encoding: gzip`) and are capped at {max_body_bytes} bytes after "
                f"decompression; at most {MAX_STEPS_PER_REQUEST} steps per request. A request is one transaction: "
                "a rejected batch writes nothing."
            ),
        },
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}, "schemas": _schemas()},
        "security": [{"bearer": []}],
        "paths": _paths(),
    }
