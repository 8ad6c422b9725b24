//! The plan view: every CLI's to-do list as one `ACTIVITY_SNAPSHOT` of type
//! `PLAN`, `content: {items: [{text, status, …}], …}`.
//!
//! Each CLI names an item's fields its own way (Claude Code's `content`,
//! Gemini CLI's `description`, Codex's `text` or `step`) and has its own
//! statuses; here they become `text` and one of `pending`, `in_progress`,
//! `completed`. Every other field of an item is kept beside, under its own
//! name. A status outside the three is kept as `cliStatus`: `cancelled`
//! counts as `completed` (nothing is left to do), anything else as
//! `pending`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::Emitter;
use crate::base::json::{self, text_of};

/// An item's status, in the one vocabulary.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
        }
    }

    /// The status a CLI's status word stands for, and whether the word is
    /// one of the vocabulary's own spellings (else it is kept beside).
    pub fn of(word: &str) -> (Status, bool) {
        match word {
            "pending" => (Status::Pending, true),
            "in_progress" | "inProgress" => (Status::InProgress, true),
            "completed" => (Status::Completed, true),
            "cancelled" | "canceled" => (Status::Completed, false),
            _ => (Status::Pending, false),
        }
    }
}

/// A value of the content: a string, or JSON copied as it is.
pub enum Field<'a> {
    Str(Cow<'a, str>),
    Json(&'a RawValue),
}

impl<'a> Field<'a> {
    /// A string value from the input: its literal copied when it can be.
    fn text(v: &'a RawValue) -> Field<'a> {
        match json::literal(v) {
            Some(l) => Field::Json(l),
            None => Field::Str(text_of(v)),
        }
    }
}

/// One item of a plan.
pub struct Item<'a> {
    pub text: Field<'a>,
    pub status: Status,
    /// The CLI's own status, when it is not one of the vocabulary's words.
    pub cli_status: Option<Field<'a>>,
    /// The item's other fields, in the CLI's order.
    pub extra: Vec<(Cow<'a, str>, Field<'a>)>,
}

impl<'a> Item<'a> {
    /// An item with status word `status` (the CLI's).
    pub fn new(text: Field<'a>, status: Option<&'a RawValue>) -> Self {
        let (status, cli_status) = match status {
            None => (Status::Pending, None),
            Some(v) => match v.get() {
                "true" => (Status::Completed, None),
                "false" => (Status::Pending, None),
                _ => {
                    let word = text_of(v);
                    let (s, known) = Status::of(&word);
                    (s, (!known).then(|| Field::text(v)))
                }
            },
        };
        Item {
            text,
            status,
            cli_status,
            extra: Vec::new(),
        }
    }
}

/// A plan: its items, and the CLI's fields about the whole (Codex's
/// `explanation`).
#[derive(Default)]
pub struct Plan<'a> {
    pub items: Vec<Item<'a>>,
    pub extra: Vec<(&'a str, Field<'a>)>,
}

/// How a CLI spells an item: the key of its text and of its status (a
/// status that is `true`/`false` means completed or not).
#[derive(Clone, Copy)]
pub struct Shape {
    pub text: &'static str,
    pub status: &'static str,
}

/// Claude Code's TodoWrite: `{content, status, activeForm}`.
pub const CLAUDE: Shape = Shape {
    text: "content",
    status: "status",
};
/// Gemini CLI's write_todos: `{description, status}`.
pub const GEMINI: Shape = Shape {
    text: "description",
    status: "status",
};
/// Codex exec's `todo_list` item: `{text, completed}`.
pub const CODEX_TODO: Shape = Shape {
    text: "text",
    status: "completed",
};
/// Codex's plan updates: `{step, status}`.
pub const CODEX_PLAN: Shape = Shape {
    text: "step",
    status: "status",
};

/// Keys the content's items have of their own: a CLI field of the same name
/// is not copied beside.
const OWN_KEYS: [&str; 3] = ["text", "status", "cliStatus"];

/// The items of `list`, a JSON array of objects spelt as `shape` says;
/// elements that are not objects are skipped. `None` if `list` is not an
/// array.
pub fn items<'a>(list: &'a RawValue, shape: Shape) -> Option<Vec<Item<'a>>> {
    let raw: Vec<&'a RawValue> = serde_json::from_str(list.get()).ok()?;
    let mut items = Vec::with_capacity(raw.len());
    for v in raw {
        let Ok(json::Entries(fields)) = serde_json::from_str::<json::Entries<&RawValue>>(v.get())
        else {
            continue;
        };
        let find = |k: &str| fields.iter().find(|(key, _)| key == k).map(|&(_, v)| v);
        let text = find(shape.text).map_or(Field::Str(Cow::Borrowed("")), Field::text);
        let mut item = Item::new(text, find(shape.status));
        for (k, v) in fields {
            if k != shape.text && k != shape.status && !OWN_KEYS.contains(&&*k) {
                item.extra.push((k, Field::Json(v)));
            }
        }
        items.push(item);
    }
    Some(items)
}

/// A PLAN snapshot of `list` (spelt as `shape` says) with `extra` fields
/// about the whole, as message `id`. A list that is absent or not an array
/// gives a plan with no items.
pub fn snapshot(
    em: &mut Emitter,
    id: &str,
    list: Option<&RawValue>,
    shape: Shape,
    extra: &[(&str, Option<&RawValue>)],
) {
    let plan = Plan {
        items: list.and_then(|l| items(l, shape)).unwrap_or_default(),
        extra: extra
            .iter()
            .filter_map(|&(k, v)| Some((k, Field::Json(v?))))
            .collect(),
    };
    em.plan_snapshot(id, &plan);
}

/// The message id of a thread's plan: one per thread, the same in each of
/// its runs, so that each snapshot replaces the last (a front end shows one
/// plan, not one per turn); a subagent's (`sub`) is its own, in its run.
pub fn id(em: &Emitter, sub: Option<&str>) -> String {
    match sub {
        Some(s) => format!("{}-plan-{s}", em.run_id()),
        None => format!("{}-plan", em.thread_id()),
    }
}

/// The fields of a JSON object, in order (for tool inputs and results kept
/// beside a plan's items).
pub fn fields(v: &RawValue) -> Vec<(Cow<'_, str>, &RawValue)> {
    serde_json::from_str::<json::Entries<&RawValue>>(v.get()).map_or_else(|_| Vec::new(), |f| f.0)
}

/// A PLAN snapshot of a tool call's `todos` (Claude Code's TodoWrite, Gemini
/// CLI's write_todos), as the plan of the run or of subagent `sub`. Nothing
/// if the input has no `todos` list.
pub fn todos(em: &mut Emitter, sub: Option<&str>, input: &RawValue, shape: Shape) {
    #[derive(Deserialize)]
    struct Input<'a> {
        #[serde(borrow)]
        todos: Option<&'a RawValue>,
    }
    let Ok(Input { todos: Some(list) }) = serde_json::from_str::<Input>(input.get()) else {
        return;
    };
    let Some(items) = items(list, shape) else {
        return;
    };
    let id = id(em, sub);
    em.plan_snapshot(
        &id,
        &Plan {
            items,
            extra: Vec::new(),
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_the_vocabulary() {
        for (word, want, known) in [
            ("pending", Status::Pending, true),
            ("in_progress", Status::InProgress, true),
            ("inProgress", Status::InProgress, true),
            ("completed", Status::Completed, true),
            ("cancelled", Status::Completed, false),
            ("canceled", Status::Completed, false),
            ("blocked", Status::Pending, false),
        ] {
            assert_eq!(Status::of(word), (want, known), "{word}");
        }
    }

    fn raw(s: &str) -> &RawValue {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn items_keep_the_other_fields_and_skip_what_is_not_an_object() {
        let list = raw(
            r#"[{"status":"cancelled","content":"a\"b","id":7,"text":"x"},3,{"content":"c"},{"step":"d","completed":true}]"#,
        );
        let got = items(list, CLAUDE).unwrap();
        assert_eq!(got.len(), 3);
        let a = &got[0];
        assert!(matches!(&a.text, Field::Json(j) if j.get() == r#""a\"b""#));
        assert_eq!(a.status, Status::Completed);
        assert!(matches!(&a.cli_status, Some(Field::Json(j)) if j.get() == r#""cancelled""#));
        // `text` is the content's own key: the CLI's field of that name is
        // not copied beside it.
        let keys: Vec<&str> = a.extra.iter().map(|(k, _)| &**k).collect();
        assert_eq!(keys, ["id"]);
        assert_eq!(got[1].status, Status::Pending);
        assert!(got[1].cli_status.is_none());
        let d = &items(list, CODEX_TODO).unwrap()[2];
        assert!(matches!(&d.text, Field::Str(s) if s.is_empty()));
        assert_eq!(d.status, Status::Completed);
        assert!(items(raw(r#"{"todos":[]}"#), CLAUDE).is_none());
    }
}
