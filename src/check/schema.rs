//! The AG-UI 1.0 event schema, as `@ag-ui/core` 1.0 defines it and a 1.0
//! client enforces it: for every event type its fields, which are required,
//! and their types. A property the schema does not describe is an error here:
//! a 1.0 client strips it (with a warning) before the event reaches the
//! application, so whatever it carried is lost. `null` is never an absent
//! optional field.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::Value;

/// A field's type.
#[derive(Debug)]
enum Ty {
    Str,
    /// An integer in ±2^53.
    Int,
    /// An integer in 0..=2^53.
    Count,
    Bool,
    /// Any JSON value, `null` included.
    Any,
    /// Any JSON value but `null`.
    NotNull,
    /// A JSON object, open by key (metadata, activity content).
    OpenObject,
    /// One string.
    Lit(&'static str),
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// A JSON Pointer (RFC 6901).
    Pointer,
    Array(&'static Ty),
    /// An array of at least one.
    NonEmpty(&'static Ty),
    Obj(&'static Shape),
    /// A string, or an array of content parts.
    Content,
    /// Objects told apart by the string under `key`.
    Tagged {
        key: &'static str,
        what: &'static str,
        shapes: &'static [(&'static str, Shape)],
    },
}

/// An object's fields.
#[derive(Debug)]
struct Shape {
    fields: &'static [Field],
    /// Properties beyond `fields` are allowed (JSON Patch operations).
    open: bool,
}

#[derive(Debug)]
struct Field {
    name: &'static str,
    ty: Ty,
    required: bool,
}

const fn req(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        ty,
        required: true,
    }
}

const fn opt(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        ty,
        required: false,
    }
}

const fn shape(fields: &'static [Field]) -> Shape {
    Shape {
        fields,
        open: false,
    }
}

const TEXT_ROLES: &[&str] = &["developer", "system", "assistant", "user"];

const SOURCE: Ty = Ty::Tagged {
    key: "type",
    what: "a part source",
    shapes: &[
        (
            "data",
            shape(&[
                req("type", Ty::Str),
                req("value", Ty::Str),
                req("mimeType", Ty::Str),
            ]),
        ),
        (
            "url",
            shape(&[
                req("type", Ty::Str),
                req("value", Ty::Str),
                opt("mimeType", Ty::Str),
            ]),
        ),
        (
            "file",
            shape(&[
                req("type", Ty::Str),
                req("value", Ty::Str),
                opt("provider", Ty::Str),
                opt("mimeType", Ty::Str),
            ]),
        ),
    ],
};

const MEDIA_PART: Shape = shape(&[
    req("type", Ty::Str),
    opt("id", Ty::Str),
    req("source", SOURCE),
    opt("metadata", Ty::NotNull),
]);

const CONTENT_PART: Ty = Ty::Tagged {
    key: "type",
    what: "a content part",
    shapes: &[
        (
            "text",
            shape(&[
                req("type", Ty::Str),
                opt("id", Ty::Str),
                req("text", Ty::Str),
                opt("metadata", Ty::NotNull),
            ]),
        ),
        ("image", MEDIA_PART),
        ("audio", MEDIA_PART),
        ("video", MEDIA_PART),
        ("document", MEDIA_PART),
    ],
};

const fn patch_op(fields: &'static [Field]) -> Shape {
    Shape { fields, open: true }
}

const PATCH_OP: Ty = Ty::Tagged {
    key: "op",
    what: "a JSON Patch operation",
    shapes: &[
        (
            "add",
            patch_op(&[
                req("op", Ty::Str),
                req("path", Ty::Pointer),
                req("value", Ty::Any),
            ]),
        ),
        (
            "remove",
            patch_op(&[req("op", Ty::Str), req("path", Ty::Pointer)]),
        ),
        (
            "replace",
            patch_op(&[
                req("op", Ty::Str),
                req("path", Ty::Pointer),
                req("value", Ty::Any),
            ]),
        ),
        (
            "move",
            patch_op(&[
                req("op", Ty::Str),
                req("from", Ty::Pointer),
                req("path", Ty::Pointer),
            ]),
        ),
        (
            "copy",
            patch_op(&[
                req("op", Ty::Str),
                req("from", Ty::Pointer),
                req("path", Ty::Pointer),
            ]),
        ),
        (
            "test",
            patch_op(&[
                req("op", Ty::Str),
                req("path", Ty::Pointer),
                req("value", Ty::Any),
            ]),
        ),
    ],
};

const TOOL_CALL: Shape = shape(&[
    req("id", Ty::Str),
    req("type", Ty::Lit("function")),
    req(
        "function",
        Ty::Obj(&shape(&[req("name", Ty::Str), req("arguments", Ty::Str)])),
    ),
    opt("encryptedValue", Ty::Str),
    opt("metadata", Ty::OpenObject),
]);

const MESSAGE: Ty = Ty::Tagged {
    key: "role",
    what: "a message",
    shapes: &[
        (
            "developer",
            shape(&[
                req("id", Ty::Str),
                req("role", Ty::Str),
                opt("name", Ty::Str),
                opt("encryptedValue", Ty::Str),
                opt("metadata", Ty::OpenObject),
                req("content", Ty::Str),
            ]),
        ),
        (
            "system",
            shape(&[
                req("id", Ty::Str),
                req("role", Ty::Str),
                opt("name", Ty::Str),
                opt("encryptedValue", Ty::Str),
                opt("metadata", Ty::OpenObject),
                req("content", Ty::Str),
            ]),
        ),
        (
            "assistant",
            shape(&[
                req("id", Ty::Str),
                req("role", Ty::Str),
                opt("name", Ty::Str),
                opt("encryptedValue", Ty::Str),
                opt("metadata", Ty::OpenObject),
                opt("content", Ty::Str),
                opt("toolCalls", Ty::Array(&Ty::Obj(&TOOL_CALL))),
            ]),
        ),
        (
            "user",
            shape(&[
                req("id", Ty::Str),
                req("role", Ty::Str),
                opt("name", Ty::Str),
                opt("encryptedValue", Ty::Str),
                opt("metadata", Ty::OpenObject),
                req("content", Ty::Content),
            ]),
        ),
        (
            "tool",
            shape(&[
                req("id", Ty::Str),
                req("role", Ty::Str),
                req("content", Ty::Content),
                req("toolCallId", Ty::Str),
                opt("error", Ty::Str),
                opt("encryptedValue", Ty::Str),
                opt("metadata", Ty::OpenObject),
            ]),
        ),
        (
            "activity",
            shape(&[
                req("id", Ty::Str),
                req("role", Ty::Str),
                req("activityType", Ty::Str),
                req("content", Ty::OpenObject),
                opt("metadata", Ty::OpenObject),
            ]),
        ),
        (
            "reasoning",
            shape(&[
                req("id", Ty::Str),
                req("role", Ty::Str),
                req("content", Ty::Str),
                opt("encryptedValue", Ty::Str),
                opt("metadata", Ty::OpenObject),
            ]),
        ),
    ],
};

const TOKEN_USAGE: Shape = shape(&[
    opt("provider", Ty::Str),
    opt("model", Ty::Str),
    opt("inputTokens", Ty::Count),
    opt("outputTokens", Ty::Count),
    opt("totalTokens", Ty::Count),
    opt("reasoningTokens", Ty::Count),
    opt("cachedInputTokens", Ty::Count),
    opt("cacheWriteInputTokens", Ty::Count),
]);

const RUN_AGENT_INPUT: Shape = shape(&[
    req("threadId", Ty::Str),
    req("runId", Ty::Str),
    opt("protocolVersion", Ty::Str),
    opt("parentRunId", Ty::Str),
    opt("state", Ty::Any),
    req("messages", Ty::Array(&MESSAGE)),
    opt(
        "tools",
        Ty::Array(&Ty::Obj(&shape(&[
            req("name", Ty::Str),
            req("description", Ty::Str),
            opt("parameters", Ty::NotNull),
            opt("metadata", Ty::OpenObject),
        ]))),
    ),
    opt(
        "context",
        Ty::Array(&Ty::Obj(&shape(&[
            req("description", Ty::Str),
            req("value", Ty::Str),
        ]))),
    ),
    opt("forwardedProps", Ty::NotNull),
    opt(
        "resume",
        Ty::Array(&Ty::Obj(&shape(&[
            req("interruptId", Ty::Str),
            req("status", Ty::OneOf(&["resolved", "cancelled"])),
            opt("payload", Ty::NotNull),
            opt("metadata", Ty::OpenObject),
        ]))),
    ),
]);

const INTERRUPT: Shape = shape(&[
    req("id", Ty::Str),
    req("reason", Ty::Str),
    opt("message", Ty::Str),
    opt("toolCallId", Ty::Str),
    opt("responseSchema", Ty::OpenObject),
    opt("expiresAt", Ty::Str),
    opt("metadata", Ty::OpenObject),
    opt("subagentRunId", Ty::Str),
]);

const RUN_OUTCOME: Ty = Ty::Tagged {
    key: "type",
    what: "a run outcome",
    shapes: &[
        (
            "success",
            shape(&[
                req("type", Ty::Str),
                opt("pendingToolCallIds", Ty::Array(&Ty::Str)),
            ]),
        ),
        (
            "interrupt",
            shape(&[
                req("type", Ty::Str),
                req("interrupts", Ty::NonEmpty(&Ty::Obj(&INTERRUPT))),
            ]),
        ),
        ("cancelled", shape(&[req("type", Ty::Str)])),
    ],
};

const SUBAGENT_OUTCOME: Ty = Ty::Tagged {
    key: "type",
    what: "a subagent outcome",
    shapes: &[
        ("success", shape(&[req("type", Ty::Str)])),
        (
            "suspended",
            shape(&[
                req("type", Ty::Str),
                opt("interruptIds", Ty::Array(&Ty::Str)),
            ]),
        ),
    ],
};

/// The fields of an event type beyond the common ones; whether it takes
/// `subagentRunId` (as an optional common field).
struct EventShape {
    name: &'static str,
    fields: &'static [Field],
    attributable: bool,
}

const fn ev(name: &'static str, fields: &'static [Field]) -> EventShape {
    EventShape {
        name,
        fields,
        attributable: true,
    }
}

const fn ev_unattributed(name: &'static str, fields: &'static [Field]) -> EventShape {
    EventShape {
        name,
        fields,
        attributable: false,
    }
}

/// Every AG-UI 1.0 event type.
const EVENTS: &[EventShape] = &[
    ev(
        "TEXT_MESSAGE_START",
        &[
            req("messageId", Ty::Str),
            opt("role", Ty::OneOf(TEXT_ROLES)),
            opt("name", Ty::Str),
        ],
    ),
    ev(
        "TEXT_MESSAGE_CONTENT",
        &[req("messageId", Ty::Str), req("delta", Ty::Str)],
    ),
    ev("TEXT_MESSAGE_END", &[req("messageId", Ty::Str)]),
    ev(
        "TEXT_MESSAGE_CHUNK",
        &[
            opt("messageId", Ty::Str),
            opt("role", Ty::OneOf(TEXT_ROLES)),
            opt("delta", Ty::Str),
            opt("name", Ty::Str),
        ],
    ),
    ev(
        "TOOL_CALL_START",
        &[
            req("toolCallId", Ty::Str),
            req("toolCallName", Ty::Str),
            opt("parentMessageId", Ty::Str),
        ],
    ),
    ev(
        "TOOL_CALL_ARGS",
        &[req("toolCallId", Ty::Str), req("delta", Ty::Str)],
    ),
    ev("TOOL_CALL_END", &[req("toolCallId", Ty::Str)]),
    ev(
        "TOOL_CALL_CHUNK",
        &[
            opt("toolCallId", Ty::Str),
            opt("toolCallName", Ty::Str),
            opt("parentMessageId", Ty::Str),
            opt("delta", Ty::Str),
        ],
    ),
    ev(
        "TOOL_CALL_RESULT",
        &[
            req("messageId", Ty::Str),
            req("toolCallId", Ty::Str),
            req("content", Ty::Content),
            opt("role", Ty::Lit("tool")),
        ],
    ),
    ev("STATE_SNAPSHOT", &[req("snapshot", Ty::Any)]),
    ev("STATE_DELTA", &[req("delta", Ty::Array(&PATCH_OP))]),
    ev_unattributed("MESSAGES_SNAPSHOT", &[req("messages", Ty::Array(&MESSAGE))]),
    ev(
        "ACTIVITY_SNAPSHOT",
        &[
            req("messageId", Ty::Str),
            req("activityType", Ty::Str),
            req("content", Ty::OpenObject),
            opt("replace", Ty::Bool),
        ],
    ),
    ev(
        "ACTIVITY_DELTA",
        &[
            req("messageId", Ty::Str),
            req("activityType", Ty::Str),
            req("patch", Ty::Array(&PATCH_OP)),
        ],
    ),
    ev("RAW", &[req("event", Ty::Any), opt("source", Ty::Str)]),
    ev("CUSTOM", &[req("name", Ty::Str), req("value", Ty::Any)]),
    ev_unattributed(
        "RUN_STARTED",
        &[
            req("threadId", Ty::Str),
            req("runId", Ty::Str),
            opt("protocolVersion", Ty::Str),
            opt("parentRunId", Ty::Str),
            opt("input", Ty::Obj(&RUN_AGENT_INPUT)),
        ],
    ),
    ev_unattributed(
        "RUN_FINISHED",
        &[
            req("threadId", Ty::Str),
            req("runId", Ty::Str),
            opt("result", Ty::NotNull),
            opt("outcome", RUN_OUTCOME),
            opt("usage", Ty::Array(&Ty::Obj(&TOKEN_USAGE))),
        ],
    ),
    ev_unattributed(
        "RUN_ERROR",
        &[
            req("message", Ty::Str),
            opt("code", Ty::Str),
            opt("usage", Ty::Array(&Ty::Obj(&TOKEN_USAGE))),
        ],
    ),
    ev("STEP_STARTED", &[req("stepName", Ty::Str)]),
    ev("STEP_FINISHED", &[req("stepName", Ty::Str)]),
    ev("REASONING_START", &[req("messageId", Ty::Str)]),
    ev(
        "REASONING_MESSAGE_START",
        &[req("messageId", Ty::Str), req("role", Ty::Lit("reasoning"))],
    ),
    ev(
        "REASONING_MESSAGE_CONTENT",
        &[req("messageId", Ty::Str), req("delta", Ty::Str)],
    ),
    ev("REASONING_MESSAGE_END", &[req("messageId", Ty::Str)]),
    ev(
        "REASONING_MESSAGE_CHUNK",
        &[opt("messageId", Ty::Str), opt("delta", Ty::Str)],
    ),
    ev("REASONING_END", &[req("messageId", Ty::Str)]),
    ev(
        "REASONING_ENCRYPTED_VALUE",
        &[
            req("subtype", Ty::OneOf(&["tool-call", "message"])),
            req("entityId", Ty::Str),
            req("encryptedValue", Ty::Str),
        ],
    ),
    // On SUBAGENT_* the subagentRunId is required (it names the subagent).
    ev_unattributed(
        "SUBAGENT_STARTED",
        &[
            req("subagentRunId", Ty::Str),
            req("name", Ty::Str),
            opt("description", Ty::Str),
            opt("parentSubagentRunId", Ty::Str),
            opt("parentToolCallId", Ty::Str),
            opt("parentMessageId", Ty::Str),
        ],
    ),
    ev_unattributed(
        "SUBAGENT_FINISHED",
        &[
            req("subagentRunId", Ty::Str),
            opt("result", Ty::NotNull),
            opt("outcome", SUBAGENT_OUTCOME),
        ],
    ),
    ev_unattributed(
        "SUBAGENT_ERROR",
        &[
            req("subagentRunId", Ty::Str),
            req("message", Ty::Str),
            opt("code", Ty::Str),
        ],
    ),
];

/// The fields every event takes.
const COMMON: &[Field] = &[
    req("type", Ty::Str),
    opt("timestamp", Ty::Int),
    opt("rawEvent", Ty::NotNull),
    opt("metadata", Ty::OpenObject),
];

/// Event types of AG-UI before 1.0 that 1.0 removed.
const REMOVED: &[&str] = &[
    "THINKING_START",
    "THINKING_END",
    "THINKING_TEXT_MESSAGE_START",
    "THINKING_TEXT_MESSAGE_CONTENT",
    "THINKING_TEXT_MESSAGE_END",
];

/// Whether `kind` is an AG-UI 1.0 event type.
pub fn is_event_type(kind: &str) -> bool {
    EVENTS.iter().any(|e| e.name == kind)
}

/// A JSON object's members, their values unparsed: only what the schema
/// describes is looked into, so a value the schema leaves open (a RAW
/// event's payload, a result) is never decoded, whatever it holds (numbers
/// beyond f64, deep nesting).
pub type Members<'a> = BTreeMap<String, &'a RawValue>;

/// A string value, if `v` is one.
pub fn as_str(v: &RawValue) -> Option<String> {
    if !v.get().starts_with('"') {
        return None;
    }
    serde_json::from_str(v.get()).ok().or_else(|| {
        // An escaped lone surrogate, which JSON allows and serde_json
        // does not decode.
        let err = serde_json::from_str::<String>(v.get()).err()?;
        let fixed = crate::base::json::repair_surrogates(v.get().as_bytes(), &err)?;
        serde_json::from_slice(&fixed).ok()
    })
}

/// The members of `v`, if it is an object.
pub fn members(v: &RawValue) -> Option<Members<'_>> {
    if !v.get().starts_with('{') {
        return None;
    }
    serde_json::from_str(v.get()).ok()
}

/// Check one event (an object's members) against the schema: what is wrong
/// with it, in words (an empty list: nothing).
pub fn check_event(obj: &Members) -> Vec<String> {
    let mut problems = Vec::new();
    let kind = match obj.get("type") {
        Some(v) => match as_str(v) {
            Some(k) => k,
            None => {
                problems.push(format!("type must be a string, not {}", shown(v)));
                return problems;
            }
        },
        None => {
            problems.push("an event without a type".into());
            return problems;
        }
    };
    let kind = kind.as_str();
    if REMOVED.contains(&kind) {
        problems.push(format!(
            "{kind} was removed in AG-UI 1.0: reasoning is sent as REASONING_* events"
        ));
        return problems;
    }
    let Some(shape) = EVENTS.iter().find(|e| e.name == kind) else {
        problems.push(format!("{kind:?} is not an AG-UI 1.0 event type"));
        return problems;
    };
    let mut path = String::new();
    for (name, value) in obj {
        let field = COMMON
            .iter()
            .chain(shape.fields)
            .find(|f| f.name == name)
            .or(if shape.attributable && name == "subagentRunId" {
                Some(&SUBAGENT_RUN_ID)
            } else {
                None
            });
        match field {
            Some(f) => {
                path.clear();
                path.push_str(name);
                check_value(&f.ty, value, &mut path, &mut problems);
            }
            None => problems.push(format!(
                "{kind}: {name:?} is not a property of {kind} in AG-UI 1.0"
            )),
        }
    }
    for f in shape.fields.iter().filter(|f| f.required) {
        if !obj.contains_key(f.name) {
            problems.push(format!("{kind} without {}", f.name));
        }
    }
    for p in problems.iter_mut() {
        if !p.starts_with(kind) {
            *p = format!("{kind}: {p}");
        }
    }
    problems
}

const SUBAGENT_RUN_ID: Field = opt("subagentRunId", Ty::Str);

/// What kind of JSON value `v` is.
pub fn kind_of(v: &RawValue) -> &'static str {
    match v.get().as_bytes().first() {
        Some(b'n') => "null",
        Some(b't' | b'f') => "a boolean",
        Some(b'"') => "a string",
        Some(b'[') => "an array",
        Some(b'{') => "an object",
        _ => "a number",
    }
}

/// 2^53 - 1, the largest integer a JavaScript number holds exactly.
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

fn is_int(v: &RawValue, min: f64) -> bool {
    let Ok(Value::Number(n)) = serde_json::from_str::<Value>(v.get()) else {
        return false; // not a number, or one beyond f64
    };
    if let Some(i) = n.as_i64() {
        return (i as f64) >= min && (i as f64) <= MAX_SAFE;
    }
    if n.as_u64().is_some() {
        return false; // beyond 2^63
    }
    n.as_f64()
        .is_some_and(|f| f.fract() == 0.0 && f >= min && f <= MAX_SAFE)
}

fn is_pointer(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    if !s.starts_with('/') {
        return false;
    }
    let b = s.as_bytes();
    b.iter()
        .enumerate()
        .all(|(i, &c)| c != b'~' || matches!(b.get(i + 1), Some(b'0' | b'1')))
}

fn check_value(ty: &Ty, v: &RawValue, path: &mut String, problems: &mut Vec<String>) {
    let first = v.get().as_bytes().first().copied();
    let want: Option<String> = match ty {
        Ty::Str => (first != Some(b'"')).then(|| "a string".into()),
        Ty::Int => (!is_int(v, -MAX_SAFE)).then(|| "an integer".into()),
        Ty::Count => (!is_int(v, 0.0)).then(|| "an integer ≥ 0".into()),
        Ty::Bool => (!matches!(first, Some(b't' | b'f'))).then(|| "a boolean".into()),
        Ty::Any => None,
        Ty::NotNull => (first == Some(b'n')).then(|| "a value other than null".into()),
        Ty::OpenObject => (first != Some(b'{')).then(|| "an object".into()),
        Ty::Lit(s) => (as_str(v).as_deref() != Some(s)).then(|| format!("{s:?}")),
        Ty::OneOf(set) => (!as_str(v).is_some_and(|s| set.contains(&s.as_str())))
            .then(|| format!("one of {}", set.join(", "))),
        Ty::Pointer => {
            (!as_str(v).is_some_and(|s| is_pointer(&s))).then(|| "a JSON Pointer".into())
        }
        Ty::Array(item) | Ty::NonEmpty(item) => {
            match serde_json::from_str::<Vec<&RawValue>>(v.get()).ok() {
                None => Some("an array".into()),
                Some(a) if a.is_empty() && matches!(ty, Ty::NonEmpty(_)) => {
                    Some("an array of at least one".into())
                }
                Some(a) => {
                    let len = path.len();
                    for (i, x) in a.iter().enumerate() {
                        path.push_str(&format!("/{i}"));
                        check_value(item, x, path, problems);
                        path.truncate(len);
                    }
                    None
                }
            }
        }
        Ty::Obj(shape) => match members(v) {
            None => Some("an object".into()),
            Some(o) => {
                check_object(shape, &o, path, problems);
                None
            }
        },
        Ty::Content => match first {
            Some(b'"') => None,
            Some(b'[') => {
                check_value(&Ty::Array(&CONTENT_PART), v, path, problems);
                None
            }
            _ => Some("a string or an array of content parts".into()),
        },
        Ty::Tagged { key, what, shapes } => {
            let o = members(v);
            let tag = o.as_ref().and_then(|o| o.get(*key)).and_then(|t| as_str(t));
            match (o, shapes.iter().find(|(t, _)| Some(*t) == tag.as_deref())) {
                (Some(o), Some((_, shape))) => {
                    check_object(shape, &o, path, problems);
                    None
                }
                _ => Some(format!(
                    "{what} ({key}: {})",
                    shapes
                        .iter()
                        .map(|(t, _)| *t)
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
    };
    if let Some(want) = want {
        problems.push(format!("{path} must be {want}, not {}", shown(v)));
    }
}

/// A value as shown in a message: short.
fn shown(v: &RawValue) -> String {
    let text = v.get();
    match text.as_bytes().first() {
        Some(b'[' | b'{') => kind_of(v).into(),
        _ if text.len() > 40 => {
            let mut end = 40;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}…", &text[..end])
        }
        _ => text.into(),
    }
}

fn check_object(shape: &Shape, o: &Members, path: &mut String, problems: &mut Vec<String>) {
    let len = path.len();
    for (name, value) in o {
        match shape.fields.iter().find(|f| f.name == name) {
            Some(f) => {
                path.push('/');
                path.push_str(name);
                check_value(&f.ty, value, path, problems);
                path.truncate(len);
            }
            None if shape.open => {}
            None => problems.push(format!(
                "{path}: {name:?} is not a property here in AG-UI 1.0"
            )),
        }
    }
    for f in shape.fields.iter().filter(|f| f.required) {
        if !o.contains_key(f.name) {
            problems.push(format!("{path} without {}", f.name));
        }
    }
}

/// An event line's members; why not, if it is not a JSON object.
pub fn members_of_event(text: &[u8]) -> Result<Members<'_>, String> {
    let Ok(text) = std::str::from_utf8(text) else {
        return Err("not JSON (not UTF-8)".into());
    };
    let v: &RawValue = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Err(format!("not JSON ({e})")),
    };
    members(v).ok_or_else(|| format!("an event must be a JSON object, not {}", kind_of(v)))
}
