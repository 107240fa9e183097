"""Phrases that tell what an agent's sentence does: plan, hedge, negate,
report success, report a completed action, or state what a result holds.

English and Chinese, generic on purpose: no strings of one benchmark or tool.
"""

from __future__ import annotations

import re

# Observation text meaning "the call did not work" (generic tool and
# environment messages; no source-specific strings).
FAILURE_RE = re.compile(
    r"nothing happens|invalid action|could not find|couldn't find|no results?\b|not found|"
    r"\berror\b|failed|failure|timed? ?out|cannot |can't |unable to|does not exist|no such|"
    r"没有找到|未找到|找不到|错误|失败|无结果|没有结果|什么也没有发生|超时|无效"
)

# Sentences that plan, ask or hedge assert no fact.
# "To find X, …" plans; "To SquarePants or Not to SquarePants aired …" names a title.
PLAN_RE = re.compile(
    r"^(?:(?:so|then|now|next|first|second|finally|lastly|also|additionally|and|but|ok|okay|thus|therefore|"
    r"after that)[, ]+)*"
    r"(?:i need|i should|i will|i'll|i must|i have to|i can(?! see)|i could|i may|i might|i want|"
    r"i am going|i'm going|let me|let's|lets|we need|we should|maybe|perhaps|to (?-i:[a-z])\w*|in order to|"
    r"search|look up|lookup|find|check|try|if\b|i'?m not sure|i do not know|i don't know)"
    r"|^(?:我需要|我应该|我要|我会|接下来|下一步|让我|我们需要|搜索|查找|查询|也许|可能|如果|首先)",
    re.IGNORECASE,
)

# Hedged sentences guess, they do not assert ("a mug is more likely to appear
# in cabinet (1-9)"); a guess is not a claim about what was observed.
HEDGE_RE = re.compile(
    r"\b(?:likely|probably|possibly|presumably|i think|i guess|i believe|i assume|might|could be|may be|"
    r"seems?|appears? to|looks? like|it looks)\b|可能|也许|大概|估计|应该是",
    re.IGNORECASE,
)

# Sentences that report something as absent or unknown legitimately name
# things no observation contains ("It does not mention Haiyan").
NEGATED_RE = re.compile(
    r"\b(?:not|no|never|nothing|none|neither|nor|without|doesn't|don't|didn't|isn't|wasn't|aren't|"
    r"weren't|cannot|can't|couldn't|unable|unclear|unknown)\b|没有|未|不|无",
    re.IGNORECASE,
)

# Clauses that report something as *not observed* ("it does not mention
# Haiyan") legitimately name what no observation contains; other negations
# ("X is not from Haiyan") still assert facts and are checked.
ABSENCE_RE = re.compile(
    r"\b(?:not|n't|never|no|nothing)\b\s+(?:\w+\s+){0,2}?(?:mention|mentions|mentioned|say|says|said|state|states|"
    r"contain|contains|include|includes|list|lists|listed|show|shows|tell|tells|find|found|know|known|"
    r"give|gives|provide|provides|information|info|sure|clear|about|exist|exists)\b"
    r"|没有提到|没有提及|未提及|没有说|不知道|没找到|没有找到|不清楚",
    re.IGNORECASE,
)

# "Done", "found it", "Now I take the X": the agent reports success/progress.
# "done" alone is too common in prose ("he has done voice acting"), so only
# first-person and task-level forms count.
SUCCESS_RE = re.compile(
    r"\b(?:found it|i found|i(?:'ve| have) found|now i (?:find|found|have|take|took|put|open|opened|"
    r"clean|cleaned|heat|heated|cool|cooled|use|used|get|got|place|placed|pick|picked|toggle|slice)|"
    r"i(?:'m| am) done|all done|^done|succeeded|successfully|it worked|"
    r"(?:task|goal|job) (?:is |has been )?(?:complete|completed|finished|done|accomplished)|"
    r"i(?:'ve| have) (?:put|placed|taken|cleaned|heated|cooled|finished|completed|selected|chosen|clicked))\b"
    r"|找到了|已找到|完成了|已完成|成功|搞定|已经(?:拿|放|找|打开|完成)",
    re.IGNORECASE,
)

# The part of SUCCESS_RE that claims having got or done something concrete
# ("found it", "now I take the mug"): false after an empty result too, where
# "I am done" or "the query ran successfully" may well be true.
FOUND_RE = re.compile(
    r"\b(?:found it|i found|i(?:'ve| have) found|now i (?:find|found|have|take|took|put|open|opened|"
    r"clean|cleaned|heat|heated|cool|cooled|use|used|get|got|place|placed|pick|picked|toggle|slice)|"
    r"i(?:'ve| have) (?:put|placed|taken|cleaned|heated|cooled))\b"
    r"|找到了|已找到|已经(?:拿|放|找|打开)",
    re.IGNORECASE,
)

# The agent saying a result failed is acknowledging it, not claiming success.
ACK_FAILURE_RE = re.compile(
    r"nothing happen|did(?:n't| not) work|failed|invalid|not (?:found|work)|could(?:n't| not)|"
    r"again|retry|error|wrong|incorrect|"
    # Owning up to a slip ("Oops, I forgot to define the function in the code
    # I executed") acknowledges the failure it caused.
    r"\bforgot\b|\boops\b|\bmistake|\btypo|\boverlooked\b|没有|失败|错误|无效|再试",
    re.IGNORECASE,
)

# A final answer made only of capital letters is a label from a closed set
# (SUPPORTS / NOT ENOUGH INFO), not a claim about the world.
LABEL_RE = re.compile(r"^[A-Z][A-Z _-]*$")


# "Done", "passed", "it works": success claims of code, shell and SQL agents.
CODE_SUCCESS_RE = re.compile(
    r"\b(?:(?:all )?(?:the )?tests? (?:cases? )?(?:ha(?:ve|s) )?passed|passe[sd] (?:all )?(?:the )?(?:tests?|checks?)(?: cases?)?|"
    r"(?:is|are|was|were) \w+ed correctly|"
    r"(?:it|this|the (?:function|code|query|command|script|program|solution|fix))(?: now)? "
    r"(?:works|worked|is working|is correct|ran successfully|executed successfully|returns? the (?:expected|correct))|"
    r"(?:returned|produced|gave|printed) the (?:expected|correct)|works as expected|as expected|"
    r"(?:works?|working|worked) (?:correctly|as expected|fine|properly|as intended)|"
    r"correctly (?:returns?|generates?|produces?|rearranges?|handles?|computes?|calculates?|sorts?|filters?|finds?)|"
    r"produces? the (?:expected|correct)|(?:output|result) (?:is|looks) (?:correct|right|as expected))\b",
    re.IGNORECASE,
)

# The agent describing what a result holds ("the output shows 5 files", "the
# query returned the names"): after an empty or failed result, that is data
# the result does not have.
DATA_CLAIM_RE = re.compile(
    r"\b(?:the|this|that|its|my) (?:output|result|results|response|table|list|search|lookup)s?\b"
    r"[^.\n]{0,40}?\b(?:shows?|showed|contains?|contained|lists|listed|returns?|returned|gives?|gave|"
    r"includes?|included|displays?|displayed|prints?|printed|confirms?|confirmed|indicates?|indicated)\b"
    # A program described in the present ("this command prints users") says
    # what it does, not what it returned: only the past tense reports output.
    # "This shows the paths", "It returned 9": a pronoun for the latest result.
    r"|^(?:so |and )?(?:this|that|it|which)\s+(?:now\s+)?(?:shows?|showed|listed|contains?|contained|gave|returned|"
    r"displayed|printed|indicates?|confirms?|means?)\b"
    r"|\b(?:the|this|that|my) (?:query|command|script|code|program|call|search|lookup)\b[^.\n]{0,40}?"
    r"\b(?:showed|returned|gave|printed|listed|displayed|found|produced|yielded)\b"
    # "The page for SAS has the information I need" right after "Could not find [SAS]".
    r"|\b(?:the|this|that) (?:page|article|entry|passage|paragraph)\b[^.\n]{0,60}?"
    r"\b(?:has|have|had|contains?|contained|shows?|says|mentions?|gives?|confirms?|lists)\b",
    re.IGNORECASE,
)

# Right after a result came back empty or failed, the present tense reads it
# too: "The query returns the matching records" says what it got, not what the
# query is for (a description before running it is not judged here).
PRESENT_DATA_RE = re.compile(
    r"\b(?:the|this|that|my) (?:query|command|output|result|results|search)s? (?:now )?"
    r"(?:returns|shows|lists|gives|prints|contains|displays) (?:the|all|a|an|\d)",
    re.IGNORECASE,
)

# The agent reports a call of its own as made ("I already searched [Juliet
# Starling]", "I have already run this approach on the examples", "I already
# ran `diff …`"): true only if an earlier call did it.
PAST_CALL_RE = re.compile(
    r"\b(?:i|we)(?:'ve| have)? (?:already |just |previously )?"
    r"(?P<verb>searched(?: for)?|looked up|ran|run|executed|opened|clicked(?: on)?|queried)\b(?P<rest>[^\n]{0,240})",
    re.IGNORECASE,
)
# What such a call was made with: "[…]", "`…`", "\"…\"", or an id ("B09QYQV9NN").
CALLED_WITH_RE = re.compile(r"^\s*(?:\[([^\]\n]{2,200})\]|`([^`\n]{2,200})`|\"([^\"\n]{2,200})\"|([A-Z0-9]*\d[A-Z0-9]{5,})\b)")

# ...unless what it says the result holds is nothing ("returns an empty list").
EMPTY_CONTENT_RE = re.compile(
    r"\b(?:empty|nothing|none|no (?:rows?|results?|output|matches|records?|data|files?|entries)|zero|null|"
    r"an? error|errors?|failed|0 rows?)\b",
    re.IGNORECASE,
)

# "The query executed successfully": true of a query that found nothing.
EXECUTED_RE = re.compile(
    r"\b(?:executed|ran|run|completed|went through) successfully|\b(?:query|command|statement) (?:was |is )?successful",
    re.IGNORECASE,
)

# An action the agent reports as done: first person ("I've cancelled", "I
# went ahead and updated") or the passive of a record ("has been cancelled",
# "was refunded", "is now active"). Group "verb" is the verb as written.
COMPLETION_RE = re.compile(
    r"\b(?:i(?:'ve| have)?(?: just| now| successfully| already| gone ahead and| went ahead and)?|we(?:'ve| have)|"
    r"(?:has|have)(?: now| successfully| already)? been(?: successfully)?|(?:was|were)(?: successfully)?|(?:is|are) now|"
    r"(?:am|is|are) being)\s+"
    r"(?P<verb>cancel(?:l?ed)|modified|updated|changed|exchanged|returned|refunded|transferred|booked|reset|"
    r"enabled|disabled|toggled|turned (?:on|off)|granted|sent|submitted|paid|processed|charged|created|deleted|"
    r"removed|added|resumed|suspended|activated|deactivated|upgraded|downgraded|renewed|scheduled|placed|"
    r"applied|issued|restored|unlocked|locked|approved|rejected|refilled|replaced|started|initiated|requested|"
    r"completed|finalized|arranged|authorized|authorised)\b",
    re.IGNORECASE,
)

# The verb's stem, as tool names and tool results spell it ("cancelled" ->
# "cancel", "paid" -> "pay", "sent" -> "send").
IRREGULAR_STEMS = {"paid": "pay", "sent": "send", "turned on": "toggl", "turned off": "toggl", "reset": "reset"}


def verb_stem(verb: str) -> str:
    verb = verb.lower()
    if verb in IRREGULAR_STEMS:
        return IRREGULAR_STEMS[verb]
    for suffix in ("lled", "ied", "ed"):
        if verb.endswith(suffix) and len(verb) - len(suffix) >= 3:
            stem = verb[: -len(suffix)]
            if suffix == "lled":
                return stem + "l"
            if suffix == "ed" and len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "ls":
                return stem[:-1]  # transferred, submitted
            return stem
    return verb

# A protocol token that ends a run, not an answer ("###STOP###", "submit").
PROTOCOL_FINAL_RE = re.compile(
    r"^\W*(?:stop|submit|done|finish|end|exit|quit|terminate|skip|give up|pass)\W*$", re.IGNORECASE
)

# An observation the agent writes into its own action ("Observation 3: …"):
# it acts as if a tool had answered.
# An XML-like tag a model writes around its reasoning or its answer
# ("<thinking>", "</result>", "<function-thoughts>"): no attributes, so HTML
# quoted in a statement ("<a href=…>") is left alone.
MARKUP_TAG_RE = re.compile(r"</?[A-Za-z][\w-]{0,40}>")
FAKE_OBSERVATION_RE = re.compile(r"(?:^|\n)\s*observation(?:\s*\d+)?\s*:\s*\S", re.IGNORECASE)

# A token in a harness's format ("picoCTF{…}", "flag{…}"): a value to find,
# backed only when some result printed it.
FLAG_RE = re.compile(r"\b[A-Za-z]{3,}\w*\{([^{}\s]+)\}")

# The agent attributing a claim to what it read ("as the observation says",
# "the paragraph mentions"): if no observation holds it, the reading is wrong.
ATTRIBUTION_RE = re.compile(
    r"\b(?:the|this|that) (?:observation|paragraph|page|result|article|passage|text|document|output|entry|"
    r"search result)s? (?:says|said|mentions|mentioned|states|stated|shows|showed|indicates|notes|confirms|lists)\b"
    r"|\bas (?:the|this) \w+ (?:says|said|states|mentions|shows)\b|\baccording to (?:the|this) \w+",
    re.IGNORECASE,
)

# "Now I take the knife": the agent says it is doing a tool's action right now.
NOW_ACTION_RE = re.compile(r"\bnow,? i (?P<verb>[a-z]+)\b", re.IGNORECASE)

# An assertion about something: what a statement claims a thing has or is.
ASSERTION_RE = re.compile(
    r"\b(?:has|have|had|contains?|contained|includes?|included|shows?|showed|lists|listed|returns?|returned|"
    r"is|are|was|were|holds?|gives?)\b",
    re.IGNORECASE,
)

# A lookup reported as done ("I have verified your account", "I've located
# your order"): false right after that lookup failed.
LOOKED_UP_RE = re.compile(
    r"\b(?:i|we)(?:'ve| have)?(?: now| just| successfully)? (?:verified|confirmed|located|found|checked|looked up|"
    r"retrieved|pulled up)\b",
    re.IGNORECASE,
)


# A sentence that says which lookup comes next ("I need to search Tim Kaine",
# "Next, I will query the orders table").
LOOKUP_PLAN_RE = re.compile(
    r"\b(?:i need to|i should|i will|i'll|i can|i have to|i must|let me|let's|next,? i)\b[^.;]{0,40}?"
    r"\b(?:search|look up|lookup|query|fetch|retrieve|find out|check what)\b",
    re.IGNORECASE,
)


# "without any AssertionError", "with no errors": naming a failure only to say
# it did not happen is a claim of success, not an acknowledgement.
DENIED_FAILURE_RE = re.compile(
    r"\b(?:without|with no|no)\s+(?:any\s+)?[\w`'\"]*(?:error|exception|failure|issue|problem)s?\b",
    re.IGNORECASE,
)
