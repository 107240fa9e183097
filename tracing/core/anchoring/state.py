"""The run's memory: what was given, observed, called and said so far.

Only the pass's ``feed`` calls the ``on_*`` methods; the rules read it.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracing.core.anchoring.code_claims import name_seen
from tracing.core.anchoring.common import (
    FINISH_TOOLS,
    Break,
    args_text,
    call_text,
    content_words,
    failed,
    is_final,
    normal,
    raw_args,
    step_text,
)
from tracing.core.anchoring.evidence import Evidence
from tracing.core.anchoring.phrases import ACK_FAILURE_RE, COMPLETION_RE, FLAG_RE, LOOKUP_PLAN_RE, NEGATED_RE, verb_stem
from tracing.core.anchoring.records import RecordIndex
from tracing.core.anchoring.rules.unobserved_argument import ArgumentCheck
from tracing.core.anchoring.salience import Salient, extract
from tracing.core.normalize import EN_STOP_WORDS, action_key, call_signature, jaccard, tokens
from tracing.core.results import Reading, is_command, is_read_call, read_result
from tracing.core.steps import REPLY_TOOLS, Step, context_text, is_reply
from tracing.core.tokenizer import split_sentences

# Two actions of the same tool are "the same request" from this Jaccard on
# normalised arguments (word order, case and stop words already ignored).
REQUERY_MIN_JACCARD = 0.9

# Look back this many actions of one tool for a re-query: bounds the per-step
# cost, and an answer obtained 50 calls ago may legitimately be re-checked.
REQUERY_WINDOW = 50

# Weights of unit kinds in the anchoring score: a shared number or name says
# more about use of the observation than a shared common word.
UNIT_WEIGHTS = {"n": 2.0, "i": 2.0, "e": 2.0, "c": 1.0, "t": 1.0}

# A tool's verb shorter than this says too little to match ("set", "get").
MIN_TOOL_VERB = 4
MAX_UI_SCAN = 20_000  # characters of a page read for its buttons
MAX_HANDLE_SCAN = 4000  # characters of a turn or result read for handles
MAX_NAME_SCAN = 400  # leaves visited per result for person names

# Tools whose answer a click (opening a page, picking an option) leaves as it was.
_SEARCH_TOOLS = frozenset(["search", "search_products", "find", "lookup"])
# Calls that put something in the agent's hands.
HOLD_VERBS = frozenset(["take", "pick", "grab", "get", "collect"])
# "Next, I need to take it.": the action the agent says it does next.
_NEXT_ACTION_RE = re.compile(r"\bnext,? i (?:need|have|want|will need|am going) to (?P<verb>[a-z]+)\b", re.IGNORECASE)
# The user reporting what they did: "I went ahead and reset the APN settings",
# "I've turned off Airplane Mode", "I just enabled roaming".
USER_DID_RE = re.compile(
    r"\bi(?:'ve| have)?(?:\s+(?:just|already|then|now|also|went ahead and|tried|did))*\s+"
    r"(?P<verb>turned (?:on|off)|reset|set|put|\w{3,}ed)\b",
    re.IGNORECASE,
)
_FIRST_PERSON_RE = re.compile(r"\bI\b")
_PAST_VERB_RE = re.compile(r"\b(\w{3,}ed|reset|set|put)\b", re.IGNORECASE)
# "I've turned Data Roaming on": a switch the user set on the device.
_USER_SWITCHED_RE = re.compile(r"\bi(?:['’]ve| have)?\s+(?:\w+\s+){0,2}(?:turned|switched|toggled)\b", re.IGNORECASE)
# A button or link as text pages print it: "[Buy Now]", "[B08SL7LRRQ]".
_UI_LABEL_RE = re.compile(r"\[([^\[\]\n]{1,80})\]")
_CAPITALISED_RE = re.compile(r"\b[A-Z][a-z]+\b")
# Emails and ids made of words ("mia.garcia2723@example.com", "mia_garcia_4516").
_HANDLE_RE = re.compile(r"[\w.+-]+@[\w-]+|\b[a-z]+(?:_[a-z]+)+_?\d*\b", re.IGNORECASE)
# Keys that hold a person's name in a record.
_PERSON_KEY_RE = re.compile(r"^(?:first|last|full|given|family|middle|display|customer|contact|person)_?name$",
                            re.IGNORECASE)
# The auxiliaries of COMPLETION_RE before any past participle; the verb must
# name a tool of the run (see RunState.completion).
ANY_COMPLETION_RE = re.compile(
    r"\b(?:i(?:'ve| have)?(?: just| now| successfully| already)?|we(?:'ve| have)|"
    r"(?:has|have)(?: now| successfully| already)? been(?: successfully)?|(?:was|were)(?: successfully)?|"
    r"(?:is|are) now)\s+(?P<verb>[a-z]{3,}ed)\b",
    re.IGNORECASE,
)
_PROGRAM_RE = re.compile(
    r"(?:^\s*(?:[A-Za-z_]\w*\[)?|[|;&]\s*|\$\(\s*|-exec(?:dir)?\s+|\bxargs\s+(?:-\S+\s+)*|\bsudo\s+)([\w.-]+)"
)


@dataclass
class Observed:
    """A tool result, as the rules see it."""

    step: Step
    sal: Salient
    new_units: set[str]
    failed: bool
    relevant: bool
    reading: Reading
    query_units: set[str] = field(default_factory=set)
    # Shares nothing with the action it answers although it names things.
    off_query: bool = False
    # The action this result answers (None when it cannot be paired).
    action: Step | None = None


@dataclass
class Call:
    """An action waiting for (or paired with) its result."""

    step: Step
    tool: str
    toks: frozenset[str]
    sal: Salient
    obs: Step | None = None
    obs_units: set[str] = field(default_factory=set)
    failed: bool = False


@dataclass
class Since:
    """What happened since the agent last spoke, taken when it speaks."""

    # Ids whose lookup came back failed or empty: id -> (call step, result step).
    unanswered: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Function calls that failed and were not made again with success: (call, result).
    failed_calls: list[tuple[Step, Step]] = field(default_factory=list)
    # Ids only failed calls were made with: id -> (call step, result step).
    failed_ids: dict[str, tuple[int, int]] = field(default_factory=dict)
    # A result about another record than the call asked for: (result step,
    # call step, key, asked, returned).
    answered_other: tuple[int, int, str, str, str] | None = None


def lexical_score(step_sal: Salient, obs_sal: Salient, older_units: set[str]) -> float:
    """Share (by weight) of the step's context-derived units that come from the latest observation."""
    units = step_sal.units
    obs_units = obs_sal.units
    from_obs = sum(UNIT_WEIGHTS[u[0]] for u in units if u in obs_units)
    from_older = sum(UNIT_WEIGHTS[u[0]] for u in units if u not in obs_units and u in older_units)
    if from_obs + from_older == 0:
        return 0.0
    return round(from_obs / (from_obs + from_older), 3)


class RunState:

    def __init__(self, task: str, context: dict[str, Any] | None, sem: Any, steps: list[Step]) -> None:
        self.task, self.sem, self.steps = task, sem, steps
        self.evidence = Evidence()
        # What the agent was told before its first step (system prompt, domain
        # policy, tool schemas) is evidence as much as the task is.
        told = context_text(context)
        opening = f"{task}\n{told}" if told else task
        task_sal = extract(opening)
        self.evidence.add(task_sal, opening)
        self.arguments = ArgumentCheck(opening)
        self.older_units: set[str] = set(task_sal.units)
        # Units the agent has been after: the task plus its own recent plans;
        # an observation sharing none of them is off-topic and may be ignored.
        self.wanted_words: set[str] = content_words(extract(task))
        self.task_names: set[str] = {w for e in extract(task).entities for w in e} - EN_STOP_WORDS
        self.records = RecordIndex()
        self.scores: dict[int, float] = {}
        self.breaks: list[Break] = []
        self.findings: list[Break] = []
        self.last: Observed | None = None  # the latest tool result
        self.judged: Observed | None = None  # the result the current turn is judged on
        self.seen_observation = False
        self._reset_turn()
        self._init_calls(context, steps)
        # A tool's name is the agent's own vocabulary (its schema, its calls):
        # "the result of `get_day_calendar_events`" names no unobserved value.
        self.evidence.ids |= {t for t in self.catalogue if "_" in t or "." in t}
        self._init_said(steps)
        self.acted_text = ""  # the agent's own commands, lower case: names it wrote are its own
        self.flags_seen: set[str] = {m.group(0).lower() for m in FLAG_RE.finditer(opening)}
        self.flag_text = opening.lower()

    def _init_calls(self, context: dict[str, Any] | None, steps: list[Step]) -> None:
        # Per tool: recent calls, for re-queries; and per tool the index of the
        # last event that may have changed the world since.
        self.history: dict[str, deque[Call]] = {}
        self.changed_at: dict[str, int] = {}
        self.world_changed_at = -1
        self.pending: deque[Call] = deque()
        # The earlier call the latest one repeats, and whether the latest only reads.
        self.pending_requery: tuple[Step, Call, bool] | None = None
        self.requery_pair: tuple[Step, Call, bool] | None = None  # the one the latest result answers
        # A revisit held until the agent's next call (rules.requery), and the
        # one the latest call took.
        self.pending_move: Break | None = None
        self.revisit: Break | None = None
        self.observed: list[tuple[int, str]] = []
        # Phantom calls: the tools the run knows of, the successful calls made.
        self.catalogue = tool_names(context, steps)
        self.tool_verbs = {v for v in map(tool_verb, self.catalogue) if len(v) >= MIN_TOOL_VERB}
        self.done_tools: set[str] = set()
        # Tools called at all, their result failed or not: an action of one of
        # them reported done is judged by the failure rules, not as a phantom.
        self.called_tools: set[str] = set()
        # What the agent picked up and holds ("take watch 1 from dresser 1"
        # succeeded): "Now I find a watch (1)" later needs no new sighting.
        self.held: set[str] = set()
        self.done_texts: deque[str] = deque(maxlen=200)
        self.calls_since_user = 0
        self.writes_since_user = 0
        self.any_user_turn = False
        # Stems of what the user reports having done ("I reset", "I've turned off").
        self.user_done: set[str] = set()
        # Submissions the environment rejected: normalised content -> (action, result).
        self.rejected: dict[str, tuple[Step, Step]] = {}
        self.submissions: deque[Call] = deque(maxlen=8)
        # Failure of each result of the latest batch of calls: after parallel
        # calls, success may be claimed of any one that worked.
        self.batch: list[bool] = []
        self.batch_done = False
        self.recent_calls: deque[str] = deque(maxlen=2)
        # Whether any call was made at all (None: the agent has run nothing).
        self.ran: bool | None = None
        # The verdicts of tracing.core.anchoring.rules.unobserved_argument's check
        # on the latest call and the latest result.
        self.argument_break: tuple[int, str, str, dict[str, Any]] | None = None
        self.late_argument: tuple[int, str, str, dict[str, Any]] | None = None

    def _init_said(self, steps: list[Step]) -> None:
        said = ahead(steps)
        self.planned, self.looked_up, self.next_calls, self.answers = (
            said.planned, said.looked_up, said.next_calls, said.answers)
        # Since the agent last spoke: tool results come back, calls made.
        self.results_since_statement = 0
        self.calls_since_statement: set[str] = set()
        self.told_since_statement = False
        self.since = Since()  # taken by the statement being judged
        self._since = Since()  # gathering for the next one
        self.worked_ids: set[str] = set()  # ids calls that worked asked for since the agent spoke
        # A lookup the agent said it would make ("I need to search Tim Kaine")
        # and has not made yet: facts stated before it is made read a page
        # that never came.
        self.unmade_lookup: tuple[int, str] | None = None
        # "Next, I need to take it.": the action a statement said comes next,
        # until a call or an observation.
        self.planned_action: tuple[int, str] | None = None
        # Whom the agent talks to: names the user gave and person names in
        # records ("first_name": "Mei"), lower case -> step first seen.
        self.person_names: dict[str, int] = {}
        # Buttons and links the pages showed ("[Buy Now]", "[B08SL7LRRQ]").
        self.ui_labels: set[str] = set()

    def _reset_turn(self) -> None:
        self.turn_units: set[str] = set()
        self.turn_texts: list[str] = []
        # Thoughts and replies of the current turn (since the latest observation).
        self.turn_thoughts: list[tuple[int, str]] = []
        self.turn_first: int | None = None
        self.turn_ack = False

    # -- what the rules ask ------------------------------------------------------
    def broke_at(self, index: int) -> bool:
        return any(b.step == index for b in self.breaks)

    def completion(self, sentence: str) -> re.Match[str] | None:
        """An action reported as done: a verb of the common list ("has been
        cancelled"), or one a tool of this run is named after ("refueled": refuel_data)."""
        m = COMPLETION_RE.search(sentence)
        if m is not None or not self.tool_verbs:
            return m
        low = sentence.lower()
        if not any(verb in low for verb in self.tool_verbs):
            return None  # cheap test first: no tool's verb in the sentence
        for m in ANY_COMPLETION_RE.finditer(sentence):
            if verb_stem(m.group("verb")) in self.tool_verbs:
                return m
        return None

    def done_before(self, verb: str, rest: str) -> bool:
        """An earlier result says it was done to the thing named ("You cool the potato 1"): a restatement."""
        thing = next((w for w in tokens(rest) if w not in EN_STOP_WORDS and not w.isdigit()), "")
        stem = verb_stem(verb)
        return bool(thing) and len(stem) >= 3 and any(stem in t and thing in t for t in self.done_texts)

    def name_known(self, name: str, acted: bool = True) -> bool:
        """A name the evidence spells; ``acted``: or one a result or the agent's own call wrote."""
        low = name.lower()
        if low in self.evidence.words or self.evidence.id_supported(low):
            return True
        return acted and (name_seen(low, self.flag_text) or name_seen(low, self.acted_text))

    # -- feed ------------------------------------------------------------------
    def on_observation(self) -> None:
        self.unmade_lookup = self.planned_action = None

    def on_told(self, step: Step, role: str) -> None:
        """A user's turn or a system note: evidence, and the world may have changed."""
        text = step.text or ""
        self._reset_turn()
        self.seen_observation = True
        self.observed.append((step.index, text))
        self.arguments.told(text, role)
        sal = extract(text)
        self.evidence.add(sal, text)
        self.older_units |= sal.units
        self.world_changed_at = step.index
        self.judged = None
        self.told_since_statement = True
        if role == "user":
            self._user_turn(step, text)

    def _user_turn(self, step: Step, text: str) -> None:
        self.user_done.update(verb_stem(m.group("verb")) for m in USER_DID_RE.finditer(text[:4000]))
        if _USER_SWITCHED_RE.search(text[:4000]):
            self.user_done.add("toggl")
        # "I followed your instructions and reset the APN settings": every
        # past verb of a sentence the user says in the first person.
        for sentence in split_sentences(text[:4000]):
            if _FIRST_PERSON_RE.search(sentence):
                self.user_done.update(verb_stem(w) for w in _PAST_VERB_RE.findall(sentence))
        self.any_user_turn = True
        for word in _CAPITALISED_RE.findall(text[:4000]):
            self.person_names.setdefault(word.lower(), step.index)
        self._note_handle_names(text, step.index)
        self._since.failed_calls = []  # the reply answers the new request
        self._since.failed_ids, self.worked_ids = {}, set()
        self.calls_since_user = 0
        self.writes_since_user = 0
        self.records.forget_writes()
        # A new request: pending replies are answered by this turn.
        self.pending = deque(c for c in self.pending if c.tool not in REPLY_TOOLS)

    def _take_call(self, tool: str | None) -> Call | None:
        name = (tool or "").strip().lower()
        for pos, call in enumerate(self.pending):
            if not name or call.tool == name:
                del self.pending[pos]
                return call
        return self.pending.popleft() if self.pending else None

    def on_result(self, step: Step) -> None:
        self.ui_labels.update(m.strip().lower() for m in _UI_LABEL_RE.findall((step.text or "")[:MAX_UI_SCAN]))
        text = step.text or ""
        self.observed.append((step.index, text))
        self.seen_observation = True
        call = self._take_call(step.tool)
        reading = read_result(text, step.meta, raw_args(call.step) if call else None, call.step.tool if call else None)
        sal = extract(text)
        bad = failed(step, reading)
        self.late_argument = self.arguments.result(step.index, call.step.index if call else None, text, bad,
                                                   reading.status == "empty")
        self.requery_pair, self.pending_requery = self.pending_requery, None
        self._result_data(step, call, reading, bad, text)
        if call is not None:
            self._answered(call, step, sal, reading, bad)
        if not bad:
            self.done_texts.append(text[:2000].lower())
        self._judge_next(step, call, sal, reading, bad)
        self.evidence.add(sal, text)
        if "{" in text:
            self.flags_seen.update(m.group(0).lower() for m in FLAG_RE.finditer(text[:200_000]))
        if len(self.flag_text) < 2_000_000:
            self.flag_text += "\n" + text[:200_000].lower()
        # The call's status is observed too: "Timeout" after a timed-out search is no invention.
        status = (step.meta or {}).get("status")
        if isinstance(status, str) and status:
            self.evidence.words.add(status.lower())
        self._reset_turn()

    def _result_data(self, step: Step, call: Call | None, reading: Reading, bad: bool, text: str) -> None:
        if reading.data is not None and reading.data is not ...:
            self.records.add(reading.data, step.index)
            for name in person_names(reading.data):
                self.person_names.setdefault(name, step.index)
            self.evidence.add_data(reading.data)
            if call is not None and not bad:
                other = answers_other(call.step.args, reading.data)
                if other is not None:
                    self._since.answered_other = (step.index, call.step.index, *other)
        if call is None:
            return
        dict_call = isinstance(call.step.args, dict)
        if dict_call:
            self._note_handle_names(text, step.index)  # dialogues with function calls: whom the agent talks to
        if bad or reading.status == "empty":
            for ident in asked_ids(call.step.args):
                self._since.unanswered[ident] = (call.step.index, step.index)
        if dict_call:
            self._note_failed_call(call, step, bad)
            for ident in asked_ids(call.step.args):
                if bad:
                    self._since.failed_ids.setdefault(ident, (call.step.index, step.index))
                else:
                    self.worked_ids.add(ident)

    def _answered(self, call: Call, step: Step, sal: Salient, reading: Reading, bad: bool) -> None:
        call.obs, call.obs_units, call.failed = step, sal.units, bad
        if reading.rejected and call in self.submissions:
            self.rejected.setdefault(normal(call.step), (call.step, step))
        if bad:
            return
        self.calls_since_user += 1
        self.done_tools.add(call.tool)
        if is_read_call(call.step.tool, raw_args(call.step)):
            return
        self.writes_since_user += 1
        self.records.note_write(call.step.args)
        self._hold(call)
        # A call that may have changed the world: asking another tool again
        # since is legitimate (a read changes nothing). A click opens a page or
        # picks an option: it changes what the agent looks at, not what a
        # search returns, so the same search after it still asks again.
        acted = action_key(call.tool, None)[0]
        for other in self.history:
            if other != acted and not (acted == "click" and other in _SEARCH_TOOLS):
                self.changed_at[other] = step.index

    def _judge_next(self, step: Step, call: Call | None, sal: Salient, reading: Reading, bad: bool) -> None:
        """The result the next turn is judged on."""
        producing = call.sal.units if call is not None else set()
        if self.last is not None:
            self.older_units |= self.last.sal.units
        new_units = sal.strong_units - self.older_units - producing
        # On-topic when the new content shares a word with what the agent
        # is after (task, its own plans); numbers alone do not count.
        new_words = {w for u in new_units if u[0] in "eict" for w in u[2:].split(" ") if not w.isdigit()}
        relevant = bool(new_words & self.wanted_words)
        query = {u for u in producing if not u.startswith("n:")}
        # A failure message counts only when it names something else
        # ("Could not find [Other Page]. Similar: [...]"); "Invalid
        # action!" names nothing (its one capital opens the sentence).
        names = len(sal.strong_units) >= (2 if bad else 1)
        off_query = bool(query) and names and not (sal.units & producing)
        self.batch.append(bad)
        self.batch_done = True
        self.results_since_statement += 1
        self.last = self.judged = Observed(
            step=step, sal=sal, new_units=new_units, failed=bad, relevant=relevant, reading=reading,
            query_units=query, off_query=off_query, action=call.step if call else None,
        )

    def _note_failed_call(self, call: Call, result: Step, bad: bool) -> None:
        """Keep a failed function call until the agent speaks; a call that works
        settles it when made after the error came back, or of the same tool in
        parallel (two emails tried at once), not another tool's in parallel."""
        if bad:
            self._since.failed_calls.append((call.step, result))
        else:
            self._since.failed_calls = [(c, r) for c, r in self._since.failed_calls
                                        if r.index > call.step.index and c.tool != call.step.tool]

    def _note_handle_names(self, text: str, index: int) -> None:
        """An email or a user id names its owner too ("mia.garcia2723@…",
        "mia_garcia_4516"): its letters are names the agent may use."""
        head = text[:MAX_HANDLE_SCAN]
        if "_" not in head and "@" not in head:
            return
        for handle in _HANDLE_RE.findall(head):
            for word in re.findall(r"[a-z]{2,}", handle.lower()):
                self.person_names.setdefault(word, index)

    def _hold(self, call: Call) -> None:
        text = call_text(call.step)
        if (tokens(call.tool or text) or ("",))[0] in HOLD_VERBS:
            # The object is what is named before "from", not the place.
            self.held |= extract(re.split(r"\s+from\s+", text, maxsplit=1, flags=re.I)[0]).ids

    def on_call(self, step: Step, sal: Salient) -> None:
        self.unmade_lookup = self.planned_action = None
        if step.tool:
            self.called_tools.add(step.tool)
        self.revisit, self.pending_move = self.pending_move, None
        tool = (step.tool or "").strip().lower()
        self.calls_since_statement.add(tool)
        final = is_final(step)
        if self.ran is None and not final:
            self.ran = False  # something was run; its result may come
        self.recent_calls.append(tool)
        if self.batch_done:
            # A new call after results came back: a new batch of calls.
            self.batch, self.batch_done = [], False
        args = step.args if step.args is not None and step.args != "" else step.text
        toks = action_key(tool, args)[1]
        call = Call(step=step, tool=tool, toks=toks, sal=sal)
        if not final:
            earlier = self._earlier_same(step, tool, toks)
            if earlier is not None:
                self.pending_requery = (step, *earlier)
            self.history.setdefault(tool, deque(maxlen=REQUERY_WINDOW)).append(call)
        else:
            self.submissions.append(call)
        self.pending.append(call)
        self.argument_break = None if final else self.arguments.check(step.index, step.tool, step.args,
                                                                      step.text or "")
        # The agent's own arguments are evidence for what it says later.
        acted = call_text(step)
        if len(self.acted_text) < 2_000_000:
            self.acted_text += "\n" + acted[:200_000].lower()
        self.evidence.add(sal, acted)

    def _earlier_same(self, step: Step, tool: str, toks: frozenset[str]) -> tuple[Call, bool] | None:
        """The earlier call of ``tool`` this one repeats, with nothing since
        that could have changed its answer; and whether this one only reads."""
        args = raw_args(step)
        read = is_read_call(step.tool, args)
        exact = is_command(args)  # a program edited by one token is another program
        signature = call_signature(step.tool, args)
        for call in reversed(self.history.get(tool, ())):
            same = (
                call_signature(call.step.tool, raw_args(call.step)) == signature if exact
                else jaccard(toks, call.toks) >= REQUERY_MIN_JACCARD
            )
            if call.obs is not None and same:
                # A successful action of another tool, or a user's turn, since
                # then may have changed the world (took the apple, toggled a
                # setting): asking again is then legitimate.
                if max(self.changed_at.get(tool, -1), self.world_changed_at) > call.step.index:
                    return None
                return call, read
        return None

    def on_submission(self, step: Step) -> None:
        self.submissions.append(Call(step=step, tool=(step.tool or "").lower(), toks=frozenset(), sal=Salient()))

    def on_statement(self, step: Step, text: str, sal: Salient) -> None:
        """A thought, reply or answer after the first observation: its score and its turn."""
        judged = self.judged
        if sal.units and judged is not None:
            if self.sem is not None:
                cos = self.sem.similarity(text[:2000], (judged.step.text or "")[:2000])
                self.scores[step.index] = round(min(1.0, max(0.0, cos)), 3)
            else:
                self.scores[step.index] = lexical_score(sal, judged.sal, self.older_units)
        if text.strip():
            self.turn_units |= sal.units
            self.turn_texts.append(text)
            if self.turn_first is None and sal.units:
                self.turn_first = step.index
            if NEGATED_RE.search(text) or ACK_FAILURE_RE.search(text):
                self.turn_ack = True

    def take_since(self) -> None:
        """The statement being judged takes what happened since the agent last spoke."""
        since, self._since = self._since, Since()
        since.failed_ids = {i: at for i, at in since.failed_ids.items() if i not in self.worked_ids}
        self.worked_ids = set()
        self.since = since

    def note_plans(self, step: Step, text: str, next_action: bool = True) -> None:
        plan = next((x for x in split_sentences(text) if LOOKUP_PLAN_RE.search(x)), None)
        if plan:
            self.unmade_lookup = (step.index, plan)
        if next_action:
            planned = _NEXT_ACTION_RE.search(text)
            self.planned_action = (step.index, planned.group("verb").lower()) if planned else None

    def spoke(self, step: Step, text: str) -> None:
        self.turn_thoughts.append((step.index, text))
        self.results_since_statement, self.calls_since_statement = 0, set()
        self.told_since_statement = False


# -- what the run holds ahead of each step -------------------------------------
def tool_verb(tool: str) -> str:
    """The verb a tool is named after, as verb_stem gives it: "refuel_data" -> "refuel"."""
    first = re.split(r"[_\s.-]+", tool.strip().lower())[0]
    return verb_stem(first + "ed") if not first.endswith("e") else first[:-1]


def tool_names(context: dict[str, Any] | None, steps: Sequence[Step]) -> frozenset[str]:
    """Tools the run knows of: from the context's schemas and every call made."""
    names = {(s.tool or "").strip().lower() for s in steps if s.kind == "action" and s.tool}
    for schema in (context or {}).get("tools") or []:
        if isinstance(schema, dict):
            fn = schema.get("function") if isinstance(schema.get("function"), dict) else schema
            name = fn.get("name")
            if isinstance(name, str):
                names.add(name.strip().lower())
    return frozenset(n for n in names if n and n not in REPLY_TOOLS and n not in FINISH_TOOLS)


@dataclass
class Ahead:
    """For each thought, what its turn goes on to do (until the next observation)."""

    # The salient units of the calls it makes: what it plans, it may name.
    planned: dict[int, Salient] = field(default_factory=dict)
    # The identifiers its next read looks up (minus the program it runs).
    looked_up: dict[int, set[str]] = field(default_factory=dict)
    # The tools of the next two calls after it (observations between or not).
    next_calls: dict[int, set[str]] = field(default_factory=dict)
    # The final answer that follows it, in a run's final turn.
    answers: dict[int, str] = field(default_factory=dict)


def ahead(steps: Sequence[Step], calls_ahead: int = 2) -> Ahead:
    out = Ahead()
    turn: list[int] = []  # thoughts of the turn, for planned
    to_read: list[int] = []  # thoughts before the turn's first call
    to_answer: list[int] = []  # thoughts before the turn's final answer
    to_call: list[tuple[int, int]] = []  # (thought, calls still to collect)
    for step in steps:
        if step.kind == "thought":
            turn.append(step.index)
            to_read.append(step.index)
            to_answer.append(step.index)
            to_call.append((step.index, calls_ahead))
        elif step.kind == "observation":
            turn, to_read, to_answer = [], [], []
        if step.kind == "action" and not is_reply(step):
            tool = (step.tool or "").strip().lower()
            for index, _ in to_call:
                out.next_calls.setdefault(index, set()).add(tool)
            to_call = [(index, left - 1) for index, left in to_call if left > 1]
            if turn and not is_final(step):
                out.planned.update(dict.fromkeys(turn, extract(call_text(step))))
            if to_read and is_read_call(step.tool, raw_args(step)):
                ids = _looked_up(step)
                for index in to_read:
                    out.looked_up.setdefault(index, set()).update(ids)
            to_read = []
        if is_final(step):
            out.answers.update(dict.fromkeys(to_answer, step_text(step)))
            to_answer = []
    return out


def _looked_up(step: Step) -> set[str]:
    text = args_text(raw_args(step)) or step.text or ""
    ids = set(extract(text).ids)
    # Programs a pipeline runs are tools, not what it looks up
    # ("find … -exec md5sum {} +", "… | sha256sum").
    for program in _PROGRAM_RE.finditer(text):
        ids.discard(program.group(1).lower())
    return ids


def person_names(data: Any) -> set[str]:
    """Words of the values of person-name keys ("first_name": "Mei") in a parsed result."""
    out: set[str] = set()
    stack, seen = [data], 0
    while stack and seen < MAX_NAME_SCAN:
        obj = stack.pop()
        seen += 1
        if isinstance(obj, dict):
            for key, value in obj.items():
                if isinstance(value, str) and isinstance(key, str) and _PERSON_KEY_RE.match(key):
                    out.update(w.lower() for w in value.split())
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(obj, list):
            stack.extend(obj[:50])
    return out


def _id_key(key: Any) -> bool:
    return isinstance(key, str) and (key.lower() == "id" or key.lower().endswith("_id"))


def _id_value(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def answers_other(args: Any, data: Any) -> tuple[str, str, str] | None:
    """(key, asked, returned) when a result names another record under the id
    key the call was made with ({"order_id": "#W1"} answered by "#W2")."""
    if not isinstance(args, dict) or not isinstance(data, dict):
        return None
    for key, asked in args.items():
        if not _id_key(key):
            continue
        got = data.get(key)
        if isinstance(asked, (str, int)) and _id_value(got) and str(asked).strip().lower() != str(got).strip().lower():
            return key, str(asked).strip().lower(), str(got).strip().lower()
    return None


def asked_ids(args: Any) -> list[str]:
    """The id values a call was made with ({"order_id": "#W1"} -> ["#w1"])."""
    if not isinstance(args, dict):
        return []
    return [str(v).strip().lower() for k, v in args.items()
            if _id_key(k) and _id_value(v) and len(str(v).strip()) >= 4]
