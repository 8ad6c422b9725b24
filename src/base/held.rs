//! A string slot that keeps its buffer.

/// A string kept between lines (an open message's id, the model's name),
/// whose buffer outlives its value: setting it again allocates nothing once
/// the buffer is big enough.
#[derive(Clone, Default)]
pub struct Held {
    text: String,
    set: bool,
}

impl Held {
    pub fn get(&self) -> Option<&str> {
        self.set.then_some(self.text.as_str())
    }

    pub fn set(&mut self, v: &str) {
        self.text.clear();
        self.text.push_str(v);
        self.set = true;
    }

    /// Set it to `v`, or clear it when `v` is `None`.
    pub fn set_opt(&mut self, v: Option<&str>) {
        match v {
            Some(v) => self.set(v),
            None => self.clear(),
        }
    }

    /// The value, now cleared (the text stays readable until the next
    /// `set`).
    pub fn take(&mut self) -> Option<&str> {
        let was = std::mem::replace(&mut self.set, false);
        was.then_some(self.text.as_str())
    }

    pub fn clear(&mut self) {
        self.set = false;
    }

    pub fn is_set(&self) -> bool {
        self.set
    }
}
