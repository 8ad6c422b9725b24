//! What the emitter has open (text messages, tool calls, reasoning, steps,
//! subagents), with every lookup by id in constant or logarithmic time: a
//! stream that leaves thousands of calls open must not slow down with each.

use std::collections::{BTreeMap, BTreeSet};

use foldhash::HashMap;
use std::sync::Arc;

use crate::base::closer::Closer;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    Text,
    Tool,
    ReasoningMessage,
    Reasoning,
    Step,
    Subagent,
}

const KINDS: usize = 6;

/// The agent that opened an item: `None` for the main agent, else the
/// subagent's run id.
pub(super) type Owner = Option<Arc<str>>;

#[derive(Clone)]
pub(super) struct Open {
    pub kind: Kind,
    pub id: String,
    /// A tool call's arguments so far, to complete them if the call is
    /// closed before they are (a cut stream).
    pub args: Option<Box<Closer>>,
    /// The subagent whose item this is (`subagentRunId` when it opened): its
    /// end carries the same, whatever line ends it.
    pub owner: Owner,
}

/// A position in opening order.
pub(super) type Seq = u64;

#[derive(Clone, Default)]
pub(super) struct OpenItems {
    /// Everything open, oldest first.
    order: BTreeMap<Seq, Open>,
    /// Where each open id is, by kind (an id is open at most once per kind).
    by_id: HashMap<String, [Option<Seq>; KINDS]>,
    /// The open items of each subagent (the main agent's are not listed).
    by_owner: HashMap<Arc<str>, BTreeSet<Seq>>,
    /// The open text messages of all agents, oldest first (a few at a time:
    /// a tool call closes its agent's texts).
    texts: Vec<Seq>,
    next: Seq,
    /// Argument trackers of closed calls, for the next calls to reuse: kept
    /// boxed so that a reused one moves back into an open call without a new
    /// allocation.
    #[allow(clippy::vec_box)]
    spare_args: Vec<Box<Closer>>,
    /// Strings of closed items' ids, for the next ids to be copied into: an
    /// item opened and closed in steady state allocates nothing.
    spare_ids: Vec<String>,
    /// Emptied sets of `by_owner`, for the next subagents to reuse.
    spare_sets: Vec<BTreeSet<Seq>>,
}

/// How many argument trackers and owner sets are kept for reuse, each.
const SPARES: usize = 64;
/// How many id strings are kept for reuse (an item holds two).
const SPARE_IDS: usize = 2 * SPARES;

impl OpenItems {
    /// Whether `id` is open as anything.
    pub fn contains_id(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// Where item `id` of `kind` is, if it is open.
    pub fn find(&self, kind: Kind, id: &str) -> Option<Seq> {
        self.by_id.get(id).and_then(|k| k[kind as usize])
    }

    pub fn get_mut(&mut self, seq: Seq) -> Option<&mut Open> {
        self.order.get_mut(&seq)
    }

    /// A copy of `id`, in a spare string if there is one.
    fn copy(&mut self, id: &str) -> String {
        let mut s = self.spare_ids.pop().unwrap_or_default();
        s.clear();
        s.push_str(id);
        s
    }

    fn spare(&mut self, s: String) {
        if self.spare_ids.len() < SPARE_IDS {
            self.spare_ids.push(s);
        }
    }

    /// Open item `id` of `kind` (which must not be open yet).
    pub fn push(&mut self, kind: Kind, id: &str, owner: Owner) {
        let seq = self.next;
        self.next += 1;
        let args = (kind == Kind::Tool).then(|| match self.spare_args.pop() {
            Some(mut c) => {
                c.reset();
                c
            }
            None => Box::default(),
        });
        // One lookup when the id is new (the usual case), two when it is
        // open as another kind already.
        let slots = if self.by_id.contains_key(id) {
            self.by_id.get_mut(id)
        } else {
            let key = self.copy(id);
            Some(self.by_id.entry(key).or_default())
        };
        if let Some(slots) = slots {
            debug_assert!(slots[kind as usize].is_none(), "{kind:?} {id} opened twice");
            slots[kind as usize] = Some(seq);
        }
        let id = self.copy(id);
        if let Some(owner) = &owner {
            match self.by_owner.get_mut(owner) {
                Some(set) => set.insert(seq),
                None => {
                    let mut set = self.spare_sets.pop().unwrap_or_default();
                    set.insert(seq);
                    self.by_owner.insert(Arc::clone(owner), set);
                    true
                }
            };
        }
        if kind == Kind::Text {
            self.texts.push(seq);
        }
        self.order.insert(
            seq,
            Open {
                kind,
                id,
                args,
                owner,
            },
        );
    }

    /// Take item `seq` off the open list.
    pub fn remove(&mut self, seq: Seq) -> Option<Open> {
        let o = self.order.remove(&seq)?;
        if let Some(slots) = self.by_id.get_mut(&*o.id) {
            slots[o.kind as usize] = None;
            if slots.iter().all(Option::is_none) {
                if let Some((key, _)) = self.by_id.remove_entry(&*o.id) {
                    self.spare(key);
                }
            }
        }
        if let Some(owner) = &o.owner {
            if let Some(set) = self.by_owner.get_mut(owner) {
                set.remove(&seq);
                if set.is_empty() {
                    if let Some(set) = self.by_owner.remove(owner) {
                        if self.spare_sets.len() < SPARES {
                            self.spare_sets.push(set);
                        }
                    }
                }
            }
        }
        if o.kind == Kind::Text {
            if let Ok(i) = self.texts.binary_search(&seq) {
                self.texts.remove(i);
            }
        }
        Some(o)
    }

    /// Keep what an item taken off the list can lend to the next ones.
    pub fn recycle(&mut self, o: Open) {
        self.spare(o.id);
        if let Some(args) = o.args {
            if self.spare_args.len() < SPARES {
                self.spare_args.push(args);
            }
        }
    }

    /// Take the newest open item off the list.
    pub fn pop(&mut self) -> Option<Open> {
        let seq = *self.order.keys().next_back()?;
        self.remove(seq)
    }

    /// The newest open text message of `owner`.
    pub fn newest_text_of(&self, owner: &Owner) -> Option<Seq> {
        self.texts
            .iter()
            .rev()
            .copied()
            .find(|s| self.order.get(s).is_some_and(|o| &o.owner == owner))
    }

    /// What subagent `root` (opened at `seq`) and the subagents it started
    /// since have open, newest first.
    pub fn owned_by_subagent(&self, root: &str, seq: Seq) -> Vec<Seq> {
        let mut owners: Vec<&str> = vec![root];
        let mut items = Vec::new();
        let mut k = 0;
        while k < owners.len() {
            if let Some(set) = self.by_owner.get(owners[k]) {
                for &s in set {
                    items.push(s);
                    let o = &self.order[&s];
                    // A subagent is open once, so each is added once.
                    if s > seq && o.kind == Kind::Subagent {
                        owners.push(&o.id);
                    }
                }
            }
            k += 1;
        }
        items.sort_unstable_by(|a, b| b.cmp(a));
        items
    }

    /// Ids of the open tool calls, oldest first.
    pub fn tool_calls(&self) -> impl Iterator<Item = &str> {
        self.order
            .values()
            .filter(|o| o.kind == Kind::Tool)
            .map(|o| &*o.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(items: &mut OpenItems, seqs: Vec<Seq>) -> Vec<String> {
        seqs.into_iter()
            .map(|s| items.remove(s).unwrap().id.to_string())
            .collect()
    }

    #[test]
    fn lookups_by_kind_and_id_and_removal() {
        let mut items = OpenItems::default();
        items.push(Kind::Reasoning, "r", None);
        items.push(Kind::ReasoningMessage, "r", None);
        items.push(Kind::Tool, "c", None);
        assert!(items.contains_id("r") && items.contains_id("c"));
        assert!(items.find(Kind::Text, "r").is_none());
        let m = items.find(Kind::ReasoningMessage, "r").unwrap();
        assert_eq!(items.remove(m).unwrap().kind, Kind::ReasoningMessage);
        assert!(items.contains_id("r"), "the span is still open");
        assert!(items.find(Kind::Tool, "c").is_some());
        assert_eq!(items.tool_calls().collect::<Vec<_>>(), ["c"]);
        assert_eq!(items.pop().unwrap().id.as_str(), "c");
        assert_eq!(items.pop().unwrap().id.as_str(), "r");
        assert!(items.pop().is_none());
        assert!(!items.contains_id("r"));
    }

    #[test]
    fn a_subagent_owns_what_it_and_its_subagents_opened() {
        let mut items = OpenItems::default();
        let sub = Some(Arc::<str>::from("sub"));
        let inner = Some(Arc::<str>::from("inner"));
        items.push(Kind::Text, "main-text", None);
        items.push(Kind::Subagent, "sub", None);
        items.push(Kind::Text, "sub-text", sub.clone());
        items.push(Kind::Subagent, "inner", sub.clone());
        items.push(Kind::Tool, "main-call", None);
        items.push(Kind::Tool, "inner-call", inner.clone());
        items.push(Kind::Text, "sub-text-2", sub.clone());
        let mut texts = Vec::new();
        while let Some(t) = items.newest_text_of(&sub) {
            texts.push(items.remove(t).unwrap().id);
        }
        assert_eq!(texts, ["sub-text-2", "sub-text"]);
        let root = items.find(Kind::Subagent, "sub").unwrap();
        let owned = items.owned_by_subagent("sub", root);
        assert_eq!(ids(&mut items, owned), ["inner-call", "inner"]);
        let left: Vec<&str> = items.order.values().map(|o| &*o.id).collect();
        assert_eq!(left, ["main-text", "sub", "main-call"]);
    }
}
