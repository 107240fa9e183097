"""unobserved_argument: a call argument carrying an identifier the agent never saw.

A tool call acts: when its argument carries an identifier, it had to be read
somewhere. ``get_details_by_id({"id": "L1001"})`` after "Customer not found",
a ``user_id`` no lookup returned, ``take mug 2 from shelf 1`` with no mug 2
in sight: the agent acts on a record or an object no evidence holds. The
break is the call, or the statement of its turn that first named the value.

Identifiers: a one-token argument value with a digit (at least MIN_ID_CHARS)
or an email, not prose, dates or amounts; in a text-mode tool, an argument
that is such a value (``click[B07S6WNZ9N]``, not a query) or the object a
command handles (going, opening and looking are exploring); in a shell
command, a file it reads, judged once the result is back (a guess that fails
is exploration). Python cells and SQL name what they define: not checked.

Evidence: the task, the context, every earlier observation, the agent's own
calls and its statements of earlier turns (not the turn that makes the call).
A value is found as a whole token, by its run of MIN_DIGIT_RUN digits, or for
a phone number by its digits in order.

Evidence strength: ``strength.EVIDENCE["unobserved_argument"]`` (weak).
``ArgumentCheck`` is part of the run's state: ``on_call`` and ``on_result``
return its verdict on the latest call and result.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from tracing.core.anchoring.common import Break, quote
from tracing.core.steps import Step


class Verdicts(Protocol):
    """What the hooks read of the run's state, which holds the ArgumentCheck
    (a protocol, so that this module does not import the state that imports it)."""

    argument_break: tuple[Any, ...] | None
    late_argument: tuple[Any, ...] | None

NAME = "unobserved_argument"

# Evidence text beyond this per step is not searched (page dumps).
MAX_EVIDENCE_CHARS = 200_000
# An argument value longer than this is a message or a program, not an id.
MAX_ID_CHARS = 80
# At least this many characters (without '#') and one digit: "L1001", "P1".
MIN_ID_CHARS = 4
# A digit run this long inside an identifier is the part a person says
# ("order 9502127" for "#W9502127").
MIN_DIGIT_RUN = 4
# Integer argument values of at least this many digits are record numbers.
MIN_INT_DIGITS = 5
# At most this many argument values are looked at per call.
MAX_VALUES = 40

_ID_RE = re.compile(r"^#?[A-Za-z0-9][\w.+@#:/-]*[A-Za-z0-9]$")
_EMAIL_RE = re.compile(r"^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$")
_DATE_RE = re.compile(r"^\d{4}-\d{1,2}-\d{1,2}(?:[T ][\d:.]+Z?)?$|^\d{1,2}[/-]\d{1,2}[/-]\d{2,4}$")
_AMOUNT_RE = re.compile(r"^[-+$]?\d[\d,]*(?:\.\d+)?%?$")
# A phone number: digit groups with single separators ("555-123-2002",
# "(555) 123 2002", "+1 555 123 2002"), not an expression ("1166.98 - 481.5").
_PHONE_RE = re.compile(r"^\+?(?:\(\d{1,4}\)\s?)?\d{1,4}(?:[-\s.]\d{2,4}){1,4}$")
_DIGIT_RUN_RE = re.compile(rf"\d{{{MIN_DIGIT_RUN},}}")
# A text-mode object instance: "mug 2", "mug (2)", "alarmclock 1".
_INSTANCE_RE = re.compile(r"\b([a-z][a-z-]*)\s*\(?\s*(\d{1,3})\b\)?")
# Text-mode verbs that handle an object (its first instance is the object).
HANDLE_VERBS = frozenset([
    "take", "pick", "grab", "get", "put", "place", "move", "heat", "cool", "clean", "slice", "use", "toggle",
    "drop", "give", "throw", "wash",
])
# Text-mode verbs that name a place or container ("go to drawer 7", "open fridge 2").
PLACE_VERBS = frozenset(["go", "open", "close", "examine"])
# Instances ("drawer 3") the opening names for it to count as a listing of places.
MIN_LISTED_PLACES = 3
# Keys whose value is prose, not a value that must have been read.
_PROSE_KEYS = frozenset(["content", "message", "text", "summary", "reason", "note", "notes", "query", "thought",
                         "description", "comment", "answer", "response", "explanation", "code", "command", "sql",
                         "expression"])


# Text-mode tools whose argument is a query: a guess at what to look for.
_QUERY_TOOLS = ("search", "lookup", "find", "query")


@dataclass
class Unseen:
    """One identifier of a call that no evidence holds."""

    value: str
    key: str  # the argument it was passed as ("" for a text-mode command)


def _is_identifier(value: str) -> bool:
    text = value.strip()
    if not text or len(text) > MAX_ID_CHARS or any(c.isspace() for c in text) and not _PHONE_RE.match(text):
        return False
    if _EMAIL_RE.match(text):
        return True
    if _DATE_RE.match(text) or not any(c.isdigit() for c in text):
        return False
    if _PHONE_RE.match(text):
        return sum(c.isdigit() for c in text) >= 7
    if _AMOUNT_RE.match(text):
        # Plain numbers: only long integers are record numbers (item ids,
        # card endings are short and may be said by the user anyway).
        return text.isdigit() and len(text) >= MIN_INT_DIGITS
    return len(text.lstrip("#")) >= MIN_ID_CHARS and _ID_RE.match(text) is not None


def _leaves(args: Any, key: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    if depth > 4:
        return
    if isinstance(args, dict):
        for k, v in list(args.items())[:MAX_VALUES]:
            yield from _leaves(v, str(k), depth + 1)
    elif isinstance(args, (list, tuple)):
        for v in list(args)[:MAX_VALUES]:
            yield from _leaves(v, key, depth + 1)
    else:
        yield key, args


def call_identifiers(tool: str | None, args: Any) -> list[Unseen]:
    """The identifiers a function call's arguments carry (dict arguments only)."""
    if not isinstance(args, dict):
        return []
    out: list[Unseen] = []
    for key, value in _leaves(args):
        if key.lower() in _PROSE_KEYS:
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
            if len(value.lstrip("-")) < MIN_INT_DIGITS:
                continue
        if isinstance(value, str) and _is_identifier(value):
            out.append(Unseen(value=value.strip(), key=key))
        if len(out) >= MAX_VALUES:
            break
    return out


def command_objects(text: str, places: bool = False) -> list[Unseen]:
    """The objects and places a text-mode command names ("take mug 2 from
    shelf 1" -> mug 2, shelf 1; "go to drawer 7" -> drawer 7): each one is
    in the room's listing or a result, or the agent made it up. Without
    ``places``, only the object handled ("take mug 2 from shelf 1" -> mug 2)."""
    low = text.strip().lower()
    verb = low.split(" ", 1)[0] if low else ""
    if places and (verb in HANDLE_VERBS or verb in PLACE_VERBS):
        return [Unseen(value=f"{m.group(1)} {m.group(2)}", key="") for m in _INSTANCE_RE.finditer(low[len(verb):])]
    if verb not in HANDLE_VERBS:
        return []
    head = re.split(r"\s+(?:from|in|on|in/on|into|onto|with|to|under)\s+", low, maxsplit=1)[0]
    found = _INSTANCE_RE.search(head[len(verb):])
    return [Unseen(value=f"{found.group(1)} {found.group(2)}", key="")] if found else []


# Shell programs: a command that starts with one of them is a shell command
# (not Python, not SQL), whose file operands name files.
SHELL_WORDS = frozenset([
    "cat", "head", "tail", "less", "more", "file", "strings", "xxd", "od", "hexdump", "md5sum", "sha1sum",
    "sha256sum", "base64", "wc", "grep", "egrep", "sort", "uniq", "awk", "sed", "cut", "tr", "diff", "cmp", "python",
    "python3", "perl", "ruby", "node", "java", "javac", "gcc", "cc", "g++", "bash", "sh", "unzip", "tar", "gunzip",
    "zcat", "gzip", "bzip2", "xz", "7z", "chmod", "cp", "mv", "rm", "objdump", "readelf", "gdb", "nc", "binwalk",
    "exiftool", "steghide", "openssl", "cmd",
])
# Not "ls", "find", "stat", "cd": asking whether a file is there is exploring.
# A file name with a digit and an extension ("VaultDoor7.java", "chall_3.S",
# "text1.txt"), maybe behind a path: one that has to have been listed or read.
_FILE_RE = re.compile(r"(?<![\w./~$-])(?:[\w.-]*/)*([A-Za-z_][\w-]*\d[\w-]*\.[A-Za-z]\w{0,4})(?![\w/])")
# What a command creates: after a redirect, -o, tee, touch, mkdir, or cp / mv
# as the last operand; the same command may then read it.
_CREATED_RE = re.compile(
    r"(?:>{1,2}|\s-o|\btee(?:\s+-a)?|\btouch|\bmkdir(?:\s+-p)?)\s*[\"']?((?:[\w.-]*/)*[\w.-]+)")
_URL_RE = re.compile(r"\S+://\S+")


def command_files(text: str) -> list[Unseen]:
    """File names with a digit that a shell command reads ("cat VaultDoor7.java"),
    not the ones it creates ("echo x > out1.txt", "gcc a.c -o a1.out")."""
    head = text.strip()[:5000]
    first = re.match(r"\s*(?:\./)?([\w+.-]+)", head)
    if first is None or (first.group(1).lower() not in SHELL_WORDS and not head.startswith("./")):
        return []
    head = _URL_RE.sub(" ", head)
    created = {m.group(1).rsplit("/", 1)[-1].lower() for m in _CREATED_RE.finditer(head)}
    if re.match(r"\s*(?:cp|mv)\b", head):
        created.add(head.split()[-1].rsplit("/", 1)[-1].lower())
    out: list[Unseen] = []
    for m in _FILE_RE.finditer(head):
        name = m.group(1)
        if name.lower() not in created and all(u.value != name for u in out):
            out.append(Unseen(value=name, key=""))
    return out


class ArgumentEvidence:
    """What a call's arguments may use: task, context, observations, the agent's earlier steps."""

    def __init__(self, opening: str) -> None:
        self.texts: list[str] = []
        # Statements of the current turn (step, what, text): evidence from the next observation on.
        self._said: list[tuple[int, str, str]] = []
        self._joined: str | None = None
        self.add(opening)

    def add(self, text: str) -> None:
        # Kept as given; lower-cased and joined only when a call has a value
        # to look up (most runs never do).
        if text:
            self.texts.append(text[:MAX_EVIDENCE_CHARS])

    def said(self, text: str, index: int = -1, what: str = "thought") -> None:
        """A thought or a reply: evidence for the calls of later turns only."""
        if text:
            self._said.append((index, what, text[:MAX_EVIDENCE_CHARS]))

    def observed(self, text: str) -> None:
        """A tool result or a user turn: evidence, and the turn before it is now earlier."""
        for _, _, said in self._said:
            self.add(said)
        self._said = []
        self.add(text)

    def first_said(self, value: str) -> tuple[int, str] | None:
        """The earliest statement of the current turn that names ``value``
        ("Now I find an apple (1)." names apple 1): where the value first appears."""
        low = value.lower().lstrip("#")
        head, _, number = low.rpartition(" ")
        pattern = (rf"(?<![a-z]){re.escape(head)}\s*\(?\s*{number}(?!\d)" if head and number.isdigit()
                   else rf"(?<![a-z0-9_]){re.escape(low)}(?![a-z0-9_])")
        for index, what, text in self._said:
            if index >= 0 and re.search(pattern, text.lower()):
                return index, what
        return None

    def _all(self) -> str:
        if self.texts:
            fresh = "\n".join(self.texts).lower()
            self._joined = f"{self._joined}\n{fresh}" if self._joined else fresh
            self.texts = []
        return self._joined or ""

    def holds(self, value: str) -> bool:
        low = value.lower().lstrip("#")
        text = self._all()
        return _has_token(text, low) or self._holds_digits(low, text)

    @staticmethod
    def _holds_digits(low: str, text: str) -> bool:
        if _PHONE_RE.match(low):
            digits = [c for c in low if c.isdigit()]
            if digits[-4:] and "".join(digits[-4:]) not in text:
                return False  # the last four digits together, in any writing of the number
            pattern = r"[\s().+-]*".join(digits)
            return re.search(rf"(?<!\d){pattern}(?!\d)", text) is not None
        return any(run != low and _has_token(text, run) for run in _DIGIT_RUN_RE.findall(low))


def _token_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _has_token(text: str, low: str) -> bool:
    """``low`` occurs in ``text`` as a whole token (not inside a longer id):
    found with str.find, C speed, then its two neighbours checked."""
    if not low:
        return False
    start = text.find(low)
    end_max = len(text)
    while start >= 0:
        end = start + len(low)
        if (start == 0 or not _token_char(text[start - 1])) and (end >= end_max or not _token_char(text[end])):
            return True
        start = text.find(low, start + 1)
    return False


def unseen_values(evidence: ArgumentEvidence, tool: str | None, args: Any, text: str,
                  places: bool = False) -> list[Unseen]:
    """The identifiers of a call that no evidence holds; with ``places``, the
    places a text-mode command names too."""
    if isinstance(args, dict):
        found = call_identifiers(tool, args)
    else:
        arg = args.strip() if isinstance(args, str) else ""
        name = (tool or "").strip().lower()
        if arg and _is_identifier(arg) and not any(w in name for w in _QUERY_TOOLS):
            found = [Unseen(value=arg, key="")]  # click[B07MTPW3Z7]
        else:
            found = command_objects(text or arg, places)
    return [u for u in found if not evidence.holds(u.value)]


@dataclass
class _Result:
    call_step: int | None
    step: int
    bad: str  # "" when the result was usable, else "returned an error" / "returned nothing"
    text: str


class ArgumentCheck:
    """Per run: the evidence call arguments are checked against, and the latest result."""

    def __init__(self, opening: str) -> None:
        self.evidence = ArgumentEvidence(opening)
        self.last: _Result | None = None
        self.user_turns = False
        # Whether anything was given at all: a trace that opens on a call,
        # with no task and no context, lacks its opening; nothing to judge by.
        self.given = bool(opening.strip())
        # Places are judged only against a listing of them ("you see a
        # cabinet 6, …, a drawer 1"): a trace whose opening lacks the room's
        # description says nothing about which places there are.
        self.places = len(_INSTANCE_RE.findall(opening.lower())) >= MIN_LISTED_PLACES
        # A shell command reading a file never listed waits for its result:
        # a guess that fails is exploration, one that works read a name it
        # had not seen. (call step, unseen files, command text)
        self.pending: tuple[int, list[Unseen], str] | None = None

    def told(self, text: str, role: str) -> None:
        self.given = True
        self.evidence.observed(text)
        self.user_turns |= role == "user"

    def result(self, step: int, call_step: int | None, text: str, failed: bool,
               empty: bool) -> tuple[int, str, str, dict[str, Any]] | None:
        """Feed a tool result; returns a break (step, pattern, reason, evidence)
        for a shell command waiting on it that read a file it never saw."""
        self.given = True
        self.evidence.observed(text)
        bad = "returned an error" if failed and not empty else "returned nothing" if empty or failed else ""
        previous, self.last = self.last, _Result(call_step, step, bad, text)
        pending, self.pending = self.pending, None
        if pending is None or failed or (call_step is not None and call_step != pending[0]):
            return None
        index, unseen, command = pending
        files = ", ".join(u.value for u in unseen)
        reason = (f"the command at step {index} ({quote(command, 80)}) reads {files}, which no earlier output, "
                  f"the task or the context names")
        reason += f" (the latest output before it, step {previous.step}, does not list it either)" if previous else ""
        reason += f"; it worked (step {step}), so the name came from something never shown"
        return index, "unobserved_argument", reason, {"unseen": [u.value for u in unseen], "argument": None,
                                                      "result_step": step}

    def said(self, text: str, index: int = -1, what: str = "thought") -> None:
        self.evidence.said(text, index, what)

    def check(self, index: int, tool: str | None, args: Any,
              text: str) -> tuple[int, str, str, dict[str, Any]] | None:
        """A break (step, pattern, reason, evidence) when the call at ``index``
        carries an identifier no evidence holds. The step is the call's, or
        that of the statement of the same turn that first named the value
        ("Now I find an apple (1)." before "take apple 1 from countertop 3")."""
        unseen = unseen_values(self.evidence, tool, args, text, self.places) if self.given else []
        if not unseen and self.given and isinstance(args, str):
            files = [u for u in command_files(args or text) if not self.evidence.holds(u.value)]
            self.pending = (index, files, text or args) if files else None
        said = self.evidence.first_said(unseen[0].value) if unseen else None
        # The call is evidence for what comes after it, whatever it carried.
        self.evidence.add(text if not isinstance(args, dict) else f"{text}\n{_flat(args)}")
        if not unseen:
            return None
        first = unseen[0]
        if first.key:
            call, what = "", f"the {first.key.replace('_', ' ')} {first.value}"
        else:
            call = f" ({quote(text, 80)})"
            what = f"the {first.value}" if " " in first.value else f"“{first.value}”"
        where = "no earlier result, user turn, the task or the context" if self.user_turns else (
            "no earlier observation, the task or the context")
        reason = f"the call at step {index}{call} uses {what}, which {where} contains"
        ev: dict[str, Any] = {"unseen": [u.value for u in unseen], "argument": first.key or None,
                              "call_step": index}
        at = index
        if said is not None:
            at = said[0]
            reason = (f"the {said[1]} at step {at} names {what}, which {where} contains, and the call at step "
                      f"{index}{call} acts on it")
        last = self.last
        if last is None:
            reason += "; no call had returned anything before it"
        elif last.bad:
            made = f"the call at step {last.call_step}" if last.call_step is not None else f"step {last.step}"
            reason += f"; {made} {last.bad} ({quote(last.text, 60)})"
            ev["result_step"] = last.step
        else:
            reason += f"; the latest result (step {last.step}) does not hold it either"
            ev["result_step"] = last.step
        return at, "unobserved_argument", reason, ev


def _flat(args: Any) -> str:
    return " ".join(str(v) for _, v in _leaves(args) if isinstance(v, (str, int, float)))


def on_call(state: Verdicts, step: Step, text: str) -> list[Break]:
    return [Break(*state.argument_break)] if state.argument_break is not None else []


def on_result(state: Verdicts, step: Step, text: str) -> list[Break]:
    return [Break(*state.late_argument)] if state.late_argument is not None else []
