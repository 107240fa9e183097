"""What a tool result says, read from its structure: data, empty, error or timeout.

Tool-calling agents get JSON back, code agents get program output and
tracebacks, shell and SQL agents get command output, error lines and row
tuples. Reading them as prose gets them wrong both ways (a JSON record looks
like CSS to a markup counter; `[]` looks like two characters of junk), so the
observation detector and anchoring both ask this module first.

- JSON is parsed (up to JSON_PARSE_MAX_CHARS): ``[]``, ``{}``, ``null`` and
  ``""`` are empty; an object whose top level says ``"error"``, ``"status":
  "failed"`` or ``"success": false`` is an error; anything else is data.
- Python literals (SQL rows as tuples) likewise: ``[]`` and ``()`` are empty.
- A Python traceback anywhere, an exception line, ``command not found``, ``No
  such file or directory``, a non-zero exit, an SQL error, a rejected answer:
  error. A timeout is a timeout, never "not found" (DESIGN §1).
- An empty output is *silent success* after a command whose effect is not to
  print (``cd``, ``mkdir``, ``INSERT``, code that only asserts), and *empty*
  (nothing found) after a query.

Pure, never raises on text input, and bounded: the patterns read a capped
head and tail, and parsing is skipped above its size cap.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass
from typing import Any

from tracing.core import shown_json
from tracing.core.steps import recorded_status

# JSON or Python literals longer than this are not parsed: a 10 MB result is
# data (nobody returns 10 MB of error), and the cost per step must stay bounded.
JSON_PARSE_MAX_CHARS = 1_000_000
LITERAL_PARSE_MAX_CHARS = 100_000

# Error signatures are searched in the first and last this-many characters:
# a traceback ends a program's output; a shell error opens it.
SCAN_CHARS = 2000

# Top-level JSON keys whose presence (with a truthy value) means the call failed.
ERROR_KEYS = ("error", "errors", "exception", "error_message")
ERROR_STATUS_VALUES = frozenset({"error", "failed", "failure", "fail", "rejected", "denied"})

_TRACEBACK_RE = re.compile(r"traceback \(most recent call last\)|^cell in\[\d+\], line \d+", re.I | re.M)
# "NameError: name 'x' is not defined", "AssertionError" alone, "ZeroDivisionError: ..."
_EXCEPTION_LINE_RE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)\b(?::|\s*$)", re.M)
_SHELL_ERROR_RE = re.compile(
    r"command not found|no such file or directory|permission denied|cannot access|cannot open|"
    r"is a directory|not a directory|syntax error near unexpected token|unexpected eof while looking|"
    r"invalid option|unrecognized option|missing operand|missing argument to|option requires an argument|non-zero exit status|exit (?:code|status):? *[1-9]|"
    r"^bash: |^/bin/\w+: |^sh: \d+: ",
    re.I | re.M,
)
_SQL_ERROR_RE = re.compile(
    r"error in your sql syntax|^error \d+|no such (?:table|column)|unknown (?:column|table)|"
    r"(?:table|column|database) .{0,80}? doesn't exist|operationalerror|programmingerror|integrityerror|"
    r"syntax error at or near|error executing query",
    re.I | re.M,
)
# A rejected submission: the environment judged the answer.
_REJECTED_RE = re.compile(
    r"^\s*(?:your |the )?(?:answer|solution|submission|flag)(?: submitted)? (?:is|was) (?:wrong|incorrect|not correct)"
    r"|^\s*(?:submitted )?(?:flag|answer) is incorrect|^\s*wrong answer\b|^\s*incorrect(?: answer)?\b",
    re.I,
)
_TIMEOUT_RE = re.compile(r"\btimed?[ -]?out\b|\btimeout\b|deadline exceeded", re.I)
# Generic failure openers (ReAct environments, HTTP tools): only at the start.
_ERROR_START_RE = re.compile(
    r"\s*(?:invalid action|malformed command\b|error\b|exception\b|fatal\b|failed\b|failure\b|could not (?:parse|execute)|"
    r"(?!no )(?:[a-z][\w-]* ){1,3}error\s*[:-]|"
    r"i don't understand your input|unable to\b)",
    re.I,
)
_HTTP_ERROR_RE = re.compile(
    r"\b(?:http|status)[ :]*(?:error )?5\d\d\b|internal server error|service unavailable|bad gateway", re.I
)
# "Nothing found" openers of search tools and text environments.
_EMPTY_RE = re.compile(
    r"^\s*(?:no (?:more )?results?\b|no results for\b|could not find\b|nothing happens|not found\b|no matches\b"
    r"|no such\b|\(empty\)\s*$|empty set\b|0 rows?\b|no rows\b|none\s*$|null\s*$|\[\]\s*$|\{\}\s*$|\(\)\s*$)",
    re.I,
)
# Program output that says "ran, printed nothing" in so many words.
# The harness says outright that the code ran ("[Executed Successfully with
# No Output]", MINT): success, whatever the code was.
_EXECUTED_OK_RE = re.compile(r"^\s*\[?executed successfully\b", re.I)
_DEFINES_RE = re.compile(r"^\s*(?:(?:from\s+[\w.]+\s+)?import\s|def\s|class\s|@\w)")
_NO_OUTPUT_RE = re.compile(r"^\s*\[?(?:executed successfully with no output|no output|\(no output\))\]?\s*$", re.I)

# Budget notices some environments append to every result ("You have 3 steps
# left and 1 chances to propose solution left."): the harness talking, not the
# tool. Trailing lines like these are set aside before the result is read.
_NOTICE_RE = re.compile(
    r"\n\s*(?:you have \d+ (?:steps?|turns?|attempts?|tries|chances?)\b[^\n]*|you should take the last step[^\n]*)\s*$",
    re.I,
)

# Commands whose success prints nothing: an empty result after them is not
# "nothing found". Shell builtins/utilities and SQL statements that write.
SILENT_COMMANDS = frozenset(
    ["cd", "mkdir", "rmdir", "rm", "mv", "cp", "touch", "chmod", "chown", "chgrp", "ln", "export", "unset", "source", "alias", "kill", "pkill", "insert", "update", "delete", "create", "drop", "alter", "use", "set", "grant", "truncate"]
)


@dataclass(frozen=True)
class Reading:
    status: str  # one of STATUSES
    form: str  # json | literal | traceback | text | empty
    # Parsed JSON / Python literal, when small enough to parse; else None.
    data: Any = None
    # Why this status, in a few words ("JSON error key", "shell error"...).
    why: str = ""
    # The environment judged a submitted answer and rejected it.
    rejected: bool = False
    # Empty output after a command that prints nothing when it works.
    silent: bool = False


# A text-mode call keeps its brackets in the argument ("execute[SELECT …]").
# A model that runs on into the next turn ("execute[…]\nObservation 7") still
# sent the command in the brackets.
_WRAPPED_RE = re.compile(r"^\s*[A-Za-z_]\w*\[(.*)\]\s*(?:Observation\b[^\]]*)?$", re.S)


def _unwrap(text: str) -> str:
    m = _WRAPPED_RE.match(text[:20_000]) if text else None
    return m.group(1) if m else text


def _first_word(action_args: Any) -> str:
    text = _unwrap(action_args) if isinstance(action_args, str) else ""
    if not text and isinstance(action_args, dict):
        for key in ("command", "cmd", "code", "query", "sql", "input"):
            if isinstance(action_args.get(key), str):
                text = action_args[key]
                break
    match = re.search(r"[A-Za-z_][\w-]*", text[:200])
    return match.group(0).lower() if match else ""


# Output redirected to a file (``echo x > f``, ``cmd >> log``; not ``2>&1``).
_REDIRECT_RE = re.compile(r"(?<![<>&\d])>{1,2}\s*(?!&)[\w./~\"'$-]|\|\s*tee\b")


# Shell, SQL and code syntax: a call whose argument has it is a command, and
# its output need not echo its words (unlike a search query's results).
_COMMAND_RE = re.compile(
    r"[|;$`*<>=]|(?:^|\s)-{1,2}[A-Za-z]|/\w|\b\w+\.(?:py|sh|c|txt|json|csv|sql|log|md)\b|"
    r"^\s*(?:select|insert|update|delete|create|drop|alter|show|desc|describe|with|pragma)\b|"
    r"^\s*(?:ls|cat|cd|find|grep|echo|python3?|pip|head|tail|wc|sort|uniq|awk|sed|cut|tr|xargs|chmod|mkdir|rm|"
    r"mv|cp|touch|du|df|stat|file|strings|curl|wget|tar|unzip|gzip|zcat|md5sum|sha\d*sum|base64|xxd|od|hexdump|"
    r"printf|seq|date|whoami|hostname|uname|ps|kill|git|make|gcc|java|node)\b",
    re.IGNORECASE,
)


def is_command(action_args: Any) -> bool:
    """An argument that is a program, a shell command or an SQL statement."""
    text = _unwrap(action_args) if isinstance(action_args, str) else ""
    if not text and isinstance(action_args, dict):
        text = next((v for k, v in action_args.items() if k in ("command", "cmd", "code", "query", "sql") and
                     isinstance(v, str)), "")
    return bool(text) and ("\n" in text.strip() or _COMMAND_RE.search(text[:2000]) is not None)


def _prints(action_args: Any) -> bool:
    """A program that prints its values: an empty list it prints is a value."""
    text = action_args if isinstance(action_args, str) else ""
    return bool(text) and ("print(" in text or "console.log(" in text or "System.out.print" in text)


# Calls that only read: asking one again cannot return anything new unless
# something else changed the world since. Verbs as tool names start with them
# ("get_order_details", "Search", "lookup"), commands as shells and SQL know them.
READ_VERBS = frozenset(
    ["get", "find", "search", "lookup", "look", "list", "check", "read", "show", "describe", "desc", "query", "fetch", "view", "examine", "inspect", "inventory", "retrieve", "calculate", "compute", "count", "verify", "validate", "browse", "info", "status", "lookup_table", "whois"]
)
# Read verbs that, alone as a tool's name, order the environment to hand
# something over.
ACQUIRE_VERBS = frozenset(["get", "fetch"])
READ_COMMANDS = frozenset(
    ["ls", "cat", "grep", "egrep", "find", "head", "tail", "wc", "pwd", "which", "whereis", "file", "stat", "du", "df", "less", "more", "tree", "echo", "printf", "strings", "select", "show", "describe", "desc", "explain", "pragma", "md5sum", "sha256sum", "sha1sum", "base64", "xxd", "od", "hexdump", "uname", "whoami", "date", "hostname", "id", "env", "printenv"]
)
# Moving changes where the agent is, not the state of anything it may ask
# about again ("open drawer 3" twice with a "go to" between is still twice).
MOVE_VERBS = frozenset(["go", "goto", "move", "walk", "navigate", "travel", "teleport"])
_NAME_SPLIT_RE = re.compile(r"[_\s.-]+|(?<=[a-z])(?=[A-Z])")


SQL_WORDS = frozenset(["select", "insert", "update", "delete", "create", "drop", "alter", "show", "desc", "describe", "with", "pragma", "explain"])


def _redirects(text: str) -> bool:
    """Shell output redirected to a file; in SQL ">" compares."""
    return bool(text) and _first_word(text) not in SQL_WORDS and _REDIRECT_RE.search(text) is not None


def is_move_call(tool: str | None, action_args: Any) -> bool:
    """A call that changes where the agent is ("go to shelf 2", ``navigate``)."""
    first = next((w for w in _NAME_SPLIT_RE.split(tool or "") if w), "").lower()
    return first in MOVE_VERBS


def move_place(text: str) -> str:
    """Where a move goes: "go to shelf 2" -> "shelf 2"."""
    words = text.split()
    while words and (words[0].lower() in MOVE_VERBS or words[0].lower() == "to"):
        words = words[1:]
    return " ".join(words)


def is_read_call(tool: str | None, action_args: Any) -> bool:
    """A call that changes nothing another call could ask about: a read (by its
    tool's verb, or for shells and databases the command it runs, without
    redirection), or a move."""
    words = [w for w in _NAME_SPLIT_RE.split(tool or "") if w]
    first = words[0].lower() if words else ""
    if first in ACQUIRE_VERBS and len(words) == 1:
        # A getter names what it reads ("get_order_details"); the bare verb is
        # an imperative to an environment ("get 1 green dye"): it obtains.
        return False
    if first in READ_VERBS or first in MOVE_VERBS:
        return True
    if is_command(action_args) or first in ("bash", "sh", "shell", "sql", "execute", "python", "terminal", "run"):
        word = _first_word(action_args)
        text = _unwrap(action_args) if isinstance(action_args, str) else ""
        return word in READ_COMMANDS and not _redirects(text)
    return False


def is_silent_command(action_args: Any) -> bool:
    """A command or program whose success prints nothing (``cd``, ``INSERT``,
    ``echo … > file``, code that only asserts)."""
    text = action_args if isinstance(action_args, str) else ""
    head = text[:20_000]
    if text and "print(" not in head and (re.search(r"^\s*assert\b", head, re.M) or _DEFINES_RE.match(head)):
        # Code that only asserts or defines (a function, a class, imports)
        # prints nothing when it works.
        return True
    if text and len(text) < 20_000 and _redirects(text):
        return True
    return _first_word(action_args) in SILENT_COMMANDS


# What a function returns when it returns nothing, as the harness printed it:
# JSON null, Python None, an empty string, list or object.
_NOTHING_RE = re.compile(r"^\s*(?:|none|null|nil|undefined|\[\]|\{\}|\(\)|\"\"|'')\s*$", re.I)
# Tools that run what they are given: their empty output is judged by the
# program (is_silent_command), not by the tool's name.
_RUNNER_TOOLS = frozenset(["bash", "sh", "shell", "sql", "execute", "python", "terminal", "run", "code", "interpreter"])


def is_silent_write(tool: str | None, action_args: Any) -> bool:
    """A function call that changes something (``send_message``, ``delete_file``,
    ``update_password``): APIs answer those with nothing when they work (a
    ``None`` return, HTTP 204), so an empty answer is their success, as for
    ``mkdir``. Not a read (empty means nothing found), not a bare ``get``
    (it obtained nothing), not a tool that runs code or commands."""
    if not isinstance(action_args, dict) or not tool:
        return False
    words = [w.lower() for w in _NAME_SPLIT_RE.split(tool) if w]
    if not words or words[0] in ACQUIRE_VERBS or words[0] in MOVE_VERBS or set(words) & _RUNNER_TOOLS:
        return False
    return not is_read_call(tool, action_args) and not is_command(action_args)


def _json_error(data: Any) -> str:
    if not isinstance(data, dict):
        return ""
    for key in ERROR_KEYS:
        if data.get(key):
            return f"JSON '{key}'"
    for key in ("status", "state", "result"):
        value = data.get(key)
        if isinstance(value, str) and value.strip().lower() in ERROR_STATUS_VALUES:
            return f"JSON {key}={value.strip().lower()}"
    for key in ("success", "ok"):
        if data.get(key) is False:
            return f"JSON {key}=false"
    return ""


def _is_empty_data(data: Any) -> bool:
    return data is None or data == "" or (isinstance(data, (list, tuple, dict, set)) and not data)


_DECIMAL_RE = re.compile(r"Decimal\('(-?[\d.E+-]+)'\)")
_DATETIME_RE = re.compile(r"datetime\.(?:datetime|date|time|timedelta)\([^()]*\)")


def _parse(stripped: str) -> tuple[str, Any] | None:
    """("json", value) / ("literal", value) when the text is one, else None."""
    head = stripped[:1]
    if head in "[{\"" or stripped in ("null", "true", "false"):
        if len(stripped) <= JSON_PARSE_MAX_CHARS:
            value = shown_json.parse(stripped, default=..., max_chars=JSON_PARSE_MAX_CHARS)
            if value is not ...:
                return "json", value
        elif head in "[{":
            # Too big to parse: data by its shape (an error is never 1 MB).
            return "json", ...
    if head in "[({" and len(stripped) <= LITERAL_PARSE_MAX_CHARS and stripped[-1:] in "])}":
        # A Python tool's dict or list printed with str() ({'City Hub': 'Rating: 4.3'}).
        # SQL drivers print Decimal('34.50') and datetime.datetime(2018, 3, 19):
        # values, which literal_eval refuses as calls.
        literal = _DECIMAL_RE.sub(r"\1", stripped) if "Decimal(" in stripped else stripped
        if "datetime." in literal:
            literal = _DATETIME_RE.sub(lambda m: repr(m.group(0)), literal)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "invalid decimal literal" on text that only looks like one
                return "literal", ast.literal_eval(literal)
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
            return None
    return None


# A one-line preamble before a JSON body: "Status Code: 200. Response: {…}",
# "Here is the response from the GET request:\n{…}". HTTP wrappers and agent
# frameworks print results this way; the body is the data.
_PREAMBLE_RE = re.compile(
    r"^[^\n{\[]{0,120}?\b(?:response|result|results|output|returned|body|data)\b[^\n{\[:]{0,40}:\s*(?=[\[{])", re.I
)
_STATUS_CODE_RE = re.compile(r"\b(?:status(?:[ _]code)?|http(?:/[\d.]+)?)\b[ :=]*([1-5]\d\d)\b", re.I)


def _wrapped_json(stripped: str) -> tuple[tuple[str, Any], str] | None:
    """((form, data), failing HTTP status or "") of a JSON body after a preamble, or None."""
    pre = _PREAMBLE_RE.match(stripped[:200])
    if pre is None:
        return None
    parsed = _parse(stripped[pre.end():])
    if parsed is None or parsed[0] != "json":
        return None
    code = _STATUS_CODE_RE.search(pre.group(0))
    return parsed, (code.group(1) if code and code.group(1)[0] in "45" else "")


def strip_notices(text: str) -> str:
    """The result without the harness's trailing budget notices."""
    tail_at = max(0, len(text) - 400)
    tail = text[tail_at:]
    while True:
        trimmed = _NOTICE_RE.sub("", tail)
        if trimmed == tail:
            break
        tail = trimmed
    return text[:tail_at] + tail if tail_at else ("" if _NOTICE_RE.fullmatch("\n" + tail) else tail)


def read_result(
    text: str | None, meta: dict[str, Any] | None = None, action_args: Any = None, tool: str | None = None
) -> Reading:
    """Read one tool result. ``meta["status"]`` wins when the recorder gave one;
    ``action_args`` and ``tool`` (the call that produced it) tell a silent
    success from an empty search."""
    text = text if isinstance(text, str) else ("" if text is None else str(text))
    text = strip_notices(text)
    given = recorded_status(meta)
    stripped = text.strip()
    if given is None and _NOTHING_RE.match(stripped[:20]) and is_silent_write(tool, action_args):
        return Reading(status="ok", form="empty", why="silent success of a write", silent=True)
    if not stripped or _NO_OUTPUT_RE.match(stripped[:200]):
        silent = is_silent_command(action_args) or bool(_EXECUTED_OK_RE.match(stripped[:200]))
        status = given or ("ok" if silent else "empty")
        return Reading(status=status, form="empty", why="no output" if not silent else "silent success", silent=silent)
    parsed = _parse(stripped)
    wrapped = _wrapped_json(stripped) if parsed is None else None
    if wrapped is not None:
        parsed, code = wrapped
        if code and not given:
            return Reading(status="error", form=parsed[0], data=parsed[1], why=f"HTTP {code}")
    if parsed is not None:
        form, data = parsed
        if data is ...:
            return Reading(status=given or "ok", form=form, why="large structured data")
        if _is_empty_data(data) and not _prints(action_args):
            return Reading(status=given or "empty", form=form, data=data, why=f"empty {form}")
        why = _json_error(data) if form == "json" else ""
        if why:
            return Reading(status=given or "error", form=form, data=data, why=why)
        return Reading(status=given or "ok", form=form, data=data, why=form)
    head = stripped[:SCAN_CHARS]
    tail = stripped[-SCAN_CHARS:] if len(stripped) > SCAN_CHARS else ""
    rejected = bool(_REJECTED_RE.match(head))
    if rejected:
        return Reading(status=given or "error", form="text", why="answer rejected", rejected=True)
    if given:
        return Reading(status=given, form="text", why="recorded status")
    if _TRACEBACK_RE.search(head) or _TRACEBACK_RE.search(tail):
        return Reading(status="error", form="traceback", why="traceback")
    low = head.lower()
    short = len(stripped) <= 480
    if short and ("time" in low or "deadline" in low) and _TIMEOUT_RE.search(low):
        return Reading(status="timeout", form="text", why="timeout")
    if _EXCEPTION_LINE_RE.search(head) or (tail and _EXCEPTION_LINE_RE.search(tail)):
        return Reading(status="error", form="traceback", why="exception")
    first_lines = "\n".join(stripped[:600].splitlines()[:3])
    if _SHELL_ERROR_RE.search(first_lines):
        return Reading(status="error", form="text", why="shell error")
    if _SQL_ERROR_RE.search(first_lines):
        return Reading(status="error", form="text", why="SQL error")
    if _ERROR_START_RE.match(low) and (short or low.startswith(("error", "traceback"))):
        return Reading(status="error", form="text", why="error message")
    if short and _HTTP_ERROR_RE.search(low):
        return Reading(status="error", form="text", why="HTTP error")
    if _EMPTY_RE.match(low):
        return Reading(status="empty", form="text", why="nothing found")
    return Reading(status="ok", form="text")
