//! Plain records read without the parser: a line that is one JSON object
//! whose strings hold no escape is checked and walked here faster than
//! serde skips what a record does not use. Anything else (an escape, a
//! control character, an odd number, deep nesting, any error) is left to
//! the parser, which then decides and says why a line is bad: a walk that
//! succeeds only ever accepts text the parser accepts too.

use serde::de::{self, Deserialize, Visitor};

/// Nesting deeper than this is left to the parser (which has its own limit).
const DEPTH: u32 = 32;

/// Walk the members of the JSON object that is the whole of `text`
/// (whitespace around it allowed) when it is plain: valid JSON in which no
/// string holds an escape or a control character. `f` gets each top-level
/// key and its value as written (a string with its quotes), in order, and
/// returns false to stop the walk. True when the whole text was walked and
/// is plain JSON; false when `f` stopped it or the text is not plain (it
/// may still be JSON: the parser decides).
pub fn walk_object<'a>(text: &'a str, mut f: impl FnMut(&'a str, &'a str) -> bool) -> bool {
    let b = text.as_bytes();
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return false;
    }
    i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return ws(b, i + 1) == b.len();
    }
    loop {
        let key = i + 1;
        let Some(key_end) = string_end(b, i) else {
            return false;
        };
        i = ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return false;
        }
        let start = ws(b, i + 1);
        let Some(end) = value_end(b, start, DEPTH) else {
            return false;
        };
        // Both ends stand next to ASCII bytes: they are character boundaries.
        if !f(&text[key..key_end - 1], &text[start..end]) {
            return false;
        }
        i = ws(b, end);
        match b.get(i) {
            Some(b',') => i = ws(b, i + 1),
            Some(b'}') => return ws(b, i + 1) == b.len(),
            _ => return false,
        }
    }
}

/// Index `i` moved past JSON's whitespace (not `is_ascii_whitespace`, which
/// takes a form feed too).
#[inline]
fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// The end of the plain JSON value at `b[i]`; None if there is none there
/// or it is not plain.
fn value_end(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' => container_end(b, i, depth, b'}'),
        b'[' => container_end(b, i, depth, b']'),
        b't' => literal_end(b, i, b"true"),
        b'f' => literal_end(b, i, b"false"),
        b'n' => literal_end(b, i, b"null"),
        b'-' | b'0'..=b'9' => number_end(b, i),
        _ => None,
    }
}

/// The end of the object or array opened at `b[i]`, closed by `close`.
fn container_end(b: &[u8], i: usize, depth: u32, close: u8) -> Option<usize> {
    let depth = depth.checked_sub(1)?;
    let mut i = ws(b, i + 1);
    if *b.get(i)? == close {
        return Some(i + 1);
    }
    loop {
        if close == b'}' {
            i = ws(b, string_end(b, i)?);
            if *b.get(i)? != b':' {
                return None;
            }
            i = ws(b, i + 1);
        }
        i = ws(b, value_end(b, i, depth)?);
        match *b.get(i)? {
            b',' => i = ws(b, i + 1),
            c if c == close => return Some(i + 1),
            _ => return None,
        }
    }
}

fn literal_end(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    b[i..].starts_with(word).then_some(i + word.len())
}

/// The end of the number at `b[i]`, as JSON writes one: `-`, then `0` or a
/// digit 1–9 and more digits, then a fraction and an exponent, each with at
/// least one digit. What follows it is the container's to check.
fn number_end(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |i: usize| i + b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if b[i] == b'-' {
        i += 1;
    }
    match *b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(i),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let end = digits(i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        let end = digits(i);
        if end == i {
            return None;
        }
        i = end;
    }
    Some(i)
}

/// The end of the string whose opening quote is at `b[i]`; None if there is
/// no quote there or the string holds an escape or a control character
/// (which JSON forbids unescaped). Sixteen bytes are looked at a time: most
/// strings of a record are short (keys, names, ids), and end in the first.
#[inline]
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    while let Some(chunk) = b.get(j..j + 16) {
        let n = stop(chunk.try_into().expect("sixteen bytes"));
        if n < 16 {
            j += n;
            return (b[j] == b'"').then_some(j + 1);
        }
        j += 16;
    }
    let n = b[j..].iter().position(|&c| stops(c))?;
    (b[j + n] == b'"').then_some(j + n + 1)
}

/// Whether a string's text stops at `c`: its closing quote, an escape or a
/// control character.
fn stops(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// Where the first byte of `chunk` that [`stops`] a string is; 16 if none.
#[cfg(target_arch = "x86_64")]
#[inline]
fn stop(chunk: &[u8; 16]) -> usize {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: every x86_64 processor has SSE2, and the load reads the
    // sixteen bytes of `chunk`, unaligned.
    let mask = unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // Unsigned: a byte at most 0x1f is its maximum with 0x1f.
        let low = _mm_set1_epi8(0x1f);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, low), low);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control))
    };
    (mask as u32 | 0x1_0000).trailing_zeros() as usize
}

/// Where the first byte of `chunk` that [`stops`] a string is; 16 if none:
/// eight bytes at a time, on other processors (and in tests, beside SSE2's).
#[cfg(any(test, not(target_arch = "x86_64")))]
fn stop_words(chunk: &[u8; 16]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte of `x` that is zero (below 0x20) sets its high bit here; the
    // lowest bit set is the first such byte.
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let below = |x: u64| x.wrapping_sub(ONES * 0x20) & !x & HIGH;
    for (k, word) in chunk.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let found =
            zero(w ^ (ONES * u64::from(b'"'))) | zero(w ^ (ONES * u64::from(b'\\'))) | below(w);
        if found != 0 {
            return k * 8 + (found.trailing_zeros() / 8) as usize;
        }
    }
    16
}

#[cfg(not(target_arch = "x86_64"))]
use stop_words as stop;

/// The names of the members that `T`'s derived `Deserialize` reads, as it
/// lists them itself (after renames): what a record read without the parser
/// must leave to the parser when the line has one of them.
pub struct Fields {
    sorted: Vec<&'static str>,
    /// A bit per [`Fields::mark`] of a name: most keys a line has and the
    /// struct does not read are told apart without a search.
    marks: [u64; 4],
}

impl Fields {
    pub fn of<T: Deserialize<'static>>() -> Fields {
        let mut listed: &'static [&'static str] = &[];
        let _ = T::deserialize(Probe(&mut listed));
        let mut sorted = listed.to_vec();
        sorted.sort_unstable();
        let mut marks = [0; 4];
        for name in &sorted {
            let m = Fields::mark(name);
            marks[m / 64] |= 1 << (m % 64);
        }
        Fields { sorted, marks }
    }

    pub fn contains(&self, key: &str) -> bool {
        let m = Fields::mark(key);
        self.marks[m / 64] & (1 << (m % 64)) != 0 && self.sorted.binary_search(&key).is_ok()
    }

    /// One of 256 marks, from a name's length and its first and last bytes.
    fn mark(name: &str) -> usize {
        let b = name.as_bytes();
        let ends = b
            .first()
            .map_or(0, |&c| usize::from(c) * 7 + usize::from(b[b.len() - 1]));
        (ends + b.len() * 31) % 256
    }
}

/// A deserializer that only notes the fields of the struct asked of it.
struct Probe<'p>(&'p mut &'static [&'static str]);

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(de::Error::custom("fields noted"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::json::Entries;
    use serde::de::IgnoredAny;
    use serde_json::value::RawValue;

    const INIT: &str = r#"{"type":"system","subtype":"init","cwd":"/w","session_id":"52bd-c1","tools":["Task","Bash","Édit ☃"],"mcp_servers":[],"model":"m-1","n":-12.5e+3,"z":0,"ok":true,"no":false,"x":null,"plugins":[{"name":"p","path":"builtin"}],"memory":{"auto":"/m/"},"e":{},"l":[[],[1,[2]]]}"#;

    /// The members a walk gives, or None if it failed.
    fn walked(text: &str) -> Option<Vec<(&str, &str)>> {
        let mut members = Vec::new();
        walk_object(text, |k, v| {
            members.push((k, v));
            true
        })
        .then_some(members)
    }

    /// A plain object is walked member by member, each as the parser
    /// reads it.
    #[test]
    fn a_plain_object_is_walked_as_the_parser_reads_it() {
        for text in [
            INIT,
            " {} ",
            "{\"a\" :\t[ 1 , \"b\" ]\r\n}\n",
            "{\"\":\"\"}",
        ] {
            let members = walked(text).unwrap_or_else(|| panic!("{text}"));
            let parsed: Entries<&RawValue> = serde_json::from_str(text).unwrap();
            let parsed: Vec<_> = parsed
                .0
                .iter()
                .map(|(k, v)| (k.as_ref(), v.get()))
                .collect();
            assert_eq!(members, parsed, "{text}");
        }
    }

    /// Whatever is changed in a plain record, by a byte taken out, put in
    /// or replaced anywhere, the walk accepts only what the parser accepts.
    #[test]
    fn the_walk_accepts_nothing_the_parser_refuses() {
        let marks = [
            "\"", "\\", ",", ":", "[", "]", "{", "}", " ", "\u{1}", "\t", "0", "1", "-", "+", ".",
            "e", "t", "n", "x", "é",
        ];
        let mut walks = 0;
        let mut check = |text: &str| {
            if walked(text).is_some() {
                walks += 1;
                assert!(serde_json::from_str::<IgnoredAny>(text).is_ok(), "{text}");
            }
        };
        let chars: Vec<(usize, char)> = INIT.char_indices().collect();
        for &(at, c) in &chars {
            let after = at + c.len_utf8();
            check(&format!("{}{}", &INIT[..at], &INIT[after..]));
            for mark in marks {
                check(&format!("{}{mark}{}", &INIT[..at], &INIT[at..]));
                check(&format!("{}{mark}{}", &INIT[..at], &INIT[after..]));
            }
        }
        // Many changes leave a plain record (a letter in a string, a digit
        // in a number): the walk is not just refusing everything.
        assert!(walks > 1000, "{walks}");
    }

    /// What the parser must decide is left to it: escapes, control
    /// characters, odd numbers and literals, deep nesting, anything but
    /// one object.
    #[test]
    fn what_is_not_plain_is_left_to_the_parser() {
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(40), "]".repeat(40));
        let not_plain = [
            r#"{"a":"b\"c"}"#,
            r#"{"a":"\u0062"}"#,
            "{\"a\":\"b\u{1}\"}",
            "{\"a\":\"b\u{1f}\"}",
            r#"{"a\n":1}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":.5}"#,
            r#"{"a":-}"#,
            r#"{"a":1e}"#,
            r#"{"a":+1}"#,
            r#"{"a":tru}"#,
            r#"{"a":nul}"#,
            r#"{"a":1,}"#,
            r#"{"a":[1,]}"#,
            r#"{"a" 1}"#,
            r#"{"a":1} x"#,
            r#"{"a":1}{}"#,
            "{\"a\":1}\u{c}",
            "[1]",
            "\"a\"",
            "",
            deep.as_str(),
        ];
        for text in not_plain {
            assert!(walked(text).is_none(), "{text}");
        }
        let shallow = format!("{{\"a\":{}{}}}", "[".repeat(20), "]".repeat(20));
        let plain = [
            r#"{"a":0}"#,
            r#"{"a":-0}"#,
            r#"{"a":10.25}"#,
            r#"{"a":1E+5}"#,
            r#"{"a":-1.5e-07}"#,
            r#"{"a":"ünï ☃ 🚀"}"#,
            shallow.as_str(),
        ];
        for text in plain {
            assert!(walked(text).is_some(), "{text}");
        }
    }

    /// A string's end is found by sixteen bytes at a time exactly where a
    /// byte at a time finds it, whichever byte stops it and wherever.
    #[test]
    fn the_stop_of_a_string_is_found_anywhere_in_sixteen_bytes() {
        let fillers = [b'a', b' ', 0x7f, 0x80, 0xff, b'!', b'#', b'[', b']'];
        for stop_at in 0..=16 {
            for filler in fillers {
                for byte in 0..=255u8 {
                    let mut chunk = [filler; 16];
                    if stop_at < 16 {
                        chunk[stop_at] = byte;
                    }
                    let want = chunk.iter().position(|&c| stops(c)).unwrap_or(16);
                    assert_eq!(stop(&chunk), want, "{chunk:?}");
                    assert_eq!(stop_words(&chunk), want, "{chunk:?}");
                }
            }
        }
    }

    /// A struct's members are listed as its derive reads them, renamed.
    #[test]
    fn a_structs_members_are_listed_by_its_derive() {
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Two<'a> {
            #[serde(rename = "type")]
            kind: Option<&'a str>,
            session_id: Option<&'a str>,
        }
        let fields = Fields::of::<Two>();
        assert_eq!(fields.sorted, ["session_id", "type"]);
        assert!(fields.contains("type") && fields.contains("session_id"));
        for other in ["kind", "", "session", "session_idx", "tools", "typ"] {
            assert!(!fields.contains(other), "{other}");
        }
    }
}
