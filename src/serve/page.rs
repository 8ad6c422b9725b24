//! What a page gives besides its prompt, checked as input from the
//! network: its own tools (`RunAgentInput.tools`, served to the CLI where
//! the CLI can take them), its context and state (told to the model before
//! the prompt, the same way for every CLI; the state, or the one kept for
//! the thread when the page gives none, may be changed by the model where
//! the CLI can take tools, see [`crate::converse::state`]), and its answers to the calls of
//! its tools (the `role: "tool"` messages after the last user message,
//! handed to the run that waits for them); and what it chooses for the
//! run in `forwardedProps` (the model and the effort).

use std::borrow::Cow;
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::converse::mcp::{self, Text, MAX_ANSWER};
use crate::converse::state::RUN_INFO_KEY;
use crate::dialect::request::{
    attachment_refused, files_pick_acp, media_types, state_tool_refused, Transport, MEDIA_TYPES,
};
use crate::dialect::Dialect;
use crate::serve::input::{id_ok, RunAgentInput};

/// The most context entries a page may give.
pub(super) const MAX_CONTEXT_ITEMS: usize = 128;
/// The most bytes of context (descriptions and values together).
pub(super) const MAX_CONTEXT: usize = 64 * 1024;
/// The largest state (bytes of JSON) told to the model, and kept.
pub(super) const MAX_STATE: usize = crate::converse::state::MAX_STATE;

/// What the page gives, checked.
pub(super) struct Page {
    /// Its tools, as JSON, when the CLI can take them and there are some.
    pub(super) tools: Option<String>,
    /// The block told to the model before the prompt, if any.
    context: Option<String>,
    /// The state the page gives, to be kept for the thread (a JSON object,
    /// not empty).
    pub(super) state_given: Option<String>,
    /// The thread's kept state, when the page gives none: the page is told
    /// it (STATE_SNAPSHOT) at the run's start.
    pub(super) state_kept: Option<String>,
    /// Whether the model is offered the tool that changes the state: the
    /// CLI takes tools, and the state (the page's, or else the thread's
    /// kept one) is a JSON object.
    pub(super) state_tool: bool,
    /// The model and effort it chooses.
    pub(super) choices: Choices,
    /// The files of its last user message.
    pub(super) attachments: Vec<Attached>,
}

#[derive(Deserialize)]
struct ContextItem {
    description: String,
    value: String,
}

impl Page {
    /// The page's tools, context, state, answers, choices and files in
    /// `input`, checked for a server of `cli` with the run `options`
    /// (`ask`: `--approval ask` among them) whose files may have
    /// `max_attachment` bytes (a `url` part's fetched when its host is
    /// one of `fetch`); `kept` gives the thread's kept state, asked
    /// for when the page gives none. `Err` says which field and why (a
    /// `400`).
    pub(super) fn check(
        input: &RunAgentInput,
        cli: Dialect,
        ask: bool,
        options: &[String],
        max_attachment: usize,
        fetch: &[FetchHost],
        kept: impl FnOnce() -> Option<String>,
    ) -> Result<Self, String> {
        let tools = match input.tools.map(RawValue::get) {
            None | Some("null") => None,
            Some(json) => {
                let tools = mcp::check_tools(json, cli.spec().tools)?;
                if tools.is_empty() {
                    None
                } else if let Some(why) = tools_refused(cli, ask, options) {
                    let _ = writeln!(
                        std::io::stderr(),
                        "agui-translate: serve: {why}: the run goes on without its {} tools",
                        tools.len()
                    );
                    None
                } else {
                    Some(serde_json::to_string(&tools).expect("serializable"))
                }
            }
        };
        for (id, content) in &input.messages.answers {
            answer_text(id, *content)?;
        }
        let given = given_state(input.state)?;
        let given = given.as_deref();
        let state = match given {
            Some(s) => Some(s.to_owned()),
            None => kept(),
        };
        let object = |s: &str| s.starts_with('{');
        Ok(Page {
            tools,
            context: context_block(input.context, state.as_deref())?,
            state_given: given.filter(|s| object(s)).map(str::to_owned),
            state_kept: state.clone().filter(|s| given.is_none() && object(s)),
            // Offered by the page's tools' route, where there is one.
            state_tool: state.as_deref().is_some_and(object) && state_offered(cli, ask, options),
            choices: choices(cli, options, input.forwarded_props)?,
            attachments: attachments(
                input.last_user_content(),
                Takes::of(cli, ask, options),
                max_attachment,
                fetch,
            )?,
        })
    }

    /// The prompt as the model gets it: the context block, then `prompt`.
    pub(super) fn prompt(&self, prompt: String) -> String {
        match &self.context {
            Some(c) => format!("{c}{prompt}"),
            None => prompt,
        }
    }
}

/// Why serve does not offer `cli` the page's tools with the run `options`
/// (`ask`: `--approval ask` among them), if it does not. Codex takes them
/// over its app-server and Qwen Code over its stream-json control layer,
/// which `run` then picks, or over ACP; Copilot CLI and OpenCode in their
/// stream mode and over ACP, Gemini CLI over ACP (which `run` then picks),
/// and any agent of `serve acp` whose `initialize` answer says it reaches
/// MCP servers over HTTP (else its run ends saying so).
pub(super) fn tools_refused(cli: Dialect, _ask: bool, options: &[String]) -> Option<String> {
    let how = transport(own_options(options));
    match cli.name() {
        "gemini" if how == Some("stream") => Some(
            "gemini takes the page's tools over ACP only, not with --transport stream".into(),
        ),
        "claude" | "codex" | "qwen" | "copilot" | "opencode" | "gemini" | "acp" => None,
        other => Some(format!(
            "{other} cannot take the page's tools yet (only claude, codex, qwen, copilot, opencode, gemini and ACP agents can)"
        )),
    }
}

/// Whether the CLI is offered the state's tool; if not, the one line on
/// stderr that says why (the model is told the state all the same).
fn state_offered(cli: Dialect, ask: bool, options: &[String]) -> bool {
    let Some(why) = state_refused(cli, ask, options) else {
        return true;
    };
    let _ = writeln!(
        std::io::stderr(),
        "agui-translate: serve: {why}: the model is told the state but cannot change it"
    );
    false
}

/// Why the CLI is not offered the state's tool with the run `options`
/// (`ask`: `--approval ask` among them), if it is not: as `run
/// --state-file` decides ([`state_tool_refused`]).
fn state_refused(cli: Dialect, ask: bool, options: &[String]) -> Option<String> {
    let own = own_options(options);
    let how = transport(own).or_else(|| option_value(own, "--codex-transport"));
    let how = how
        .and_then(|t| clap::ValueEnum::from_str(t, false).ok())
        .unwrap_or(Transport::Auto);
    state_tool_refused(cli.name(), how, ask)
}

/// The text of the answer to tool call `id`: its content (a string, or
/// text parts), at most [`MAX_ANSWER`] bytes.
fn answer_text(id: &str, content: Option<&RawValue>) -> Result<String, String> {
    if !id_ok(id) {
        return Err(
            "a tool message's toolCallId must be 1 to 1024 bytes without control characters".into(),
        );
    }
    let Some(content) = content else {
        return Ok(String::new());
    };
    if content.get().len() > 2 * MAX_ANSWER {
        return Err(format!(
            "the answer to tool call {id:?}: more than {MAX_ANSWER} bytes"
        ));
    }
    let Text(text) = serde_json::from_str(content.get()).map_err(|_| {
        format!("the answer to tool call {id:?}: content is neither a string nor an array of parts")
    })?;
    if text.len() > MAX_ANSWER {
        return Err(format!(
            "the answer to tool call {id:?}: {} bytes, more than {MAX_ANSWER}",
            text.len()
        ));
    }
    Ok(text)
}

/// The state the page gives, when it is not empty (`null`, `{}`, `[]`
/// and `""` give none: the thread's kept state stays). `Err` when it is
/// larger than [`MAX_STATE`].
fn given_state(state: Option<&RawValue>) -> Result<Option<Cow<'_, str>>, String> {
    let state = state
        .map(|s| s.get().trim())
        .filter(|s| !matches!(*s, "null" | "{}" | "[]" | "\"\""));
    if let Some(s) = state {
        if s.len() > MAX_STATE {
            return Err(format!("state: {} bytes, more than {MAX_STATE}", s.len()));
        }
    }
    Ok(state.map(without_run_info).filter(|s| s != "{}"))
}

/// A page's state without the run's information that serve put in it
/// ([`RUN_INFO_KEY`]): the page sends back the state it was given, and
/// what the run used is neither kept for the thread nor told to the model
/// as the page's.
fn without_run_info(state: &str) -> Cow<'_, str> {
    let quoted = format!("\"{RUN_INFO_KEY}\"");
    if !state.starts_with('{') || !state.contains(&quoted) {
        return Cow::Borrowed(state);
    }
    match serde_json::from_str::<serde_json::Value>(state) {
        Ok(serde_json::Value::Object(mut o)) => {
            o.remove(RUN_INFO_KEY);
            Cow::Owned(serde_json::Value::Object(o).to_string())
        }
        _ => Cow::Borrowed(state),
    }
}

/// The block told to the model before the prompt: each context entry on a
/// line of its own, then the `state` (checked by [`given_state`], or the
/// thread's kept one). `Err` when the context is not a list of
/// `{description, value}` strings, or holds more than
/// [`MAX_CONTEXT_ITEMS`] entries or [`MAX_CONTEXT`] bytes.
fn context_block(
    context: Option<&RawValue>,
    state: Option<&str>,
) -> Result<Option<String>, String> {
    let items: Vec<ContextItem> = match context.map(RawValue::get) {
        None | Some("null") => Vec::new(),
        Some(json) => serde_json::from_str(json)
            .map_err(|e| format!("context: not an array of {{description, value}} strings: {e}"))?,
    };
    if items.len() > MAX_CONTEXT_ITEMS {
        return Err(format!(
            "context: {} entries, more than the {MAX_CONTEXT_ITEMS} a page may give",
            items.len()
        ));
    }
    let size: usize = items
        .iter()
        .map(|i| i.description.len() + i.value.len())
        .sum();
    if size > MAX_CONTEXT {
        return Err(format!("context: {size} bytes, more than {MAX_CONTEXT}"));
    }
    if items.is_empty() && state.is_none() {
        return Ok(None);
    }
    let mut block = String::from(CONTEXT_OPEN);
    for i in &items {
        block.push_str(&format!("{}: {}\n", i.description.trim(), i.value.trim()));
    }
    if let Some(s) = state {
        let one_line = s.replace(['\n', '\r'], " ");
        block.push_str(&format!("The application's state (JSON): {one_line}\n"));
    }
    block.push_str(CONTEXT_CLOSE);
    Ok(Some(block))
}

/// The lines that open and close the block of [`context_block`].
const CONTEXT_OPEN: &str = "<context from the application>\n";
const CONTEXT_CLOSE: &str = "</context from the application>\n\n";

/// A prompt as the page wrote it: without the block of the page's
/// context put before it ([`context_block`]), if it begins with one.
pub(super) fn without_context(prompt: &str) -> &str {
    prompt
        .strip_prefix(CONTEXT_OPEN)
        .and_then(|rest| rest.split_once(CONTEXT_CLOSE))
        .map_or(prompt, |(_, words)| words)
}

/// The fields a waiting run reads besides the resume, to be added to its
/// line: `,"toolResults":[{"toolCallId","content"}],"lastRole":…` (each
/// content as the page's text), or nothing when the request has no
/// messages.
pub(super) fn answer_fields(input: &RunAgentInput) -> Vec<u8> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Answer<'a> {
        tool_call_id: &'a str,
        content: String,
    }
    let msgs = &input.messages;
    let Some(role) = &msgs.last_role else {
        return Vec::new();
    };
    let answers: Vec<Answer> = msgs
        .answers
        .iter()
        .map(|(id, c)| Answer {
            tool_call_id: id,
            content: answer_text(id, *c).unwrap_or_default(),
        })
        .collect();
    let mut v = b",\"toolResults\":".to_vec();
    serde_json::to_writer(&mut v, &answers).expect("serializable");
    v.extend_from_slice(b",\"lastRole\":");
    serde_json::to_writer(&mut v, role).expect("serializable");
    v
}

/// Whether the request answers calls of the page's tools: its last message
/// is a `role: "tool"` one after the last user message.
pub(super) fn answers_calls(input: &RunAgentInput) -> bool {
    input.messages.last_role.as_deref() == Some("tool") && !input.messages.answers.is_empty()
}

// The model and effort a page chooses for one run, in its `RunAgentInput`'s
// `forwardedProps`, checked and turned into the run's arguments. Every other
// key of `forwardedProps` is the page's (or its runtime's: CopilotKit puts
// `threadMetadata`, `nodeName` and `properties` there) and reaches no CLI.
/// The longest model name a page may give (bytes).
pub(super) const MAX_MODEL: usize = 256;

/// The longest effort level a page may give to a CLI whose levels are its
/// model's (bytes).
const MAX_LEVEL: usize = 32;

/// How a CLI takes a reasoning effort (the run's `--effort`): the levels
/// it knows, as its option spells them (none: its model's own, which the
/// CLI checks), and the CLI's own option, by which the server's run
/// options could set it too.
struct EffortOption {
    levels: Option<&'static [&'static str]>,
    set_by: &'static str,
}

/// The CLIs with a choice of effort: Codex's `-c model_reasoning_effort=`
/// (on its command line and its app-server's alike), Claude Code's
/// `--effort`, Copilot CLI's `--reasoning-effort` and OpenCode's model
/// variant (`--variant`; over ACP its session's `effort`, among the levels
/// it offers for the model).
fn effort_option(cli: Dialect) -> Option<EffortOption> {
    let (levels, set_by): (Option<&'static [&'static str]>, _) = match cli.name() {
        "codex" => (
            Some(&["none", "minimal", "low", "medium", "high", "xhigh"]),
            "model_reasoning_effort",
        ),
        "claude" => (Some(&["low", "medium", "high", "xhigh", "max"]), "--effort"),
        "copilot" => (
            Some(&["none", "minimal", "low", "medium", "high", "xhigh", "max"]),
            "--reasoning-effort",
        ),
        "opencode" => (None, "--variant"),
        _ => return None,
    };
    Some(EffortOption { levels, set_by })
}

/// The choices of one request, checked.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Choices {
    model: Option<String>,
    effort: Option<String>,
}

/// The two keys taken from `forwardedProps`; the rest is left alone.
#[derive(Deserialize)]
struct Props<'a> {
    #[serde(default, borrow)]
    model: Option<&'a RawValue>,
    #[serde(default, borrow)]
    effort: Option<&'a RawValue>,
}

/// The choices in `forwarded` (the request's `forwardedProps`) for a run of
/// `cli` with the server's run `options`, or why they are refused (the
/// `400`'s message).
fn choices(
    cli: Dialect,
    options: &[String],
    forwarded: Option<&RawValue>,
) -> Result<Choices, String> {
    // A `forwardedProps` that is not an object chooses nothing (serde
    // would take an array's items for the fields, in order).
    let props = forwarded
        .filter(|f| f.get().trim_start().starts_with('{'))
        .and_then(|f| serde_json::from_str::<Props>(f.get()).ok());
    let Some(props) = props else {
        return Ok(Choices::default());
    };
    let model = string(props.model, "model")?;
    let effort = string(props.effort, "effort")?;
    let mut c = Choices::default();
    if let Some(m) = model {
        model_ok(&m)?;
        model_taken(cli, options)?;
        c.model = Some(m);
    }
    if let Some(e) = effort {
        let option = effort_taken(cli, options)?;
        level_ok(cli, &option, &e)?;
        c.effort = Some(e);
    }
    Ok(c)
}

/// Whether `e` is a level of the effort `option` of `cli`: one of its
/// levels, or, where they are its model's, a level's name.
fn level_ok(cli: Dialect, option: &EffortOption, e: &str) -> Result<(), String> {
    let title = cli.spec().title;
    match option.levels {
        Some(levels) if levels.contains(&e) => Ok(()),
        Some(levels) => Err(format!(
            "forwardedProps.effort {:?} is not one of {} (the levels {title} takes)",
            shown(e),
            levels.join(", "),
        )),
        None if !e.is_empty()
            && e.len() <= MAX_LEVEL
            && !e.starts_with('-')
            && e.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            Ok(())
        }
        None => Err(format!(
            "forwardedProps.effort {:?} is not a level's name (1 to {MAX_LEVEL} letters, digits, \
             '-' or '_', not beginning with '-'); {title}'s levels are its model's (low, medium, \
             high, …)",
            shown(e)
        )),
    }
}

impl Choices {
    /// Adds the choices to the arguments of the run (`argv`, which ends
    /// with the server's run options): the model as run's `--model`, the
    /// effort as its `--effort`, before the run options (which may end
    /// with the CLI's own).
    pub(super) fn add_to(&self, argv: &mut Vec<OsString>, options: &[String]) {
        let at = argv.len() - options.len();
        let chosen = [("--model", &self.model), ("--effort", &self.effort)];
        for (option, value) in chosen.into_iter().rev() {
            if let Some(v) = value {
                argv.insert(at, format!("{option}={v}").into());
            }
        }
    }
}

/// The value of `forwardedProps.KEY`: none when absent or `null`, else a
/// string.
fn string(value: Option<&RawValue>, key: &str) -> Result<Option<String>, String> {
    let Some(v) = value.filter(|v| v.get() != "null") else {
        return Ok(None);
    };
    serde_json::from_str::<String>(v.get())
        .map(Some)
        .map_err(|_| format!("forwardedProps.{key} must be a string"))
}

/// A model name a CLI can take as an option's value.
fn model_ok(m: &str) -> Result<(), String> {
    let why = if m.is_empty() {
        "is empty"
    } else if m.len() > MAX_MODEL {
        "is too long"
    } else if m.starts_with('-') {
        "begins with '-' (it would be taken for an option)"
    } else if m.chars().any(char::is_control) {
        "has a control character"
    } else {
        return Ok(());
    };
    Err(format!(
        "forwardedProps.model {:?} {why}: a model is 1 to {MAX_MODEL} bytes, no control \
         characters, not beginning with '-'",
        shown(m)
    ))
}

/// Whether the run can take a model from the page, or why not.
fn model_taken(cli: Dialect, options: &[String]) -> Result<(), String> {
    let own = own_options(options);
    if own
        .iter()
        .any(|o| *o == "--model" || o.starts_with("--model="))
    {
        return Err(
            "forwardedProps.model: the server's run options set the model (--model); \
             a page cannot choose another"
                .into(),
        );
    }
    // OpenCode over ACP takes it in the session (`session/set_config_option`).
    match cli.name() {
        "acp" => Err(
            "forwardedProps.model: an ACP agent takes its model from its own \
                      options, not from the page"
                .into(),
        ),
        _ => Ok(()),
    }
}

/// How the run can take an effort from the page, or why it cannot.
fn effort_taken(cli: Dialect, options: &[String]) -> Result<EffortOption, String> {
    let Some(option) = effort_option(cli) else {
        return Err(format!(
            "forwardedProps.effort: {} has no choice of a reasoning effort (claude, codex, \
             copilot and opencode have one)",
            cli.spec().title
        ));
    };
    let own = own_options(options);
    let by_run = own
        .iter()
        .find(|o| *o == "--effort" || o.starts_with("--effort="));
    let by_cli = options[own.len()..]
        .iter()
        .find(|o| o.contains(option.set_by));
    if let Some(set) = by_run.map(|_| "--effort").or(by_cli.map(|_| option.set_by)) {
        return Err(format!(
            "forwardedProps.effort: the server's run options set the effort ({set}); a page \
             cannot choose another"
        ));
    }
    Ok(option)
}

/// The run options proper: those before `--` (after it come the CLI's).
fn own_options(options: &[String]) -> &[String] {
    let end = options
        .iter()
        .position(|o| o == "--")
        .unwrap_or(options.len());
    &options[..end]
}

/// `--transport`'s value among the run options, if given.
fn transport(own: &[String]) -> Option<&str> {
    option_value(own, "--transport")
}

/// The value of the option `name` (`--name VALUE` or `--name=VALUE`)
/// among the run options proper `own`, if given.
fn option_value<'a>(own: &'a [String], name: &str) -> Option<&'a str> {
    own.iter().enumerate().find_map(|(i, o)| {
        match o.strip_prefix(name).and_then(|v| v.strip_prefix('=')) {
            Some(v) => Some(v),
            None if o == name => own.get(i + 1).map(String::as_str),
            None => None,
        }
    })
}

/// A value as a refusal shows it: its first 64 characters.
fn shown(v: &str) -> String {
    v.chars().take(64).collect()
}

// The files of the last user message: its 1.0 content parts (`image`,
// `audio`, `video`, `document`) and 0.0 `binary` parts, checked and
// decoded, each for the run as a file of its own (`run --attach`). A part
// no run can take is refused (a `400` naming it and saying why), never
// dropped.
/// The most files one user message may hold.
pub(super) const MAX_ATTACHMENTS: usize = 16;

/// The extension of the directory of a run's files, beside its session
/// file (and removed with it).
pub(super) const FILES_EXT: &str = "files";

/// A file of the page's, decoded.
pub(super) struct Attached {
    ext: &'static str,
    bytes: Vec<u8>,
}

/// A content part, in its 1.0 shape or the 0.0 `binary` one.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartIn<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    /// 1.0: `{type: data|url|file, value, mimeType}`.
    #[serde(default, borrow)]
    source: Option<SourceIn<'a>>,
    /// 1.0: `{filename, …}`, to name the part.
    #[serde(default, borrow)]
    metadata: Option<&'a RawValue>,
    // 0.0 `binary`:
    #[serde(default, borrow)]
    mime_type: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    data: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    url: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    filename: Option<Cow<'a, str>>,
    /// A `text` part's words.
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SourceIn<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    value: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    mime_type: Option<Cow<'a, str>>,
}

/// The kinds of content parts a user message may hold.
const PART_KINDS: &str = "text, image, audio, video, document (1.0), binary (0.0)";

/// Who takes the files: the CLI, and whether its runs speak the Agent
/// Client Protocol (`--approval ask` or `--transport acp` among the run
/// options, or a run of files for a CLI that takes them there only),
/// over which images go as prompt blocks.
#[derive(Clone, Copy)]
pub(super) struct Takes {
    cli: Dialect,
    acp: bool,
}

impl Takes {
    fn of(cli: Dialect, ask: bool, options: &[String]) -> Takes {
        let how = transport(own_options(options));
        let acp = cli.acp().is_some()
            && (cli.exec().is_none()
                || ask
                || how == Some("acp")
                || (files_pick_acp(cli.name()) && how.is_none_or(|h| h == "auto")));
        Takes { cli, acp }
    }
}

/// The files of `content` (the last user message's) a run of `to` takes,
/// each at most `max` bytes decoded, those of `url` parts fetched from
/// `fetch`'s hosts; `Err` names the first part refused and why.
pub(super) fn attachments(
    content: Option<&RawValue>,
    to: Takes,
    max: usize,
    fetch: &[FetchHost],
) -> Result<Vec<Attached>, String> {
    use serde::de::DeserializeSeed;
    let Some(json) = content.map(RawValue::get).filter(|c| c.starts_with('[')) else {
        return Ok(Vec::new());
    };
    let mut files = Vec::new();
    let mut refused = None;
    let seed = Parts {
        to,
        max,
        fetch,
        files: &mut files,
        refused: &mut refused,
    };
    let mut de = serde_json::Deserializer::from_str(json);
    match seed.deserialize(&mut de) {
        Ok(()) => Ok(files),
        Err(e) => Err(refused
            .unwrap_or_else(|| format!("the user message's content: not an array of parts: {e}"))),
    }
}

/// The parts of a content, each checked as it is read (a body of many
/// small parts costs no list of them): the files kept, the first refusal
/// said.
struct Parts<'s> {
    to: Takes,
    max: usize,
    fetch: &'s [FetchHost],
    files: &'s mut Vec<Attached>,
    refused: &'s mut Option<String>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Parts<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Parts<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of parts")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        // What the message's fetches may still bring, together.
        let mut left = fetch_total(self.max);
        while let Some(part) = seq.next_element::<PartIn<'de>>()? {
            i += 1;
            if part.kind.as_deref() == Some("text") {
                continue;
            }
            let named = part_name(i, &part);
            let file = if self.files.len() == MAX_ATTACHMENTS {
                Err(format!(
                    "a user message may hold at most {MAX_ATTACHMENTS} files"
                ))
            } else {
                attachment(&part, self.to, self.max, (self.fetch, &mut left))
            };
            match file {
                Ok(f) => self.files.push(f),
                Err(why) => {
                    *self.refused = Some(format!("{named}: {why}"));
                    return Err(serde::de::Error::custom("refused"));
                }
            }
        }
        Ok(())
    }
}

/// The file name a part gives: the 0.0 `filename`, or the 1.0
/// `metadata.filename`.
fn file_name(part: &PartIn) -> Option<String> {
    #[derive(Deserialize)]
    struct Meta {
        filename: Option<String>,
    }
    part.filename.as_deref().map(str::to_owned).or_else(|| {
        part.metadata
            .and_then(|m| serde_json::from_str::<Meta>(m.get()).ok())
            .and_then(|m| m.filename)
    })
}

/// What the thread's history keeps of the last user message's content
/// when it holds files (`None` when it holds none: its text is kept): its
/// parts in order, its text parts (those side by side made one, a line
/// each, as the prompt has them) as they are, and each file, whose bytes
/// are not kept, as a text part that stands in for it, naming its kind,
/// its name, its type and its size: `[image "shot.png" (image/png, 75
/// bytes): not kept in the thread's history]`. Read part by part: a
/// content of many parts costs no list of them.
pub(super) fn kept_content(content: Option<&RawValue>) -> Option<serde_json::Value> {
    use serde::de::DeserializeSeed;
    let json = content.map(RawValue::get).filter(|c| c.starts_with('['))?;
    let mut kept = Kept::default();
    let mut de = serde_json::Deserializer::from_str(json);
    (&mut kept).deserialize(&mut de).ok()?;
    kept.text_part();
    (kept.files > 0).then_some(serde_json::Value::Array(kept.parts))
}

/// The parts kept of a content so far ([`kept_content`]).
#[derive(Default)]
struct Kept {
    parts: Vec<serde_json::Value>,
    /// Text parts read since the last file, a line each.
    text: Option<String>,
    files: usize,
}

impl Kept {
    /// The text parts read since the last file, as one part.
    fn text_part(&mut self) {
        if let Some(text) = self.text.take().filter(|t| !t.trim().is_empty()) {
            self.parts
                .push(serde_json::json!({"type": "text", "text": text}));
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for &mut Kept {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for &mut Kept {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of parts")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(part) = seq.next_element::<PartIn<'de>>()? {
            match (part.kind.as_deref(), part.text.as_deref()) {
                (Some("text"), Some(words)) => {
                    let text = self.text.get_or_insert_with(String::new);
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(words);
                }
                (Some("text"), None) => {}
                _ => {
                    self.text_part();
                    self.parts
                        .push(serde_json::json!({"type": "text", "text": stand_in(&part)}));
                    self.files += 1;
                }
            }
        }
        Ok(())
    }
}

/// The text that stands in for a file part in the thread's history.
fn stand_in(part: &PartIn) -> String {
    let kind = shown(part.kind.as_deref().unwrap_or("file"));
    let (mime, data) = match &part.source {
        Some(s) => (s.mime_type.as_deref(), s.value.as_deref()),
        None => (part.mime_type.as_deref(), part.data.as_deref()),
    };
    let mut about = Vec::new();
    if let Some(mime) = mime {
        about.push(shown(mime));
    }
    if let Some(data) = data.filter(|_| part.source.as_ref().is_none_or(|s| s.kind == "data")) {
        let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
        let digits = data.len() - padding;
        about.push(format!("{} bytes", digits * 3 / 4));
    }
    let about = if about.is_empty() {
        String::new()
    } else {
        format!(" ({})", about.join(", "))
    };
    match file_name(part) {
        Some(name) => format!(
            "[{kind} {:?}{about}: not kept in the thread's history]",
            shown(&name)
        ),
        None => format!("[{kind}{about}: not kept in the thread's history]"),
    }
}

/// How a refusal names part `i` (from 1): its place, kind and file name.
fn part_name(i: usize, part: &PartIn) -> String {
    let file = file_name(part);
    let kind = shown(part.kind.as_deref().unwrap_or("no type"));
    match file {
        Some(f) => format!("the user message's part {i} ({kind} {:?})", shown(&f)),
        None => format!("the user message's part {i} ({kind})"),
    }
}

/// One part checked and decoded, or why a run of `cli` cannot take it.
fn attachment(
    part: &PartIn,
    to: Takes,
    max: usize,
    fetch: (&[FetchHost], &mut usize),
) -> Result<Attached, String> {
    let (how, value, mime) = match (part.kind.as_deref(), &part.source) {
        (Some("image" | "audio" | "video" | "document"), Some(s)) => {
            (s.kind.as_ref(), s.value.as_deref(), s.mime_type.as_deref())
        }
        (Some("image" | "audio" | "video" | "document"), None) => {
            return Err("it has no source".into())
        }
        (Some("binary"), _) => match (&part.data, &part.url, &part.id) {
            (Some(d), _, _) => ("data", Some(d.as_ref()), part.mime_type.as_deref()),
            (None, Some(u), _) => ("url", Some(u.as_ref()), part.mime_type.as_deref()),
            (None, None, Some(_)) => ("file", None, None),
            (None, None, None) => return Err("it has no data".into()),
        },
        (None, _) => return Err(format!("it has no type (a content part is {PART_KINDS})")),
        (Some(kind), _) => {
            return Err(format!(
                "type {:?} is not a content part this server takes ({PART_KINDS})",
                shown(kind)
            ))
        }
    };
    match how {
        "data" => {}
        "url" => {}
        "file" => {
            return Err(
                "a file handle (of a provider's): this server cannot read it; send the \
                        file's bytes (a data source, base64)"
                    .into(),
            )
        }
        other => {
            return Err(format!(
                "source type {:?} is not data, url or file",
                shown(other)
            ))
        }
    }
    if how == "url" {
        let url = value.ok_or("a url source needs its value (the URL)")?;
        return fetched_part(url, mime, to, max, fetch);
    }
    let mime = mime.ok_or("a data source needs its mimeType")?;
    let (media_type, ext) = media_type(mime)?;
    if let Some(why) = attachment_refused(to.cli.name(), media_type, to.acp) {
        return Err(why);
    }
    let value = value.ok_or("a data source needs its value (base64)")?;
    // The decoded size, known before decoding.
    let size = value.len() / 4 * 3;
    if size > max + 2 {
        return Err(format!(
            "about {size} bytes, more than the {max} a file may have (--max-attachment)"
        ));
    }
    let bytes = BASE64
        .decode(value)
        .map_err(|e| format!("its data is not base64: {e}"))?;
    if bytes.len() > max {
        return Err(format!(
            "{} bytes, more than the {max} a file may have (--max-attachment)",
            bytes.len()
        ));
    }
    Ok(Attached { ext, bytes })
}

/// The media type `mime` names (its parameters and case aside), with the
/// extension of a file of it; `Err` when it is not one of [`MEDIA_TYPES`].
fn media_type(mime: &str) -> Result<(&'static str, &'static str), String> {
    let bare = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match MEDIA_TYPES.iter().find(|(t, _)| *t == bare) {
        Some(&found) => Ok(found),
        None => Err(format!(
            "type {:?} is not one this server takes ({})",
            shown(mime),
            media_types()
        )),
    }
}

// `serve --allow-fetch HOST`: a `url` part whose host the operator named is
// fetched here, where the page's files are prepared, and its bytes then
// take the route of a `data` part's. Everything of it is the page's
// input: the URL (its scheme, host and port, no credentials), and the
// answer of a server the page may have put there (its status, its type,
// its size: counted as it is read).

/// The most bytes the fetched files of one message may have together,
/// when a file may have `max`: what a request body may carry of files
/// (16 MiB more than one file), so that a fetching message costs no more
/// memory than a sending one.
fn fetch_total(max: usize) -> usize {
    max.saturating_add(16 << 20)
}

/// The longest URL a part may give.
const MAX_URL: usize = 8 * 1024;
/// How long connecting to a named host may take.
const FETCH_CONNECT: Duration = Duration::from_secs(10);
/// How long a fetch may take in all, from its start to the last byte.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// A host `--allow-fetch` names: `HOST[:PORT]` for HTTPS (port 443 unless
/// given), `http://HOST[:PORT]` for plain HTTP (port 80 unless given).
/// A URL is fetched when its scheme, host (in any case) and port are
/// exactly those of one named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FetchHost {
    https: bool,
    host: String,
    port: u16,
}

/// The host `--allow-fetch` names in `arg`, or why it names none.
pub(super) fn fetch_host(arg: &str) -> Result<FetchHost, String> {
    let (https, authority) = match arg.strip_prefix("http://") {
        Some(rest) => (false, rest),
        None => (true, arg.strip_prefix("https://").unwrap_or(arg)),
    };
    let scheme = if https { "https" } else { "http" };
    let url = format!("{scheme}://{authority}/");
    match parsed_url(&url) {
        Ok((host, uri)) if uri.authority().is_some_and(|a| a.as_str() == authority) => {
            Ok(host)
        }
        _ => Err(format!(
            "--allow-fetch {:?}: not HOST, HOST:PORT or http://HOST[:PORT] (no path, no credentials)",
            shown(arg)
        )),
    }
}

/// `url` parsed (as the request will be made to it): its host, or why it
/// is not a URL this server could fetch whatever the host.
fn parsed_url(url: &str) -> Result<(FetchHost, ureq::http::Uri), String> {
    if url.len() > MAX_URL {
        return Err(format!("a URL of {} bytes, more than {MAX_URL}", url.len()));
    }
    if !url.bytes().all(|b| b.is_ascii_graphic() && b != b'\\') {
        return Err(
            "its URL holds a space, a control character, a backslash or a byte that is not ASCII"
                .into(),
        );
    }
    let uri: ureq::http::Uri = url.parse().map_err(|e| format!("not a URL ({e})"))?;
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err("not an https:// (or http://) URL".into()),
    };
    let Some(authority) = uri.authority() else {
        return Err("a URL without a host".into());
    };
    if authority.as_str().contains('@') {
        return Err("credentials in the URL are refused: this server sends none".into());
    }
    let host = authority.host().to_ascii_lowercase();
    if host.is_empty() {
        return Err("a URL without a host".into());
    }
    let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
    Ok((FetchHost { https, host, port }, uri))
}

/// The file of a `url` part (of type `mime`, if it says) for a run of
/// `to`: fetched when its host is one of `hosts`, else refused.
fn fetched_part(
    url: &str,
    mime: Option<&str>,
    to: Takes,
    max: usize,
    (hosts, left): (&[FetchHost], &mut usize),
) -> Result<Attached, String> {
    let (host, uri) = parsed_url(url)?;
    if !hosts.contains(&host) {
        let named = match (host.https, host.port) {
            (true, 443) => host.host.clone(),
            (true, port) => format!("{}:{port}", host.host),
            (false, 80) => format!("http://{}", host.host),
            (false, port) => format!("http://{}:{port}", host.host),
        };
        return Err(format!(
            "a url source from {}: this server never fetches a URL from a host its operator \
             has not named (serve --allow-fetch {}); send the file's bytes (a data source, \
             base64)",
            shown(&named),
            shown(&named)
        ));
    }
    // What the page says it is, checked before anything is fetched.
    let declared = mime.map(media_type).transpose()?;
    if let Some((media_type, _)) = declared {
        if let Some(why) = attachment_refused(to.cli.name(), media_type, to.acp) {
            return Err(why);
        }
    }
    let limit = if *left < max {
        format!(
            "the {left} bytes left of the {} the fetched files of a message may have together",
            fetch_total(max)
        )
    } else {
        format!("the {max} a file may have (--max-attachment)")
    };
    let (bytes, answered) = fetch(uri, &host.host, max.min(*left), &limit)?;
    *left -= bytes.len();
    let answered =
        answered.ok_or_else(|| format!("{} answered with no Content-Type", host.host))?;
    let (media_type, ext) =
        media_type(&answered).map_err(|why| format!("{} answered a file of {why}", host.host))?;
    if let Some((declared, _)) = declared.filter(|(t, _)| *t != media_type) {
        return Err(format!(
            "its mimeType is {declared}, but {} answered {media_type}",
            host.host
        ));
    }
    if let Some(why) = attachment_refused(to.cli.name(), media_type, to.acp) {
        return Err(why);
    }
    Ok(Attached { ext, bytes })
}

/// The body of a `GET` of `uri` (on `host`) and its Content-Type: at most
/// `max` bytes (`limit` says what they are, for a refusal), counted as
/// they come; no redirect followed, no proxy, no credentials or cookies
/// sent.
fn fetch(
    uri: ureq::http::Uri,
    host: &str,
    max: usize,
    limit: &str,
) -> Result<(Vec<u8>, Option<String>), String> {
    use std::io::Read;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .proxy(None)
        .timeout_connect(Some(FETCH_CONNECT))
        .timeout_global(Some(FETCH_TIMEOUT))
        .user_agent(concat!("agui-translate/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let response = agent
        .get(uri)
        .call()
        .map_err(|e| format!("fetching it from {host} failed: {e}"))?;
    let status = response.status();
    let header = |name: &str| {
        let value = response.headers().get(name)?;
        Some(String::from_utf8_lossy(value.as_bytes()).into_owned())
    };
    if status.is_redirection() {
        let to = header("location").map_or(String::new(), |l| format!(" to {:?}", shown(&l)));
        return Err(format!(
            "{host} answered {status}, a redirect{to}: this server follows no redirect; give the file's own URL"
        ));
    }
    if !status.is_success() {
        return Err(format!("{host} answered {status}"));
    }
    if let Some(coding) = header("content-encoding").filter(|c| !c.eq_ignore_ascii_case("identity"))
    {
        return Err(format!(
            "{host} answered an encoded body ({:?}), not the file's bytes",
            shown(&coding)
        ));
    }
    let length = header("content-length").and_then(|l| l.trim().parse::<u64>().ok());
    if let Some(length) = length.filter(|&l| l > max as u64) {
        return Err(format!(
            "{host} announced {length} bytes, more than {limit}"
        ));
    }
    let kind = header("content-type");
    let mut bytes = Vec::new();
    let most = max as u64 + 1;
    let reader = response
        .into_body()
        .into_with_config()
        .limit(u64::MAX)
        .reader();
    reader
        .take(most)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading it from {host} failed: {e}"))?;
    if bytes.len() > max {
        return Err(format!(
            "{host} sent more than {limit}; the rest was not read"
        ));
    }
    Ok((bytes, kind))
}

/// Base64 as pages send it: the standard alphabet, padded or not.
const BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

/// Writes `files` to a directory of their own beside `session_file`
/// (private, 0700), and gives the run arguments that attach them.
pub(super) fn attach_args(
    session_file: &Path,
    files: &[Attached],
) -> std::io::Result<Vec<OsString>> {
    use std::os::unix::fs::DirBuilderExt;
    if files.is_empty() {
        return Ok(Vec::new());
    }
    let dir = session_file.with_extension(FILES_EXT);
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    let mut args = Vec::with_capacity(files.len());
    for (i, f) in files.iter().enumerate() {
        let path = dir.join(format!("{}.{}", i + 1, f.ext));
        std::fs::write(&path, &f.bytes)?;
        let mut arg = OsString::from("--attach=");
        arg.push(&path);
        args.push(arg);
    }
    Ok(args)
}

/// What a run used (its model, effort, approval mode, working directory,
/// and its usage once it has finished), published to the page in its state under
/// [`RUN_INFO_KEY`], merged with the page's own state: a `STATE_SNAPSHOT`
/// after the run's `RUN_STARTED`, and a `STATE_DELTA` of that key alone
/// before each `RUN_FINISHED`. The
/// model's new state (its `STATE_SNAPSHOT`) is merged with it as well, so
/// that the page's state always holds both.
pub(super) struct RunInfo {
    /// The page's state (a JSON object), without the run's information.
    state: serde_json::Map<String, serde_json::Value>,
    /// What the run used.
    info: serde_json::Map<String, serde_json::Value>,
}

impl RunInfo {
    /// The information of the run of `input` (checked as `page`) on a
    /// server of the run `options`; none when the page's state is not a
    /// JSON object (a list, a string: there is no key to put it under).
    pub(super) fn new(
        input: &RunAgentInput,
        page_state: Option<&str>,
        choices: &Choices,
        options: &[String],
    ) -> Option<RunInfo> {
        use serde_json::Value;
        let state = match page_state {
            Some(s) => serde_json::from_str::<Value>(s).ok()?,
            // A state the page gave that is not an object, and not empty.
            None if given_state(input.state).ok()?.is_some() => return None,
            None => Value::Object(serde_json::Map::new()),
        };
        let Value::Object(mut state) = state else {
            return None;
        };
        state.remove(RUN_INFO_KEY);
        let own = own_options(options);
        let model = choices
            .model
            .as_deref()
            .or_else(|| option_value(own, "--model"))
            .or_else(|| option_value(own, "-m"));
        // The directory's name, not its path: the page is told no place on
        // the server's machine.
        let cwd = option_value(own, "--cwd")
            .map(std::path::PathBuf::from)
            .or_else(|| std::env::current_dir().ok())
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()));
        let effort = choices
            .effort
            .as_deref()
            .or_else(|| option_value(own, "--effort"));
        let mut info = serde_json::Map::new();
        info.insert("model".into(), model.into());
        info.insert("effort".into(), effort.into());
        let approval = option_value(own, "--approval").unwrap_or("default");
        info.insert("approval".into(), approval.into());
        info.insert("cwd".into(), cwd.into());
        info.insert("usage".into(), Value::Array(Vec::new()));
        Some(RunInfo { state, info })
    }

    /// The `STATE_SNAPSHOT` of the page's state with the run's information.
    pub(super) fn snapshot(&self) -> Vec<u8> {
        let mut all = self.state.clone();
        all.insert(
            RUN_INFO_KEY.into(),
            serde_json::Value::Object(self.info.clone()),
        );
        let all = serde_json::Value::Object(all);
        // The type first, as the writer puts it.
        format!("data: {{\"type\":\"STATE_SNAPSHOT\",\"snapshot\":{all}}}\n\n").into_bytes()
    }

    /// The model's `STATE_SNAPSHOT` (`event`, a whole SSE event), its state
    /// now the page's: the event to send instead, with the run's
    /// information merged in.
    pub(super) fn model_state(&mut self, event: &[u8]) -> Vec<u8> {
        let Some(serde_json::Value::Object(mut state)) =
            event_data(event).map(|mut e| e["snapshot"].take())
        else {
            return event.to_vec();
        };
        state.remove(RUN_INFO_KEY);
        self.state = state;
        self.snapshot()
    }

    /// A `RUN_FINISHED` (`event`): its usage taken, the `STATE_DELTA` to
    /// send before it, which replaces what the run used and nothing else
    /// (the model's own state may have come as deltas the server does not
    /// follow).
    pub(super) fn finished(&mut self, event: &[u8]) -> Vec<u8> {
        if let Some(usage) = event_data(event).map(|mut e| e["usage"].take()) {
            if usage.is_array() {
                self.info.insert("usage".into(), usage);
            }
        }
        let delta = serde_json::json!([{
            "op": "add",
            "path": format!("/{RUN_INFO_KEY}"),
            "value": serde_json::Value::Object(self.info.clone()),
        }]);
        // The type first, as the writer puts it.
        format!("data: {{\"type\":\"STATE_DELTA\",\"delta\":{delta}}}\n\n").into_bytes()
    }
}

impl RunInfo {
    /// What the run used, as its thread keeps it (JSON).
    pub(super) fn kept(&self) -> Vec<u8> {
        serde_json::to_vec(&self.info).expect("serializable")
    }
}

/// The `STATE_SNAPSHOT` that tells a page coming back to its thread (in a
/// run that starts no CLI) its state, `state` (the page's, or the
/// thread's kept one), with what the thread's last run used (`info`, as
/// [`RunInfo::kept`] wrote it) under [`RUN_INFO_KEY`], as each run
/// publishes it: none when there is neither, or when the state is not a
/// JSON object.
pub(super) fn thread_state(state: Option<&str>, info: Option<&[u8]>) -> Option<Vec<u8>> {
    use serde_json::Value;
    let mut all = match state.map(serde_json::from_str::<Value>) {
        Some(Ok(Value::Object(all))) => all,
        Some(_) => return None,
        None => serde_json::Map::new(),
    };
    all.remove(RUN_INFO_KEY);
    let info = info
        .and_then(|i| serde_json::from_slice::<Value>(i).ok())
        .filter(Value::is_object);
    match info {
        Some(info) => {
            all.insert(RUN_INFO_KEY.into(), info);
        }
        None if state.is_none() => return None,
        None => {}
    }
    let all = Value::Object(all);
    // The type first, as the writer puts it.
    Some(format!("data: {{\"type\":\"STATE_SNAPSHOT\",\"snapshot\":{all}}}\n\n").into_bytes())
}

/// The JSON of an SSE event's `data:` line.
fn event_data(event: &[u8]) -> Option<serde_json::Value> {
    let data = event
        .split(|&b| b == b'\n')
        .find_map(|l| l.strip_prefix(b"data: "))?;
    serde_json::from_slice(data).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(json: &str) -> RunAgentInput<'_> {
        serde_json::from_str(json).unwrap()
    }

    /// `--max-attachment`'s default.
    const MAX_FILE: usize = 20 << 20;

    fn claude() -> Dialect {
        Dialect::named("claude").unwrap()
    }

    #[test]
    fn context_and_state_come_before_the_prompt() {
        let i = input(
            r#"{"threadId":"t","context":[{"description":"User's name","value":"Ada"},{"description":"Open file","value":"src/lib.rs"}],"state":{"count":2}}"#,
        );
        let page = Page::check(&i, claude(), false, &[], MAX_FILE, &[], || None).unwrap();
        assert_eq!(
            page.prompt("Hi".into()),
            "<context from the application>\nUser's name: Ada\nOpen file: src/lib.rs\nThe application's state (JSON): {\"count\":2}\n</context from the application>\n\nHi"
        );
        let none = Page::check(
            &input(r#"{"threadId":"t","context":[],"state":{}}"#),
            claude(),
            false,
            &[],
            MAX_FILE,
            &[],
            || None,
        )
        .unwrap();
        assert_eq!(none.prompt("Hi".into()), "Hi");
        assert!(!none.state_tool && none.state_given.is_none());
    }

    #[test]
    fn the_page_s_state_replaces_the_kept_one_and_empty_keeps_it() {
        let kept = || Some(r#"{"kept":1}"#.to_owned());
        let check = |json: &str, cli: &str| {
            Page::check(
                &input(json),
                Dialect::named(cli).unwrap(),
                false,
                &[],
                MAX_FILE,
                &[],
                kept,
            )
            .unwrap()
        };
        let given = check(r#"{"threadId":"t","state":{"page":2}}"#, "claude");
        assert_eq!(given.state_given.as_deref(), Some(r#"{"page":2}"#));
        assert_eq!(given.state_kept, None, "the page has it");
        assert!(given.state_tool);
        assert!(given.prompt("Hi".into()).contains(r#"(JSON): {"page":2}"#));
        // What the run used, sent back by the page, is not its state.
        let back = check(
            r#"{"threadId":"t","state":{"page":2,"agui-translate":{"model":null}}}"#,
            "claude",
        );
        assert_eq!(back.state_given.as_deref(), Some(r#"{"page":2}"#));
        for empty in [
            r#""state":{}"#,
            r#""state":null"#,
            r#""context":[]"#,
            r#""state":{"agui-translate":{"usage":[]}}"#,
        ] {
            let page = check(&format!(r#"{{"threadId":"t",{empty}}}"#), "codex");
            assert_eq!(page.state_given, None, "{empty}");
            assert_eq!(page.state_kept.as_deref(), Some(r#"{"kept":1}"#));
            assert!(page.state_tool, "{empty}: the kept state");
            assert!(page.prompt("Hi".into()).contains(r#"(JSON): {"kept":1}"#));
        }
        // Gemini CLI takes it over ACP, as the other CLIs by their routes.
        let gemini = check(r#"{"threadId":"t","state":{"page":2}}"#, "gemini");
        assert!(gemini.state_tool);
        // A route that takes no tools is told the state, and offered no
        // tool: Qwen Code over ACP, Gemini CLI in its stream mode.
        let state = r#"{"threadId":"t","state":{"page":2}}"#;
        for (cli, ask, options) in [
            ("qwen", true, &[][..]),
            ("gemini", false, &["--transport=stream".to_owned()][..]),
        ] {
            let page = Page::check(
                &input(state),
                Dialect::named(cli).unwrap(),
                ask,
                options,
                MAX_FILE,
                &[],
                kept,
            )
            .unwrap();
            assert!(!page.state_tool, "{cli}");
            assert_eq!(page.state_given.as_deref(), Some(r#"{"page":2}"#));
            assert!(page.prompt("Hi".into()).contains(r#"(JSON): {"page":2}"#));
        }
        // A state that is not an object is told, neither kept nor changed.
        let list = check(r#"{"threadId":"t","state":[1,2]}"#, "claude");
        assert!(!list.state_tool && list.state_given.is_none());
        assert!(list.prompt("Hi".into()).contains("(JSON): [1,2]"));
    }

    #[test]
    fn each_field_has_its_limit() {
        let why = |json: &str| {
            Page::check(&input(json), claude(), false, &[], MAX_FILE, &[], || None)
                .err()
                .unwrap()
        };
        assert!(why(r#"{"threadId":"t","context":{"a":1}}"#).starts_with("context: not an array"));
        let many = format!(
            r#"{{"threadId":"t","context":[{}]}}"#,
            vec![r#"{"description":"d","value":"v"}"#; MAX_CONTEXT_ITEMS + 1].join(",")
        );
        assert!(why(&many).contains("129 entries"));
        let big = format!(
            r#"{{"threadId":"t","context":[{{"description":"d","value":"{}"}}]}}"#,
            "a".repeat(MAX_CONTEXT)
        );
        assert!(why(&big).contains("more than 65536"));
        let state = format!(
            r#"{{"threadId":"t","state":{{"a":"{}"}}}}"#,
            "a".repeat(MAX_STATE)
        );
        assert!(why(&state).starts_with("state:"));
        assert!(why(r#"{"threadId":"t","tools":[{"name":"Bash"}]}"#)
            .contains("the CLI has a tool of that name"));
        let answer = format!(
            r#"{{"threadId":"t","messages":[{{"role":"user","content":"x"}},{{"role":"tool","toolCallId":"c","content":"{}"}}]}}"#,
            "a".repeat(MAX_ANSWER + 1)
        );
        assert!(why(&answer).contains("the answer to tool call \"c\""));
    }

    #[test]
    fn the_answers_are_the_tool_messages_after_the_last_user_message() {
        let i = input(
            r#"{"threadId":"t","messages":[
                {"role":"tool","toolCallId":"old","content":"x"},
                {"role":"user","content":"go"},
                {"role":"assistant","toolCalls":[]},
                {"role":"tool","toolCallId":"a","content":[{"type":"text","text":"A"}]},
                {"role":"tool","toolCallId":"b","content":"B"}]}"#,
        );
        assert!(answers_calls(&i));
        assert_eq!(
            String::from_utf8(answer_fields(&i)).unwrap(),
            r#","toolResults":[{"toolCallId":"a","content":"A"},{"toolCallId":"b","content":"B"}],"lastRole":"tool""#
        );
        let new_turn = input(
            r#"{"threadId":"t","messages":[{"role":"tool","toolCallId":"a","content":"A"},{"role":"user","content":"more"}]}"#,
        );
        assert!(!answers_calls(&new_turn));
        assert!(String::from_utf8(answer_fields(&new_turn))
            .unwrap()
            .ends_with(r#""toolResults":[],"lastRole":"user""#));
    }

    fn choose(cli: &str, options: &[&str], props: &str) -> Result<Choices, String> {
        let raw: Box<RawValue> = serde_json::from_str(props).unwrap();
        let options: Vec<String> = options.iter().map(|&o| o.to_owned()).collect();
        choices(Dialect::named(cli).unwrap(), &options, Some(&raw))
    }

    #[test]
    fn other_keys_and_other_shapes_choose_nothing() {
        for props in [
            "{}",
            r#"{"threadMetadata":{"a":1},"nodeName":"x","properties":{"model":7}}"#,
            "[1,2]",
            "\"text\"",
            "null",
            r#"{"model":null,"effort":null}"#,
        ] {
            assert_eq!(
                choose("claude", &[], props),
                Ok(Choices::default()),
                "{props}"
            );
        }
    }

    #[test]
    fn a_model_and_an_effort_become_run_and_cli_arguments() {
        let c = choose(
            "codex",
            &["--cli", "x"],
            r#"{"model":"gpt-5","effort":"high"}"#,
        )
        .unwrap();
        let options = vec!["--cli".to_owned(), "x".to_owned()];
        let mut argv: Vec<OsString> = vec!["run".into(), "--cli".into(), "x".into()];
        c.add_to(&mut argv, &options);
        assert_eq!(
            argv,
            ["run", "--model=gpt-5", "--effort=high", "--cli", "x"]
        );
        let options = vec!["--".to_owned(), "--foo".to_owned()];
        let mut argv: Vec<OsString> = vec!["run".into(), "--".into(), "--foo".into()];
        c.add_to(&mut argv, &options);
        assert_eq!(
            argv,
            ["run", "--model=gpt-5", "--effort=high", "--", "--foo"]
        );
        // Copilot CLI's levels; OpenCode's are its model's, named.
        for (cli, effort) in [
            ("copilot", "max"),
            ("opencode", "high"),
            ("opencode", "x_2-y"),
        ] {
            let props = format!(r#"{{"effort":"{effort}"}}"#);
            let c = choose(cli, &[], &props).unwrap();
            let mut argv: Vec<OsString> = vec!["run".into()];
            c.add_to(&mut argv, &[]);
            assert_eq!(
                argv,
                ["run".into(), OsString::from(format!("--effort={effort}"))]
            );
        }
    }

    #[test]
    fn hostile_or_unknown_values_are_refused_saying_why() {
        let refused = |cli: &str, options: &[&str], props: &str, says: &str| {
            let e = choose(cli, options, props).unwrap_err();
            assert!(e.contains(says), "{props}: {e}");
        };
        refused(
            "claude",
            &[],
            r#"{"model":"--dangerously-skip-permissions"}"#,
            "begins with '-'",
        );
        refused("claude", &[], r#"{"model":"a\nb"}"#, "control character");
        refused("claude", &[], r#"{"model":""}"#, "is empty");
        let long = format!(r#"{{"model":"{}"}}"#, "m".repeat(MAX_MODEL + 1));
        refused("claude", &[], &long, "too long");
        refused("claude", &[], r#"{"model":7}"#, "must be a string");
        refused(
            "codex",
            &[],
            r#"{"effort":"extreme"}"#,
            "not one of none, minimal",
        );
        for cli in ["gemini", "qwen", "acp"] {
            refused(
                cli,
                &[],
                r#"{"effort":"high"}"#,
                "has no choice of a reasoning effort",
            );
        }
        refused(
            "copilot",
            &[],
            r#"{"effort":"extreme"}"#,
            "not one of none, minimal, low, medium, high, xhigh, max",
        );
        for hostile in ["--auto", "a b", "high\n", "", &"x".repeat(MAX_LEVEL + 1)] {
            let props = serde_json::json!({ "effort": hostile }).to_string();
            refused("opencode", &[], &props, "is not a level's name");
        }
        refused(
            "opencode",
            &["--effort", "low"],
            r#"{"effort":"high"}"#,
            "set the effort (--effort)",
        );
        refused(
            "copilot",
            &["--", "--reasoning-effort=low"],
            r#"{"effort":"high"}"#,
            "set the effort (--reasoning-effort)",
        );
        refused(
            "claude",
            &[],
            r#"{"effort":"minimal"}"#,
            "not one of low, medium, high, xhigh, max",
        );
        refused(
            "claude",
            &["--", "--effort", "low"],
            r#"{"effort":"high"}"#,
            "set the effort (--effort)",
        );
        refused(
            "claude",
            &["--model", "m"],
            r#"{"model":"x"}"#,
            "run options set the model",
        );
        refused(
            "codex",
            &["--", "-c", "model_reasoning_effort=low"],
            r#"{"effort":"high"}"#,
            "set the effort",
        );
        // OpenCode over ACP chooses it in the session.
        assert!(choose("opencode", &["--transport=acp"], r#"{"model":"a/b"}"#).is_ok());
        // After `--`, `--model` is the CLI's own argument, not run's.
        assert!(choose("claude", &["--", "--model", "m"], r#"{"model":"x"}"#).is_ok());
    }

    #[test]
    fn a_run_s_files_are_written_to_a_private_directory() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("agui-page-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let raw: Box<RawValue> = serde_json::from_str(
            r#"[{"type":"text","text":"a"},{"type":"image","source":{"type":"data","value":"AAEC/w==","mimeType":"image/PNG"}},{"type":"binary","mimeType":"application/pdf; x=y","data":"JVBERg"}]"#,
        )
        .unwrap();
        let files =
            attachments(Some(&raw), Takes::of(claude(), false, &[]), MAX_FILE, &[]).unwrap();
        let args = attach_args(&dir.join("7"), &files).unwrap();
        let files_dir = dir.join("7.files");
        let mode = std::fs::metadata(&files_dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(
            args,
            [
                OsString::from(format!("--attach={}", files_dir.join("1.png").display())),
                OsString::from(format!("--attach={}", files_dir.join("2.pdf").display()))
            ]
        );
        assert_eq!(
            std::fs::read(files_dir.join("1.png")).unwrap(),
            [0, 1, 2, 255]
        );
        assert_eq!(std::fs::read(files_dir.join("2.pdf")).unwrap(), b"%PDF");
        assert!(attach_args(&dir.join("8"), &[]).unwrap().is_empty());
        assert!(!dir.join("8.files").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
