"""The scenarios the recorder plays, written once for every CLI.

A scenario is a prompt and the model's scripted side of the conversation.
Each turn says what the model answers to the N-th request of a conversation
(N = how many model turns the request's history already holds): thinking,
text, tool calls, or an HTTP error or a broken stream. Tool calls name an
abstract kind; each CLI's module maps the kind to that CLI's own tool,
chosen from the tools the request offers.

Call kinds and their arguments (paths are relative to the working folder):
  shell    {"command": str}
  write    {"path": str, "content": str}
  edit     {"path": str, "old": str, "new": str}
  read     {"path": str}
  plan     {"items": [(text, "pending" | "in_progress" | "completed"), ...]}
  subagent {"description": str, "prompt": str}   (prompt must contain SUB_MARK)
  page     {"tool": str, "args": dict}            a tool of the front end (needs "page")

A scenario that needs "approval" runs the CLI in a mode that asks its host
before a tool runs; `answers` says what the host answers, one per question
in order: allow() (the arguments as asked), allow(command=...) (the
arguments with these changed) or deny(message); with `together`, only once
all of them are asked.

A scenario that needs "page" offers the CLI the front end's tools
(`page_tools`, AG-UI `tools` entries) through an MCP server its host
answers; the host answers each call with the next of `page_answers`, all
at once when the turn's calls have all arrived (or `page_delay` seconds
after the first, for a page that answers late). A turn whose text holds
PAGE_ANSWERS has it replaced by the answers the model's request carries
(the recording shows that the answer reached the model), with the results
of the CLI's own calls of the same turn, if any; the recorder warns when
one of `page_answers` is not among them.

A scenario with `files` (names under testdata/files/) sends them with the
prompt, each CLI by the route `run --attach` takes; a turn's text holding
FILES_RECEIVED says what of them the model's request carries (attach.py),
and a file that did not arrive byte for byte fails the recording.

A scenario with a `model` has its ACP client choose that model in the session
(`session/set_config_option`) before the prompt; a turn whose text holds
MODEL_USED has it replaced by the model the request names (the recording
shows which model was asked). A scenario with an `effort` has the client
choose that reasoning effort the same way (after the model, if any); a turn
whose text holds EFFORT_USED has it replaced by the reasoning effort the
request asks for (`reasoning_effort`; "none" when it asks for none).
"""

from dataclasses import dataclass, field

# Replaced, in a turn's text, by the tool results the request carries.
PAGE_ANSWERS = "{page answers}"

# Replaced, in a turn's text, by what the request carries of the scenario's
# files (attach.py): their type, size and sha256, or how they differ.
FILES_RECEIVED = "{files received}"
# Replaced, in a turn's text, by the model the request names.
MODEL_USED = "{model used}"
# Replaced, in a turn's text, by the reasoning effort the request asks for.
EFFORT_USED = "{effort used}"

# A subagent's requests are told from the main agent's by this mark in its prompt.
SUB_MARK = "[subtask]"

UNICODE = (
    "Héllo wörld — “quoted” and 'single', a back\\slash, tabs\tand\n"
    "new lines; 你好世界, こんにちは, Здравствуй, مرحبا; emoji 🌍🚀👩‍💻 and 🇫🇷."
)


def turn(text=None, thinking=None, calls=(), error=None, times=None, broken=False,
         signal=None):
    """One scripted model turn.

    error: an HTTP status answered instead (every attempt, or `times` attempts
    before the turn plays normally). broken: the stream stops halfway once,
    then the turn plays normally. signal: the recorder sends this signal
    ("INT" or "TERM") to the CLI shortly after this turn was served.
    """
    return {
        "text": text,
        "thinking": thinking,
        "calls": list(calls),
        "error": error,
        "times": times,
        "broken": broken,
        "signal": signal,
    }


@dataclass
class Scenario:
    name: str
    prompt: str
    turns: list
    sub_turns: list = field(default_factory=list)
    # What the CLI must be able to do: "subagent", "plan", "max_turns",
    # "resume", "approval", "acp" (a client that speaks ACP: acp.py).
    needs: set = field(default_factory=set)
    max_turns: int = 0
    # A second prompt run with the CLI's resume option, after the first run.
    resume_prompt: str = ""
    # Over ACP, a second prompt in the same session and process, once the
    # first is answered.
    next_prompt: str = ""
    # Over ACP, a run after those: a new process that only loads the
    # session (`session/load`) and records what the agent replays.
    load_after: bool = False
    timeout: float = 180.0
    # The host's answers to the CLI's approval questions.
    answers: list = field(default_factory=list)
    # Whether the host holds its answers until every question is asked (so
    # that the CLI waits on several at once); else it answers each at once.
    together: bool = False
    # Files written into HOME before the run: {path: content}.
    home_files: dict = field(default_factory=dict)
    # The front end's tools ("page"), and the host's answers to their calls.
    page_tools: list = field(default_factory=list)
    page_answers: list = field(default_factory=list)
    # How long the host waits before it answers the page's calls (a page
    # that answers late), in seconds.
    page_delay: float = 0.0
    # Files sent with the prompt, under testdata/files/ (attach.py).
    files: list = field(default_factory=list)
    # The model an ACP client chooses in the session ("PROVIDER/MODEL"),
    # one the CLI module's configuration offers besides its default.
    model: str = ""
    # The reasoning effort an ACP client chooses in the session, one of the
    # levels the agent offers for the model.
    effort: str = ""


def call(kind, **args):
    return (kind, args)


def allow(**edits):
    """Let the tool run; with `edits`, with these arguments changed."""
    return {"allow": True, "edits": edits}


def deny(message, interrupt=False):
    """Refuse; with `interrupt`, also stop the turn."""
    return {"allow": False, "message": message, "interrupt": interrupt}


def interrupt():
    """Leave the question unanswered and interrupt the turn instead."""
    return {"interrupt_turn": True}


PICK_BRANCH = {
    "name": "pick_branch",
    "description": "Ask the user which git branch to use.",
    "parameters": {"type": "object", "properties": {"branches": {"type": "array", "items": {"type": "string"}}},
                   "required": ["branches"]},
}
SHOW_DIFF = {
    "name": "show_diff",
    "description": "Show a diff in the user's editor pane.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}

# The tool through which the model changes the application's state, as
# `run --state-file` offers it (src/converse/state.rs), and its answer.
UPDATE_STATE = {
    "name": "ag_ui_update_state",
    "description": "Change the application's shared state (the JSON you were told as \"The application's "
                   "state\"): give the whole new state, a JSON object of at most 65536 bytes, as `state`. "
                   "The application sees it at once.",
    "parameters": {"type": "object", "properties": {"state": {
        "type": "object", "description": "The application's whole new state: it replaces the state you were told."}},
        "required": ["state"]},
}
STATE_CHANGED = "The application's state is now the one given."

SCENARIOS = [
    Scenario("text", "Say hello in several languages.", [turn(text=UNICODE)]),
    Scenario(
        "shell",
        "Run echo in the shell.",
        [
            turn(text="I will run a command.", calls=[call("shell", command="echo hello from the shell")]),
            turn(text="The command printed: hello from the shell."),
        ],
    ),
    Scenario(
        "files",
        "Write notes.txt, change it, then read it back.",
        [
            turn(calls=[call("write", path="notes.txt", content="alpha\nbeta\n")]),
            turn(calls=[call("edit", path="notes.txt", old="beta", new="gamma ✓")]),
            turn(calls=[call("read", path="notes.txt")]),
            turn(text="notes.txt now reads alpha and gamma ✓."),
        ],
    ),
    Scenario(
        "tool-errors",
        "Read a missing file, then run a failing command.",
        [
            turn(calls=[call("read", path="does-not-exist.txt")]),
            turn(calls=[call("shell", command="echo to stderr >&2; exit 3")]),
            turn(text="Both failed: the file is missing and the command exited with 3."),
        ],
    ),
    Scenario(
        "parallel",
        "Run two commands at once.",
        [
            turn(calls=[call("shell", command="echo first"), call("shell", command="echo second")]),
            turn(text="Both commands ran."),
        ],
    ),
    Scenario(
        "reasoning",
        "What is 17 * 23? Think first.",
        [turn(thinking="17 * 20 = 340 and 17 * 3 = 51, so 391.", text="17 × 23 = **391**.")],
    ),
    Scenario(
        "plan",
        "Make a plan, then do it.",
        [
            turn(
                text="Here is the plan.",
                calls=[call("plan", items=[("Look at the folder", "in_progress"), ("Write a summary", "pending")])],
            ),
            turn(calls=[call("plan", items=[("Look at the folder", "completed"), ("Write a summary", "completed")])]),
            turn(text="Both steps are done."),
        ],
        needs={"plan"},
    ),
    Scenario("http400", "Say hello.", [turn(error=400)]),
    Scenario("http429", "Say hello.", [turn(error=429, times=1, text="Hello after a rate limit.")]),
    Scenario("http500", "Say hello.", [turn(error=500)]),
    Scenario("broken-stream", "Say hello.", [turn(broken=True, text="Hello, after a stream that broke off halfway.")]),
    Scenario(
        "bigout",
        "Print a long listing.",
        [
            turn(calls=[call("shell", command="seq 1 60000")]),
            turn(text="That printed 60000 lines."),
        ],
    ),
    Scenario(
        "max-turns",
        "Keep running commands.",
        [
            turn(calls=[call("shell", command="echo turn one")]),
            turn(calls=[call("shell", command="echo turn two")]),
            turn(calls=[call("shell", command="echo turn three")]),
            turn(text="Done."),
        ],
        needs={"max_turns"},
        max_turns=1,
    ),
    Scenario(
        "sigint",
        "Run a slow command.",
        [turn(text="Starting a slow command.", calls=[call("shell", command="echo started; sleep 30; echo finished")], signal="INT"), turn(text="Done.")],
    ),
    Scenario(
        "sigterm",
        "Run a slow command.",
        [turn(text="Starting a slow command.", calls=[call("shell", command="echo started; sleep 30; echo finished")], signal="TERM"), turn(text="Done.")],
    ),
    Scenario(
        "cancel",
        "Run a slow command.",
        [turn(text="Starting a slow command.", calls=[call("shell", command="echo started; sleep 30; echo finished")],
              signal="CANCEL"), turn(text="Done.")],
        needs={"acp"},
    ),
    Scenario(
        "resume",
        "Remember the word 'teal'.",
        [turn(text="I will remember teal."), turn(text="The word was teal.")],
        needs={"resume"},
        resume_prompt="Which word did I ask you to remember?",
    ),
    Scenario(
        "history",
        "Remember the word 'teal': write it to word.txt.",
        [
            turn(text="Writing it down.", calls=[call("shell", command="echo teal > word.txt")]),
            turn(text="I wrote teal to word.txt."),
            turn(text="Reading it back.", calls=[call("read", path="word.txt")]),
            turn(text="The word was teal."),
        ],
        needs={"resume", "acp"},
        next_prompt="Which word did I ask you to remember? Read word.txt.",
        load_after=True,
    ),
    Scenario(
        "subagent",
        "Ask a helper agent to look around.",
        [
            turn(calls=[call("subagent", description="Look around", prompt=SUB_MARK + " List the files here.")]),
            turn(text="The helper looked around."),
        ],
        sub_turns=[
            turn(calls=[call("shell", command="ls -a")]),
            turn(text="The folder holds only dot entries."),
        ],
        needs={"subagent"},
    ),
    Scenario(
        "model",
        "Which model answers?",
        [turn(text="This answer came from " + MODEL_USED + ".")],
        needs={"acp"},
        model="scripted/scripted-other",
    ),
    Scenario(
        "effort",
        "How hard do you think?",
        [turn(text="This answer was asked with the effort " + EFFORT_USED + ".")],
        needs={"acp"},
        effort="high",
    ),
    Scenario(
        "page-tool",
        "Which branch should I work on?",
        [
            turn(text="I will ask you.", calls=[call("page", tool="pick_branch", args={"branches": ["main", "dev"]})]),
            turn(text="The page answered: " + PAGE_ANSWERS),
        ],
        needs={"page"},
        page_tools=[PICK_BRANCH],
        page_answers=["dev"],
    ),
    Scenario(
        "page-tools-two",
        "Pick a branch and show me the diff.",
        [
            turn(calls=[call("page", tool="pick_branch", args={"branches": ["main", "dev"]}),
                        call("page", tool="show_diff", args={"path": "src/lib.rs"})]),
            turn(text="The page answered: " + PAGE_ANSWERS),
        ],
        needs={"page"},
        page_tools=[PICK_BRANCH, SHOW_DIFF],
        page_answers=["main", "shown: 3 hunks"],
    ),
    Scenario(
        "page-tool-shell",
        "Write out.txt, then ask me which branch.",
        [
            turn(calls=[call("shell", command="echo one > out.txt")]),
            turn(calls=[call("page", tool="pick_branch", args={"branches": ["main", "dev"]})]),
            turn(text="The page answered: " + PAGE_ANSWERS),
        ],
        needs={"page"},
        page_tools=[PICK_BRANCH],
        page_answers=["dev"],
    ),
    Scenario(
        "approval-page-tool",
        "Write out.txt, then ask me which branch.",
        [
            turn(text="I will run a command.", calls=[call("shell", command="echo one > out.txt; cat out.txt")]),
            turn(text="Now I will ask you.", calls=[call("page", tool="pick_branch", args={"branches": ["main", "dev"]})]),
            turn(text="The page answered: " + PAGE_ANSWERS),
        ],
        needs={"page", "approval"},
        answers=[allow()],
        page_tools=[PICK_BRANCH],
        page_answers=["dev"],
    ),
    Scenario(
        "approval-page-tool-together",
        "Write out.txt and ask me which branch, at once.",
        [
            turn(calls=[call("shell", command="echo one > out.txt; cat out.txt"),
                        call("page", tool="pick_branch", args={"branches": ["main", "dev"]})]),
            turn(text="The page answered: " + PAGE_ANSWERS),
        ],
        needs={"page", "approval"},
        answers=[allow()],
        page_tools=[PICK_BRANCH],
        page_answers=["dev"],
    ),
    Scenario(
        "page-tool-late",
        "Which branch should I work on?",
        [
            turn(text="I will ask you.", calls=[call("page", tool="pick_branch", args={"branches": ["main", "dev"]})]),
            turn(text="The page answered: " + PAGE_ANSWERS),
        ],
        needs={"page"},
        page_tools=[PICK_BRANCH],
        # Each request answered 45 s after the first: Qwen Code asks again
        # after 30 s, and only the answer to its last request is read.
        page_answers=["dev (to the first request)", "dev (to the request asked again)"],
        page_delay=45.0,
    ),
    Scenario("image", "What is in this image?", [turn(text="The model's request: " + FILES_RECEIVED)],
             files=["dot.png"]),
    Scenario("pdf", "What is in this PDF?", [turn(text="The model's request: " + FILES_RECEIVED)],
             files=["dot.pdf"]),
    Scenario("audio", "What is in this recording?", [turn(text="The model's request: " + FILES_RECEIVED)],
             files=["dot.wav"]),
    Scenario(
        "state-update",
        "Switch the application to the dev branch.",
        [
            turn(text="I will change the state.", calls=[call("page", tool="ag_ui_update_state", args={"state": {
                "branch": "dev", "files": ["src/lib.rs", "a/b~c.rs"], "view": {"pane": "diff", "a/b": 1}}})]),
            turn(text="The application answered: " + PAGE_ANSWERS),
        ],
        needs={"page"},
        page_tools=[UPDATE_STATE],
        page_answers=[STATE_CHANGED],
    ),
    Scenario(
        "approval-allow",
        "Run echo in the shell.",
        [
            turn(text="I will run a command.", calls=[call("shell", command="echo one > out.txt; cat out.txt")]),
            turn(text="The command printed one."),
        ],
        needs={"approval"},
        answers=[allow()],
    ),
    Scenario(
        "approval-edit",
        "Run echo in the shell.",
        [
            turn(text="I will run a command.", calls=[call("shell", command="echo one > out.txt; cat out.txt")]),
            turn(text="The command ran."),
        ],
        needs={"approval"},
        answers=[allow(command="echo two > out.txt; cat out.txt")],
    ),
    Scenario(
        "approval-deny",
        "Run echo in the shell.",
        [
            turn(text="I will run a command.", calls=[call("shell", command="echo one > out.txt; cat out.txt")]),
            turn(text="The command was not allowed."),
        ],
        needs={"approval"},
        answers=[deny("Not this one: the file stays as it is.")],
    ),
    Scenario(
        "approval-two",
        "Run two commands at once.",
        [
            turn(calls=[call("shell", command="echo first > first.txt; cat first.txt"),
                        call("shell", command="echo second > second.txt; cat second.txt")]),
            turn(text="The first command ran; the second was not allowed."),
        ],
        needs={"approval"},
        answers=[allow(), deny("Not the second one.")],
    ),
    Scenario(
        "approval-reads",
        "Read two files outside the working folder.",
        [
            turn(calls=[call("read", path="../home/a.txt"), call("read", path="../home/b.txt")]),
            turn(text="Only the first file could be read."),
        ],
        needs={"approval"},
        answers=[allow(), deny("Not that file.")],
        together=True,
        home_files={"a.txt": "alpha\n", "b.txt": "beta\n"},
    ),
    Scenario(
        "approval-deny-stop",
        "Run echo in the shell.",
        [
            turn(text="I will run a command.", calls=[call("shell", command="echo one > out.txt; cat out.txt")]),
            turn(text="The command was not allowed."),
        ],
        needs={"approval"},
        answers=[deny("Stop here.", interrupt=True)],
    ),
    Scenario(
        "approval-interrupt",
        "Run echo in the shell.",
        [
            turn(text="I will run a command.", calls=[call("shell", command="echo one > out.txt; cat out.txt")]),
            turn(text="The command ran."),
        ],
        needs={"approval"},
        answers=[interrupt()],
    ),
]


def by_name():
    return {s.name: s for s in SCENARIOS}
