//! The application's state sent again as a change (STATE_DELTA): an RFC
//! 6902 JSON Patch from the state a run last sent to the new one, made of
//! the operations the official clients apply (`fast-json-patch`'s
//! `applyPatch` with its checks on): `add` of a key the old object lacks,
//! `remove` of a key the new one lacks, and `replace` of a value that
//! differs and is not an object on both sides (an array is replaced
//! whole). A key is escaped in its pointer (`~` as `~0`, `/` as `~1`).
//!
//! The patch is made in one walk of both states (each value looked at
//! once), and is given only when it is shorter than the new state
//! itself; a path `fast-json-patch` refuses to follow (`__proto__`,
//! `constructor/prototype`) gives none either, and the whole state goes.

use serde_json::{Map, Value};

/// The patch that turns `old` into `new` (both objects), as JSON, when it
/// is shorter than `new_len` bytes (the new state's own length); `None`
/// when the whole state is the better message, or when nothing changed
/// (`Some("[]")`).
pub fn diff(old: &Value, new: &Value, new_len: usize) -> Option<String> {
    let (Value::Object(a), Value::Object(b)) = (old, new) else {
        return None;
    };
    let mut w = Writer {
        out: String::from("["),
        path: String::new(),
        limit: new_len,
        banned: false,
    };
    w.objects(a, b);
    if w.banned || w.out.len() >= w.limit {
        return None;
    }
    w.out.push(']');
    (w.out.len() < w.limit).then_some(w.out)
}

struct Writer {
    out: String,
    /// The pointer of the object being walked.
    path: String,
    /// Past this length the patch is of no use: the walk stops adding.
    limit: usize,
    /// A key on a path the clients refuse.
    banned: bool,
}

impl Writer {
    fn objects(&mut self, a: &Map<String, Value>, b: &Map<String, Value>) {
        for (key, old) in a {
            if self.full() {
                return;
            }
            match b.get(key) {
                None => self.op("remove", key, None),
                Some(new) => self.value(key, old, new),
            }
        }
        for (key, new) in b {
            if self.full() {
                return;
            }
            if !a.contains_key(key) {
                self.op("add", key, Some(new));
            }
        }
    }

    fn value(&mut self, key: &str, old: &Value, new: &Value) {
        match (old, new) {
            (Value::Object(a), Value::Object(b)) => {
                let at = self.path.len();
                if banned(&self.path, key) {
                    self.banned = true;
                    return;
                }
                self.path.push('/');
                escape(&mut self.path, key);
                self.objects(a, b);
                self.path.truncate(at);
            }
            _ if old == new => {}
            _ => self.op("replace", key, Some(new)),
        }
    }

    fn op(&mut self, op: &str, key: &str, value: Option<&Value>) {
        if banned(&self.path, key) {
            self.banned = true;
            return;
        }
        if self.out.len() > 1 {
            self.out.push(',');
        }
        self.out.push_str("{\"op\":\"");
        self.out.push_str(op);
        self.out.push_str("\",\"path\":");
        let mut pointer = self.path.clone();
        pointer.push('/');
        escape(&mut pointer, key);
        self.out
            .push_str(&serde_json::to_string(&pointer).expect("a string"));
        if let Some(v) = value {
            self.out.push_str(",\"value\":");
            self.out
                .push_str(&serde_json::to_string(v).expect("serializable"));
        }
        self.out.push('}');
    }

    /// Whether the patch is already too long to be of use (or refused).
    fn full(&self) -> bool {
        self.banned || self.out.len() >= self.limit
    }
}

/// `key` as one token of a JSON Pointer.
fn escape(out: &mut String, key: &str) {
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

/// Whether `fast-json-patch` refuses a path through `key` inside the
/// object at `path`.
fn banned(path: &str, key: &str) -> bool {
    key == "__proto__" || (key == "prototype" && path.ends_with("/constructor"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(old: Value, new: Value) -> Option<Value> {
        diff(&old, &new, usize::MAX).map(|p| serde_json::from_str(&p).unwrap())
    }

    #[test]
    fn keys_added_removed_and_replaced_with_escaped_pointers() {
        let old =
            json!({"branch": "main", "view": {"a/b": 1, "x~y": [1, 2], "keep": true}, "gone": 1});
        let new = json!({"branch": "dev", "view": {"a/b": 2, "x~y": [1, 2, 3], "keep": true}, "new": {"n": null}});
        assert_eq!(
            patch(old, new).unwrap(),
            json!([
                {"op": "replace", "path": "/branch", "value": "dev"},
                {"op": "remove", "path": "/gone"},
                {"op": "replace", "path": "/view/a~1b", "value": 2},
                {"op": "replace", "path": "/view/x~0y", "value": [1, 2, 3]},
                {"op": "add", "path": "/new", "value": {"n": null}},
            ])
        );
    }

    #[test]
    fn an_object_that_becomes_something_else_is_replaced() {
        assert_eq!(
            patch(
                json!({"a": {"b": 1}, "c": [1]}),
                json!({"a": [1], "c": {"d": 1}})
            )
            .unwrap(),
            json!([
                {"op": "replace", "path": "/a", "value": [1]},
                {"op": "replace", "path": "/c", "value": {"d": 1}},
            ])
        );
        assert_eq!(patch(json!({"a": 1}), json!({"a": 1})).unwrap(), json!([]));
    }

    #[test]
    fn the_whole_state_goes_when_it_is_shorter_or_a_path_is_refused() {
        let old = json!({"a": 1});
        let new = json!({"b": 2});
        let len = new.to_string().len();
        assert_eq!(diff(&old, &new, len), None, "longer than the state itself");
        let old = json!({"big": "x".repeat(1000), "n": 1});
        let new = json!({"big": "x".repeat(1000), "n": 2});
        assert_eq!(
            diff(&old, &new, new.to_string().len()).as_deref(),
            Some(r#"[{"op":"replace","path":"/n","value":2}]"#)
        );
        for (old, new) in [
            (
                json!({"__proto__": {"a": 1}}),
                json!({"__proto__": {"a": 2}}),
            ),
            (json!({"x": 1}), json!({"x": 1, "__proto__": 1})),
            (
                json!({"constructor": {"prototype": 1}}),
                json!({"constructor": {"prototype": 2}}),
            ),
        ] {
            assert_eq!(diff(&old, &new, usize::MAX), None, "{new}");
        }
        assert_eq!(diff(&json!([1]), &json!({"a": 1}), usize::MAX), None);
    }
}
