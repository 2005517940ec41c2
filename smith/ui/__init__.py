"""UI intents: the one way the runtime and plugins speak to a frontend (docs/ui.md).

An intent says what should be shown or asked, never how. Each kind declares what a
frontend that cannot honour it does (`UNSUPPORTED`): `drop` it (it was decoration),
`refuse` it (a question nobody can answer is refused at once, never left hanging), or
`persist` it (it is in the session, so a frontend that shows nothing still keeps it).
Nothing asks which frontend is active: a frontend declares what it takes
(`Capabilities`) and every frontend consumes intents through the same two functions:

    deliver(frontend, event)              # runtime events -> intents, shown or degraded
    reply = await ask(frontend, intent)   # a question -> the frontend's answer or a refusal
    reply = await ask_first(frontends, intent)   # several frontends: the first reply wins

Producers hand the runtime typed values: `Notify`, `Progress`, `Status` and `Hatch` (an
escape hatch its plugin declared; all sent out as `ui` events), `Question` and `Confirm`
(asked; answered with a `Reply`). smith.ui imports nothing of smith but this package,
so the plugin contract (smith.sdk), the tools (smith.effects) and the runtime all use
it.
"""

from smith.ui._frontend import (
    NO_UI,
    Capabilities,
    Delivered,
    Frontend,
    NoUi,
    ToolUi,
    ask,
    ask_first,
    deliver,
    show,
)
from smith.ui._kinds import (
    CONFIRM_CHOICES,
    DETAIL_MAX,
    HATCH_MAX,
    INTERRUPTED,
    KINDS,
    KINDS_TABLE,
    NOTE_MAX,
    OPT_IN,
    QUESTIONS,
    SHOWN,
    SHOWN_TYPES,
    UNSUPPORTED,
    Asked,
    Confirm,
    Detail,
    Hatch,
    Intent,
    Kind,
    Notify,
    Progress,
    Question,
    Reply,
    Shown,
    Status,
    Todos,
    Unsupported,
    answer_event,
    answer_record,
    intent_for,
    interrupted,
    question_intent,
    refused,
    shown_intent,
    url_problem,
)
from smith.ui._product import (
    HATCHES,
    LAYOUT_REGIONS,
    REQUIRED_REGIONS,
    STANDARD_LAYOUT,
    layout_problem,
)

__all__ = [
    "CONFIRM_CHOICES",
    "DETAIL_MAX",
    "HATCHES",
    "HATCH_MAX",
    "INTERRUPTED",
    "KINDS",
    "KINDS_TABLE",
    "LAYOUT_REGIONS",
    "NOTE_MAX",
    "NO_UI",
    "OPT_IN",
    "QUESTIONS",
    "REQUIRED_REGIONS",
    "SHOWN",
    "SHOWN_TYPES",
    "STANDARD_LAYOUT",
    "UNSUPPORTED",
    "Asked",
    "Capabilities",
    "Confirm",
    "Delivered",
    "Detail",
    "Frontend",
    "Hatch",
    "Intent",
    "Kind",
    "NoUi",
    "Notify",
    "Progress",
    "Question",
    "Reply",
    "Shown",
    "Status",
    "Todos",
    "ToolUi",
    "Unsupported",
    "answer_event",
    "answer_record",
    "ask",
    "ask_first",
    "deliver",
    "intent_for",
    "interrupted",
    "layout_problem",
    "question_intent",
    "refused",
    "show",
    "shown_intent",
    "url_problem",
]
