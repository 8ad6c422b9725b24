//! The AG-UI wire shape: every event written field by field, with the keys
//! as literal bytes, integers formatted in place and only the dynamic strings
//! escaped. This is the one place that knows how an event looks as JSON.

use std::borrow::Cow;

use super::plan::{Field, Plan};

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::{
    AguiVersion, Content, EncryptedSubtype, Event, Interrupt, Json, MetaField, MetaValue, Metadata,
    Outcome, Part, Role, Text, Usage, EVENT_TYPES,
};

/// Write `ev` as an AG-UI 1.0 JSON object without its closing brace (the
/// emitter adds context fields before it).
#[cfg(test)]
pub(super) fn event_open(out: &mut Vec<u8>, ev: &Event) {
    event_open_for(out, ev, AguiVersion::V1_0);
}

/// What an event written for AG-UI 0.0 keeps in its `metadata` because 0.0
/// has no place for it: the 1.0 value, whole (see [`metadata`]).
#[derive(Default)]
pub(super) struct Kept<'a> {
    /// TOOL_CALL_RESULT's content parts: 0.0 wants a string, which gets
    /// their text.
    content: Option<Content<'a>>,
    /// A RUN_FINISHED outcome that 0.0 does not know (`cancelled`).
    cancelled: bool,
    /// The usage entries, when one has a field that 0.0's TokenUsage strips
    /// (`cacheWriteInputTokens`).
    usage: &'a [Usage<'a>],
}

impl Kept<'_> {
    fn is_empty(&self) -> bool {
        self.content.is_none() && !self.cancelled && self.usage.is_empty()
    }

    fn has(&self, key: &str) -> bool {
        match key {
            "content" => self.content.is_some(),
            "outcome" => self.cancelled,
            "usage" => !self.usage.is_empty(),
            _ => false,
        }
    }
}

/// The reason of a `tool_call` interrupt written for AG-UI 0.0: the
/// interrupts here ask to approve a call the CLI then runs, and the resumed
/// run brings its real result. CopilotKit 1.75 (on `@ag-ui/client` 0.0.59)
/// answers a `tool_call` interrupt with a tool message of its own holding
/// the answer (`{"approved":true}`), and its run handler keeps that one
/// over the real result; for a reason of its own namespace (AG-UI 1.0
/// leaves those to servers) it adds nothing, and the real result is shown.
/// `toolCallId`, `message` and `responseSchema` stay as they are.
const V0_TOOL_APPROVAL: &str = "agui-translate:tool_approval";

/// Write `ev` as a JSON object for AG-UI `version`, without its closing
/// brace; what 0.0 has no field for is returned, for [`metadata`].
pub(super) fn event_open_for<'a>(
    out: &mut Vec<u8>,
    ev: &Event<'a>,
    version: AguiVersion,
) -> Kept<'a> {
    let v0 = version == AguiVersion::V0_0;
    let mut kept = Kept::default();
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(EVENT_TYPES[ev.index()].as_bytes());
    out.push(b'"');
    let mut o = Obj(out);
    match *ev {
        Event::RunStarted { .. }
        | Event::RunFinished { .. }
        | Event::RunError { .. }
        | Event::StepStarted { .. }
        | Event::StepFinished { .. } => run_fields(&mut o, ev, v0, &mut kept),
        Event::TextMessageStart { .. }
        | Event::TextMessageContent { .. }
        | Event::TextMessageEnd { .. } => text_fields(&mut o, ev),
        Event::ToolCallStart { .. }
        | Event::ToolCallArgs { .. }
        | Event::ToolCallEnd { .. }
        | Event::ToolCallResult { .. } => tool_fields(&mut o, ev, v0, &mut kept),
        Event::ReasoningStart { .. }
        | Event::ReasoningMessageStart { .. }
        | Event::ReasoningMessageContent { .. }
        | Event::ReasoningMessageEnd { .. }
        | Event::ReasoningEnd { .. }
        | Event::ReasoningEncryptedValue { .. } => reasoning_fields(&mut o, ev),
        Event::ActivitySnapshot { .. }
        | Event::PlanSnapshot { .. }
        | Event::StateSnapshot { .. }
        | Event::StateDelta { .. } => activity_fields(&mut o, ev),
        Event::Raw { .. } | Event::Custom { .. } | Event::ToolOutput { .. } => {
            custom_fields(&mut o, ev)
        }
        Event::SubagentStarted { .. }
        | Event::SubagentFinished { .. }
        | Event::SubagentError { .. } => subagent_fields(&mut o, ev),
    }
    kept
}

/// The fields of a run and its steps: RUN_STARTED, RUN_FINISHED, RUN_ERROR,
/// STEP_STARTED and STEP_FINISHED.
#[inline]
fn run_fields<'a>(o: &mut Obj, ev: &Event<'a>, v0: bool, kept: &mut Kept<'a>) {
    match *ev {
        Event::RunStarted { thread_id, run_id } => {
            o.str(b",\"threadId\":", thread_id);
            o.str(b",\"runId\":", run_id);
        }
        Event::RunFinished {
            thread_id,
            run_id,
            result,
            outcome,
            usage,
        } => {
            o.str(b",\"threadId\":", thread_id);
            o.str(b",\"runId\":", run_id);
            if let Some(r) = result {
                o.value(b",\"result\":", r);
            }
            match outcome {
                Some(Outcome::Cancelled) if v0 => kept.cancelled = true,
                // 0.0.59's schema has no pendingToolCallIds.
                Some(Outcome::Pending(_)) if v0 => o.outcome(Outcome::Pending(&[])),
                Some(Outcome::Interrupt(interrupts)) => o.interrupts(interrupts, v0),
                Some(outcome) => o.outcome(outcome),
                None => {}
            }
            if o.usage(usage, v0) {
                kept.usage = usage;
            }
        }
        Event::RunError {
            message,
            code,
            usage,
        } => {
            o.str(b",\"message\":", message);
            o.opt_str(b",\"code\":", code);
            if o.usage(usage, v0) {
                kept.usage = usage;
            }
        }
        Event::StepStarted { step_name } | Event::StepFinished { step_name } => {
            o.str(b",\"stepName\":", step_name);
        }
        _ => {}
    }
}

/// The fields of a text message: TEXT_MESSAGE_START, _CONTENT and _END.
#[inline]
fn text_fields(o: &mut Obj, ev: &Event) {
    match *ev {
        Event::TextMessageStart { message_id, role } => {
            o.str(b",\"messageId\":", message_id);
            o.0.extend_from_slice(match role {
                Role::Assistant => b",\"role\":\"assistant\"",
                Role::User => b",\"role\":\"user\"",
                Role::System => b",\"role\":\"system\"",
                Role::Developer => b",\"role\":\"developer\"",
            });
        }
        Event::TextMessageContent { message_id, delta } => {
            o.str(b",\"messageId\":", message_id);
            o.text(b",\"delta\":", delta);
        }
        Event::TextMessageEnd { message_id } => {
            o.str(b",\"messageId\":", message_id);
        }
        _ => {}
    }
}

/// The fields of a tool call: TOOL_CALL_START, _ARGS, _END and _RESULT.
#[inline]
fn tool_fields<'a>(o: &mut Obj, ev: &Event<'a>, v0: bool, kept: &mut Kept<'a>) {
    match *ev {
        Event::ToolCallStart {
            tool_call_id,
            tool_call_name,
            parent_message_id,
        } => {
            o.str(b",\"toolCallId\":", tool_call_id);
            o.str(b",\"toolCallName\":", tool_call_name);
            o.opt_str(b",\"parentMessageId\":", parent_message_id);
        }
        Event::ToolCallArgs {
            tool_call_id,
            delta,
        } => {
            o.str(b",\"toolCallId\":", tool_call_id);
            o.str(b",\"delta\":", delta);
        }
        Event::ToolCallEnd { tool_call_id } => {
            o.str(b",\"toolCallId\":", tool_call_id);
        }
        Event::ToolCallResult {
            message_id,
            tool_call_id,
            content,
            role,
        } => {
            o.str(b",\"messageId\":", message_id);
            o.str(b",\"toolCallId\":", tool_call_id);
            match content {
                Content::Text(s) => o.str(b",\"content\":", s),
                Content::Parts(j) if v0 && !j.get().starts_with('"') => {
                    o.str(b",\"content\":", &parts_text(j));
                    kept.content = Some(content);
                }
                Content::Parts(j) => o.json(b",\"content\":", j),
                Content::List(parts) if v0 => {
                    o.str(b",\"content\":", &list_text(parts));
                    kept.content = Some(content);
                }
                Content::List(parts) => o.parts(b",\"content\":", parts),
            }
            o.str(b",\"role\":", role);
        }
        _ => {}
    }
}

/// The fields of reasoning: REASONING_START, REASONING_MESSAGE_START,
/// _CONTENT and _END, REASONING_END and REASONING_ENCRYPTED_VALUE.
#[inline]
fn reasoning_fields(o: &mut Obj, ev: &Event) {
    match *ev {
        Event::ReasoningStart { message_id }
        | Event::ReasoningMessageEnd { message_id }
        | Event::ReasoningEnd { message_id } => {
            o.str(b",\"messageId\":", message_id);
        }
        Event::ReasoningMessageStart { message_id, role } => {
            o.str(b",\"messageId\":", message_id);
            o.str(b",\"role\":", role);
        }
        Event::ReasoningMessageContent { message_id, delta } => {
            o.str(b",\"messageId\":", message_id);
            o.text(b",\"delta\":", delta);
        }
        Event::ReasoningEncryptedValue {
            subtype,
            entity_id,
            encrypted_value,
        } => {
            o.0.extend_from_slice(match subtype {
                EncryptedSubtype::ToolCall => b",\"subtype\":\"tool-call\"",
                EncryptedSubtype::Message => b",\"subtype\":\"message\"",
            });
            o.str(b",\"entityId\":", entity_id);
            o.str(b",\"encryptedValue\":", encrypted_value);
        }
        _ => {}
    }
}

/// The fields of an activity: ACTIVITY_SNAPSHOT, and a plan written as
/// one; and of the application's state, STATE_SNAPSHOT and STATE_DELTA.
#[inline]
fn activity_fields(o: &mut Obj, ev: &Event) {
    match *ev {
        Event::ActivitySnapshot {
            message_id,
            activity_type,
            content,
            replace,
        } => {
            o.str(b",\"messageId\":", message_id);
            o.str(b",\"activityType\":", activity_type);
            o.json(b",\"content\":", content);
            if let Some(r) = replace {
                o.0.extend_from_slice(if r {
                    b",\"replace\":true"
                } else {
                    b",\"replace\":false"
                });
            }
        }
        Event::PlanSnapshot { message_id, plan } => {
            o.str(b",\"messageId\":", message_id);
            o.0.extend_from_slice(b",\"activityType\":\"PLAN\",\"content\":");
            plan_content(o.0, plan);
            o.0.extend_from_slice(b",\"replace\":true");
        }
        Event::StateSnapshot { snapshot } => o.json(b",\"snapshot\":", snapshot),
        Event::StateDelta { delta } => o.json(b",\"delta\":", delta),
        _ => {}
    }
}

/// The fields of RAW and CUSTOM events, and of the tool output written as
/// a CUSTOM event.
#[inline]
fn custom_fields(o: &mut Obj, ev: &Event) {
    match *ev {
        Event::Raw { event, source } => {
            o.value(b",\"event\":", event);
            o.str(b",\"source\":", source);
        }
        Event::Custom { name, value: v } => {
            o.str(b",\"name\":", name);
            o.value(b",\"value\":", v);
        }
        Event::ToolOutput {
            tool_call_id,
            stream,
            delta,
        } => {
            o.0.extend_from_slice(b",\"name\":\"tool_output\",\"value\":{");
            let mut v = Obj(o.0);
            v.str(b"\"toolCallId\":", tool_call_id);
            v.str(b",\"stream\":", stream);
            v.text(b",\"delta\":", delta);
            o.0.push(b'}');
        }
        _ => {}
    }
}

/// The fields of a subagent's events: started, finished, error.
#[inline]
fn subagent_fields(o: &mut Obj, ev: &Event) {
    match *ev {
        Event::SubagentStarted {
            subagent_run_id,
            name,
            description,
            parent_tool_call_id,
            parent_message_id,
        } => {
            o.str(b",\"subagentRunId\":", subagent_run_id);
            o.str(b",\"name\":", name);
            o.opt_str(b",\"description\":", description);
            o.opt_str(b",\"parentToolCallId\":", parent_tool_call_id);
            o.opt_str(b",\"parentMessageId\":", parent_message_id);
        }
        Event::SubagentFinished {
            subagent_run_id,
            result,
        } => {
            o.str(b",\"subagentRunId\":", subagent_run_id);
            if let Some(r) = result {
                o.value(b",\"result\":", r);
            }
        }
        Event::SubagentError {
            subagent_run_id,
            message,
            code,
        } => {
            o.str(b",\"subagentRunId\":", subagent_run_id);
            o.str(b",\"message\":", message);
            o.opt_str(b",\"code\":", code);
        }
        _ => {}
    }
}

/// `,"metadata":{…}`: what an AG-UI 0.0 event keeps there (see [`Kept`]),
/// then the entries of `extra`, then those of `given` (an entry of a name
/// already written is left out). Nothing when there are no entries.
pub(super) fn metadata(out: &mut Vec<u8>, kept: &Kept, extra: &[MetaField], given: Metadata) {
    if kept.is_empty() && extra.iter().all(|(_, v)| v.is_none()) {
        match given {
            Metadata::None => {}
            Metadata::Json(m) => {
                out.extend_from_slice(b",\"metadata\":");
                out.extend_from_slice(m.get().as_bytes());
            }
            Metadata::Fields(fields) => {
                if fields.iter().any(|(_, v)| v.is_some()) {
                    out.extend_from_slice(b",\"metadata\":");
                    object(out, fields);
                }
            }
        }
        return;
    }
    out.extend_from_slice(b",\"metadata\":");
    let start = out.len();
    out.push(b'{');
    let mut o = Obj(out);
    match kept.content {
        Some(Content::Parts(j)) => o.json(b",\"content\":", j),
        Some(Content::List(parts)) => o.parts(b",\"content\":", parts),
        Some(Content::Text(s)) => o.str(b",\"content\":", s),
        None => {}
    }
    if kept.cancelled {
        o.outcome(Outcome::Cancelled);
    }
    o.usage(kept.usage, false);
    let written = |key: &str| kept.has(key) || extra.iter().any(|(k, v)| *k == key && v.is_some());
    for (key, value) in extra {
        if let Some(v) = value {
            o.entry(key, *v);
        }
    }
    match given {
        Metadata::None => {}
        Metadata::Fields(fields) => {
            for (key, value) in fields {
                if let (Some(v), false) = (value, written(key)) {
                    o.entry(key, *v);
                }
            }
        }
        Metadata::Json(given) => match serde_json::from_str::<Entries>(given.get()) {
            Ok(entries) => {
                for (key, value) in &entries.0 {
                    if !written(key) {
                        o.entry(key, MetaValue::Json(value));
                    }
                }
            }
            Err(_) => {
                debug_assert!(false, "metadata is not a JSON object: {}", given.get());
                o.json(b",\"metadata\":", given);
            }
        },
    }
    // Every entry was written after a comma: drop the first one.
    if out.len() > start + 1 {
        out.remove(start + 1);
    }
    out.push(b'}');
}

/// A JSON object made of `fields` (keys escaped, entries without a value
/// left out): `{}` when none has one.
pub(super) fn object(out: &mut Vec<u8>, fields: &[MetaField]) {
    let start = out.len();
    out.push(b'{');
    let mut o = Obj(out);
    for (key, value) in fields {
        if let Some(v) = value {
            o.entry(key, *v);
        }
    }
    if out.len() > start + 1 {
        out.remove(start + 1);
    }
    out.push(b'}');
}

/// One metadata value as JSON.
fn value(out: &mut Vec<u8>, v: MetaValue) {
    match v {
        MetaValue::Json(j) => out.extend_from_slice(j.get().as_bytes()),
        MetaValue::Record(r) => out.extend_from_slice(r.as_bytes()),
        MetaValue::Str(s) => string(out, s),
        MetaValue::Bool(true) => out.extend_from_slice(b"true"),
        MetaValue::Bool(false) => out.extend_from_slice(b"false"),
        MetaValue::Int(i) => i64_(out, i),
        MetaValue::Object(fields) => object(out, fields),
    }
}

/// The entries of a JSON object, in order.
struct Entries<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Entries<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Entries<'de>, M::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = m.next_entry()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        d.deserialize_map(Each)
    }
}

/// The text of AG-UI content parts, for a field that takes a string: the
/// `text` parts, one line after another (the others have no text).
fn parts_text(parts: Json) -> String {
    #[derive(serde::Deserialize)]
    struct Part<'a> {
        #[serde(borrow)]
        text: Option<Cow<'a, str>>,
    }
    let parts: Vec<Part> = serde_json::from_str(parts.get()).unwrap_or_default();
    let texts: Vec<Cow<str>> = parts.into_iter().filter_map(|p| p.text).collect();
    texts.join("\n")
}

/// The text of content parts made here, for a field that takes a string.
fn list_text(parts: &[Part]) -> String {
    let mut text = String::new();
    let mut decoded = String::new();
    for p in parts {
        if let Part::Text(t) = p {
            if !text.is_empty() {
                text.push('\n');
            }
            match t {
                Text::Str(s) => text.push_str(s),
                Text::Literal(j) => {
                    if crate::base::json::decode_into(j.get(), &mut decoded) {
                        text.push_str(&decoded);
                    }
                }
            }
        }
    }
    text
}

/// Content parts as a JSON array.
fn part_list(out: &mut Vec<u8>, parts: &[Part]) {
    out.push(b'[');
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match *p {
            Part::Text(t) => {
                out.extend_from_slice(b"{\"type\":\"text\"");
                Obj(out).text(b",\"text\":", t);
            }
            Part::Data {
                kind,
                value,
                mime_type,
            } => source_part(
                out,
                kind,
                "data",
                value,
                Some(mime_type.unwrap_or("application/octet-stream")),
            ),
            Part::Url {
                kind,
                value,
                mime_type,
            } => source_part(out, kind, "url", value, mime_type),
        }
        out.push(b'}');
    }
    out.push(b']');
}

/// `{"type":KIND,"source":{"type":SOURCE,"value":…[,"mimeType":…]}` (the
/// part's closing brace is the caller's).
fn source_part(out: &mut Vec<u8>, kind: &str, source: &str, value: &str, mime: Option<&str>) {
    out.extend_from_slice(b"{\"type\":");
    string(out, kind);
    out.extend_from_slice(b",\"source\":{\"type\":");
    string(out, source);
    let mut o = Obj(out);
    o.str(b",\"value\":", value);
    o.opt_str(b",\"mimeType\":", mime);
    out.push(b'}');
}

/// A plan's content: `{"items":[{"text":…,"status":…,…},…],…}`.
fn plan_content(out: &mut Vec<u8>, plan: &Plan) {
    out.extend_from_slice(b"{\"items\":[");
    for (i, item) in plan.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"text\":");
        field(out, &item.text);
        out.extend_from_slice(b",\"status\":\"");
        out.extend_from_slice(item.status.as_str().as_bytes());
        out.push(b'"');
        if let Some(s) = &item.cli_status {
            out.extend_from_slice(b",\"cliStatus\":");
            field(out, s);
        }
        for (k, v) in &item.extra {
            out.push(b',');
            string(out, k);
            out.push(b':');
            field(out, v);
        }
        out.push(b'}');
    }
    out.push(b']');
    for (k, v) in &plan.extra {
        out.push(b',');
        string(out, k);
        out.push(b':');
        field(out, v);
    }
    out.push(b'}');
}

fn field(out: &mut Vec<u8>, f: &Field) {
    match f {
        Field::Str(s) => string(out, s),
        Field::Json(j) => out.extend_from_slice(j.get().as_bytes()),
    }
}

/// The fields of an object being written; each key comes with its comma.
struct Obj<'o>(&'o mut Vec<u8>);

impl Obj<'_> {
    fn str(&mut self, key: &[u8], value: &str) {
        self.0.extend_from_slice(key);
        string(self.0, value);
    }

    fn text(&mut self, key: &[u8], value: Text) {
        match value {
            Text::Str(s) => self.str(key, s),
            Text::Literal(j) => self.json(key, j),
        }
    }

    fn opt_str(&mut self, key: &[u8], value: Option<&str>) {
        if let Some(v) = value {
            self.str(key, v);
        }
    }

    fn json(&mut self, key: &[u8], value: Json) {
        self.0.extend_from_slice(key);
        self.0.extend_from_slice(value.get().as_bytes());
    }

    fn value(&mut self, key: &[u8], v: MetaValue) {
        self.0.extend_from_slice(key);
        value(self.0, v);
    }

    fn parts(&mut self, key: &[u8], parts: &[Part]) {
        self.0.extend_from_slice(key);
        part_list(self.0, parts);
    }

    /// `,"key":value` for a key that may need escaping.
    fn entry(&mut self, key: &str, v: MetaValue) {
        self.0.push(b',');
        string(self.0, key);
        self.0.push(b':');
        value(self.0, v);
    }

    fn outcome(&mut self, outcome: Outcome) {
        self.0.extend_from_slice(match outcome {
            Outcome::Success => b",\"outcome\":{\"type\":\"success\"}",
            Outcome::Cancelled => b",\"outcome\":{\"type\":\"cancelled\"}",
            Outcome::Interrupt(interrupts) => {
                self.interrupts(interrupts, false);
                return;
            }
            Outcome::Pending(ids) => {
                self.pending(ids);
                return;
            }
        });
    }

    /// `,"outcome":{"type":"success","pendingToolCallIds":[…]}` (the ids
    /// left out when there are none).
    fn pending(&mut self, ids: &[&str]) {
        self.0
            .extend_from_slice(b",\"outcome\":{\"type\":\"success\"");
        if !ids.is_empty() {
            self.0.extend_from_slice(b",\"pendingToolCallIds\":[");
            for (i, id) in ids.iter().enumerate() {
                if i > 0 {
                    self.0.push(b',');
                }
                string(self.0, id);
            }
            self.0.push(b']');
        }
        self.0.push(b'}');
    }

    /// `,"outcome":{"type":"interrupt","interrupts":[…]}`: the same for
    /// AG-UI 1.0 and 0.0 (0.0.59 knows it), but for the reason of an
    /// approval of a tool call (`v0`): see [`V0_TOOL_APPROVAL`].
    fn interrupts(&mut self, interrupts: &[Interrupt], v0: bool) {
        self.0
            .extend_from_slice(b",\"outcome\":{\"type\":\"interrupt\",\"interrupts\":[");
        for (i, it) in interrupts.iter().enumerate() {
            if i > 0 {
                self.0.push(b',');
            }
            self.str(b"{\"id\":", it.id);
            let reason = match it.reason {
                "tool_call" if v0 => V0_TOOL_APPROVAL,
                reason => reason,
            };
            self.str(b",\"reason\":", reason);
            self.opt_str(b",\"toolCallId\":", it.tool_call_id);
            self.opt_str(b",\"message\":", it.message);
            if let Some(v) = it.response_schema {
                self.value(b",\"responseSchema\":", v);
            }
            self.opt_str(b",\"expiresAt\":", it.expires_at);
            if let Some(v) = it.metadata {
                self.value(b",\"metadata\":", v);
            }
            self.0.push(b'}');
        }
        self.0.extend_from_slice(b"]}");
    }

    fn opt_u64(&mut self, key: &[u8], value: Option<u64>) {
        if let Some(v) = value {
            self.0.extend_from_slice(key);
            u64_(self.0, v);
        }
    }

    /// `,"usage":[…]`; for AG-UI 0.0 (`v0`) without the fields its
    /// TokenUsage strips. Returns whether it left one out.
    fn usage(&mut self, usage: &[Usage<'_>], v0: bool) -> bool {
        if usage.is_empty() {
            return false;
        }
        let mut left_out = false;
        self.0.extend_from_slice(b",\"usage\":[");
        for (i, u) in usage.iter().enumerate() {
            if i > 0 {
                self.0.push(b',');
            }
            // Every field is optional: the first one written has no comma.
            let start = self.0.len();
            self.0.push(b'{');
            self.opt_str(b",\"provider\":", u.provider);
            self.opt_str(b",\"model\":", u.model.as_deref());
            self.opt_u64(b",\"inputTokens\":", u.input_tokens);
            self.opt_u64(b",\"outputTokens\":", u.output_tokens);
            self.opt_u64(b",\"totalTokens\":", u.total_tokens);
            self.opt_u64(b",\"reasoningTokens\":", u.reasoning_tokens);
            self.opt_u64(b",\"cachedInputTokens\":", u.cached_input_tokens);
            if v0 {
                left_out |= u.cache_write_input_tokens.is_some();
            } else {
                self.opt_u64(b",\"cacheWriteInputTokens\":", u.cache_write_input_tokens);
            }
            if self.0.len() > start + 1 {
                self.0.remove(start + 1);
            }
            self.0.push(b'}');
        }
        self.0.push(b']');
        left_out
    }
}

/// What a byte becomes inside a JSON string: 0 stays as it is, `u` is
/// `\u00XX`, anything else is the letter after a backslash.
const ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// `s` as a JSON string literal (the escapes serde_json writes). Text
/// rarely needs an escape: eight bytes are checked at a time, and a string
/// that needs none (ids, names, most short values) is copied whole; else
/// the runs that need none are.
pub(super) fn string(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let Some(first) = first_escape_word(bytes) else {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    };
    let mut start = 0;
    let mut i = first;
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8) {
            if !needs_escape(u64::from_le_bytes(word.try_into().expect("eight bytes"))) {
                i += 8;
                continue;
            }
        }
        let end = (i + 8).min(bytes.len());
        for (j, &b) in bytes.iter().enumerate().take(end).skip(i) {
            let esc = ESCAPE[b as usize];
            if esc == 0 {
                continue;
            }
            out.extend_from_slice(&bytes[start..j]);
            start = j + 1;
            if esc == b'u' {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            } else {
                out.push(b'\\');
                out.push(esc);
            }
        }
        i = end;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Where the first eight bytes of `bytes` (from a multiple of eight) that
/// hold a byte to escape start; None if no byte needs one. The last bytes
/// are checked padded with spaces, which need none.
#[inline]
fn first_escape_word(bytes: &[u8]) -> Option<usize> {
    let mut words = bytes.chunks_exact(8);
    for (k, word) in (&mut words).enumerate() {
        if needs_escape(u64::from_le_bytes(word.try_into().expect("eight bytes"))) {
            return Some(k * 8);
        }
    }
    let rest = words.remainder();
    if rest.is_empty() {
        return None;
    }
    let mut tail = [b' '; 8];
    tail[..rest.len()].copy_from_slice(rest);
    needs_escape(u64::from_le_bytes(tail)).then_some(bytes.len() - rest.len())
}

/// Whether any of the eight bytes of `w` is a control character, `"` or
/// `\` (bytes of 0x80 and above never are).
#[inline]
fn needs_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte below n sets its high bit in `x - n` and has it clear in `x`.
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH;
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    below(w, 0x20) | below(quote, 1) | below(backslash, 1) != 0
}

/// Two decimal digits of each number below 100.
const DIGITS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// `n` in decimal.
pub(super) fn u64_(out: &mut Vec<u8>, n: u64) {
    let mut buf = [0u8; 20];
    let at = u64_digits(&mut buf, n);
    out.extend_from_slice(&buf[at..]);
}

/// `n`'s decimal digits written at the end of `buf`, four at a time (a
/// timestamp in milliseconds has 13): where they start.
pub(super) fn u64_digits(buf: &mut [u8; 20], mut n: u64) -> usize {
    let mut i = buf.len();
    let mut pair = |i: usize, d: usize| {
        buf[i] = DIGITS[d * 2];
        buf[i + 1] = DIGITS[d * 2 + 1];
    };
    while n >= 10_000 {
        let r = (n % 10_000) as usize;
        n /= 10_000;
        i -= 4;
        pair(i, r / 100);
        pair(i + 2, r % 100);
    }
    // Below 10,000 now.
    let mut n = n as usize;
    if n >= 100 {
        i -= 2;
        pair(i, n % 100);
        n /= 100;
    }
    if n >= 10 {
        i -= 2;
        pair(i, n);
    } else {
        i -= 1;
        buf[i] = b'0' + n as u8;
    }
    i
}

/// `n` in decimal.
pub(super) fn i64_(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    u64_(out, n.unsigned_abs());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_serde_json_does() {
        let mut all: String = (0u8..0x80).map(char::from).collect();
        all.push_str("é☃🚀\u{7f}\u{2028}/");
        for s in [all.as_str(), "", "plain", "\"", "a\\b", "tail\n"] {
            let mut out = Vec::new();
            string(&mut out, s);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(s).unwrap()
            );
        }
    }

    /// Eight bytes are checked at a time: a character to escape is found
    /// at every place in a word, in strings of every length around a word's,
    /// next to plain and to multi-byte characters.
    #[test]
    fn escapes_are_found_at_every_place_in_a_word() {
        for special in ['"', '\\', '\n', '\u{1}', '\u{1f}', ' ', '\u{7f}'] {
            for filler in ["a", "é", "~"] {
                for len in 0..20 {
                    for at in 0..=len {
                        let mut s: String = filler.repeat(at);
                        s.push(special);
                        s.push_str(&filler.repeat(len - at));
                        let mut out = Vec::new();
                        string(&mut out, &s);
                        assert_eq!(
                            String::from_utf8(out).unwrap(),
                            serde_json::to_string(&s).unwrap(),
                            "{s:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn integers() {
        for n in [
            0i64,
            1,
            9,
            10,
            99,
            100,
            101,
            999,
            1000,
            9999,
            10_000,
            10_001,
            99_999,
            100_000,
            1_000_000,
            1234567890,
            1_764_000_000_123,
            -1,
            -10,
            i64::MIN,
            i64::MAX,
        ] {
            let mut out = Vec::new();
            i64_(&mut out, n);
            assert_eq!(String::from_utf8(out).unwrap(), n.to_string());
        }
        let mut out = Vec::new();
        u64_(&mut out, u64::MAX);
        assert_eq!(String::from_utf8(out).unwrap(), u64::MAX.to_string());
    }

    fn written(ev: &Event) -> String {
        let mut out = Vec::new();
        event_open(&mut out, ev);
        out.push(b'}');
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn optional_fields_and_usage() {
        let usage = [
            Usage::default(),
            Usage {
                provider: Some("openai"),
                input_tokens: Some(3),
                cache_write_input_tokens: Some(1),
                ..Usage::default()
            },
            Usage {
                output_tokens: Some(7),
                ..Usage::default()
            },
        ];
        assert_eq!(
            written(&Event::RunFinished {
                thread_id: "t",
                run_id: "r",
                result: None,
                outcome: Some(Outcome::Cancelled),
                usage: &usage,
            }),
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"},"usage":[{},{"provider":"openai","inputTokens":3,"cacheWriteInputTokens":1},{"outputTokens":7}]}"#
        );
        assert_eq!(
            written(&Event::RunError {
                message: "m\"",
                code: None,
                usage: &[],
            }),
            r#"{"type":"RUN_ERROR","message":"m\""}"#
        );
        assert_eq!(
            written(&Event::ReasoningEncryptedValue {
                subtype: EncryptedSubtype::ToolCall,
                entity_id: "e",
                encrypted_value: "v",
            }),
            r#"{"type":"REASONING_ENCRYPTED_VALUE","subtype":"tool-call","entityId":"e","encryptedValue":"v"}"#
        );
        assert_eq!(
            written(&Event::SubagentStarted {
                subagent_run_id: "s",
                name: "n",
                description: None,
                parent_tool_call_id: Some("c"),
                parent_message_id: None,
            }),
            r#"{"type":"SUBAGENT_STARTED","subagentRunId":"s","name":"n","parentToolCallId":"c"}"#
        );
    }

    /// `metadata` as the writer writes it after an event's own fields.
    fn metadata_of(extra: &[MetaField], given: Metadata) -> String {
        let mut out = Vec::new();
        metadata(&mut out, &Kept::default(), extra, given);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn metadata_made_of_fields() {
        let err = raw(r#"{"code":1}"#);
        let fields = [
            ("status", Some(MetaValue::Str("fa\"iled"))),
            ("exitCode", None),
            ("isError", Some(MetaValue::Bool(true))),
            ("error", Some(MetaValue::Json(&err))),
            ("n", Some(MetaValue::Int(-3))),
            (
                "sub",
                Some(MetaValue::Object(&[("ok", Some(MetaValue::Bool(false)))])),
            ),
        ];
        assert_eq!(
            metadata_of(&[], Metadata::Fields(&fields)),
            r#","metadata":{"status":"fa\"iled","isError":true,"error":{"code":1},"n":-3,"sub":{"ok":false}}"#
        );
        // No entry with a value: no metadata at all.
        assert_eq!(metadata_of(&[], Metadata::Fields(&[("a", None)])), "");
        let mut out = Vec::new();
        object(&mut out, &[("a", None)]);
        assert_eq!(out, b"{}");
    }

    #[test]
    fn extra_entries_come_first_and_are_not_repeated() {
        let given = raw(r#"{"nativeName":"old","server":{"x":[1]}}"#);
        let extra = [
            ("nativeName", Some(MetaValue::Str("Bash"))),
            ("mcpServer", None),
        ];
        assert_eq!(
            metadata_of(&extra, Metadata::Json(&given)),
            r#","metadata":{"nativeName":"Bash","server":{"x":[1]}}"#
        );
        assert_eq!(
            metadata_of(
                &extra,
                Metadata::Fields(&[("isError", Some(MetaValue::Bool(true)))])
            ),
            r#","metadata":{"nativeName":"Bash","isError":true}"#
        );
        assert_eq!(
            metadata_of(&extra, Metadata::None),
            r#","metadata":{"nativeName":"Bash"}"#
        );
    }

    /// `ev` written for `version`, with the metadata the emitter would add.
    fn written_for(ev: &Event, version: AguiVersion, given: Option<&str>) -> String {
        let given = given.map(|g| RawValue::from_string(g.to_owned()).unwrap());
        let mut out = Vec::new();
        let kept = event_open_for(&mut out, ev, version);
        metadata(&mut out, &kept, &[], given.as_deref().into());
        out.push(b'}');
        String::from_utf8(out).unwrap()
    }

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn content_parts_for_0_0_are_joined_and_kept_in_metadata() {
        let parts = raw(
            r#"[{"type":"text","text":"found it"},{"type":"image","source":{"type":"data","value":"iVBO","mimeType":"image/png"}},{"type":"text","text":"and \"this\""}]"#,
        );
        let ev = Event::ToolCallResult {
            message_id: "c-result",
            tool_call_id: "c",
            content: Content::Parts(&parts),
            role: "tool",
        };
        let given = r#"{"isError":true,"content":"replaced"}"#;
        assert_eq!(
            written_for(&ev, AguiVersion::V0_0, Some(given)),
            format!(
                r#"{{"type":"TOOL_CALL_RESULT","messageId":"c-result","toolCallId":"c","content":"found it\nand \"this\"","role":"tool","metadata":{{"content":{},"isError":true}}}}"#,
                parts.get()
            )
        );
        assert_eq!(
            written_for(&ev, AguiVersion::V1_0, Some(given)),
            format!(
                r#"{{"type":"TOOL_CALL_RESULT","messageId":"c-result","toolCallId":"c","content":{},"role":"tool","metadata":{}}}"#,
                parts.get(),
                given
            )
        );
        // A string literal copied from the input is a string in 0.0 too.
        let literal = raw(r#""as it is""#);
        let ev = Event::ToolCallResult {
            message_id: "c-result",
            tool_call_id: "c",
            content: Content::Parts(&literal),
            role: "tool",
        };
        assert_eq!(
            written_for(&ev, AguiVersion::V0_0, None),
            r#"{"type":"TOOL_CALL_RESULT","messageId":"c-result","toolCallId":"c","content":"as it is","role":"tool"}"#
        );
    }

    #[test]
    fn content_parts_made_here_are_written_as_the_ones_copied() {
        let copied = raw(
            r#"[{"type":"text","text":"found it"},{"type":"image","source":{"type":"data","value":"iVBO","mimeType":"image/png"}},{"type":"document","source":{"type":"url","value":"https://x/d.pdf"}},{"type":"text","text":"and \"this\""}]"#,
        );
        let literal = raw(r#" "and \"this\"" "#.trim());
        let parts = [
            Part::Text(Text::Str("found it")),
            Part::Data {
                kind: "image",
                value: "iVBO",
                mime_type: Some("image/png"),
            },
            Part::Url {
                kind: "document",
                value: "https://x/d.pdf",
                mime_type: None,
            },
            Part::Text(Text::Literal(&literal)),
        ];
        let result = |content| Event::ToolCallResult {
            message_id: "c-result",
            tool_call_id: "c",
            content,
            role: "tool",
        };
        for version in [AguiVersion::V1_0, AguiVersion::V0_0] {
            assert_eq!(
                written_for(&result(Content::List(&parts)), version, None),
                written_for(&result(Content::Parts(&copied)), version, None),
            );
        }
    }

    #[test]
    fn interrupt_outcomes_for_0_0_differ_only_in_the_approval_reason() {
        let schema = raw(r#"{"type":"object","required":["approved"]}"#);
        let fields: [MetaField; 2] = [
            ("toolName", Some(MetaValue::Str("Bash"))),
            ("blockedPath", None),
        ];
        let interrupts = [
            Interrupt {
                id: "i\"1",
                reason: "tool_call",
                tool_call_id: Some("c1"),
                message: Some("Run \"ls\"?"),
                response_schema: Some(MetaValue::Json(&schema)),
                expires_at: Some("2026-11-22T10:45:42.152Z"),
                metadata: Some(MetaValue::Object(&fields)),
            },
            Interrupt {
                id: "i2",
                reason: "confirmation",
                tool_call_id: None,
                message: None,
                response_schema: None,
                expires_at: None,
                metadata: None,
            },
        ];
        let ev = Event::RunFinished {
            thread_id: "t",
            run_id: "r",
            result: None,
            outcome: Some(Outcome::Interrupt(&interrupts)),
            usage: &[],
        };
        let want = r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i\"1","reason":"tool_call","toolCallId":"c1","message":"Run \"ls\"?","responseSchema":{"type":"object","required":["approved"]},"expiresAt":"2026-11-22T10:45:42.152Z","metadata":{"toolName":"Bash"}},{"id":"i2","reason":"confirmation"}]}}"#;
        assert_eq!(written_for(&ev, AguiVersion::V1_0, None), want);
        // For 0.0 an approval of a tool call has a reason of its own.
        let want_0 = want.replacen(
            r#""reason":"tool_call""#,
            r#""reason":"agui-translate:tool_approval""#,
            1,
        );
        assert_eq!(written_for(&ev, AguiVersion::V0_0, None), want_0);
    }

    #[test]
    fn cancelled_runs_and_cache_writes_for_0_0_are_kept_in_metadata() {
        let usage = [
            Usage {
                input_tokens: Some(3),
                cache_write_input_tokens: Some(1),
                ..Usage::default()
            },
            Usage {
                output_tokens: Some(7),
                ..Usage::default()
            },
        ];
        let finished = |outcome, usage| Event::RunFinished {
            thread_id: "t",
            run_id: "r",
            result: None,
            outcome,
            usage,
        };
        assert_eq!(
            written_for(
                &finished(Some(Outcome::Cancelled), &usage),
                AguiVersion::V0_0,
                None
            ),
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"inputTokens":3},{"outputTokens":7}],"metadata":{"outcome":{"type":"cancelled"},"usage":[{"inputTokens":3,"cacheWriteInputTokens":1},{"outputTokens":7}]}}"#
        );
        assert_eq!(
            written_for(
                &finished(Some(Outcome::Cancelled), &usage),
                AguiVersion::V1_0,
                None
            ),
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"},"usage":[{"inputTokens":3,"cacheWriteInputTokens":1},{"outputTokens":7}]}"#
        );
        // What 0.0 has a place for is written as for 1.0.
        for outcome in [None, Some(Outcome::Success)] {
            assert_eq!(
                written_for(&finished(outcome, &usage[1..]), AguiVersion::V0_0, None),
                written_for(&finished(outcome, &usage[1..]), AguiVersion::V1_0, None),
            );
        }
        let error = Event::RunError {
            message: "m",
            code: Some("api_error"),
            usage: &usage[..1],
        };
        assert_eq!(
            written_for(
                &error,
                AguiVersion::V0_0,
                Some(r#"{"result":{"a":[1]},"usage":0}"#)
            ),
            r#"{"type":"RUN_ERROR","message":"m","code":"api_error","usage":[{"inputTokens":3}],"metadata":{"usage":[{"inputTokens":3,"cacheWriteInputTokens":1}],"result":{"a":[1]}}}"#
        );
    }
}
