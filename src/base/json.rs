//! Reading the input's JSON: the one place the parser is chosen, plus the
//! repairs and conversions every translator needs.
//!
//! Input records are deserialized into borrowed structs (`Cow<str>` for
//! strings, `&RawValue` for values copied through), so a line costs no
//! allocation unless a string holds escapes.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem;
use serde::Deserialize;
use serde_json::value::RawValue;

/// Parse one input line. Its UTF-8 is checked once, whole (a fast pass),
/// so that the parser need not check each string it borrows; a line that is
/// not UTF-8 is parsed as bytes, as far as it goes.
pub fn parse<'a, T: Deserialize<'a> + Default>(line: &'a [u8]) -> serde_json::Result<T> {
    let mut value = T::default();
    parse_into(line, std::str::from_utf8(line).ok(), &mut value)?;
    Ok(value)
}

/// Scan the members of the JSON object whose `{` is at `b[i]`, in text
/// that has parsed already: `f` gets each member's key (as written, without
/// its quotes), where the member starts (its key's opening quote) and where
/// its value starts, and returns where that value ends if it read the value
/// itself (None: the scan skips it). Returns the index past the object's
/// `}`; None if there is no object at `i`.
///
/// Strings are skipped with `memchr`: most of a record's bytes are in them.
pub fn scan_members<'a>(
    b: &'a [u8],
    i: usize,
    f: &mut impl FnMut(&'a [u8], usize, usize) -> Option<usize>,
) -> Option<usize> {
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut i = skip_ws(b, i + 1);
    while b.get(i) == Some(&b'"') {
        let at = i;
        let key_end = string_end(b, i)?;
        let key = &b[i + 1..key_end - 1];
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_ws(b, i + 1);
        let end = match f(key, at, start) {
            Some(end) => end,
            None => value_end(b, start)?,
        };
        i = skip_ws(b, end);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
    }
    (b.get(i) == Some(&b'}')).then_some(i + 1)
}

/// The end of the JSON value that starts at `b[i]`, in text that has parsed.
pub fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => close_end(b, i, 0),
        _ => Some(
            b[i..]
                .iter()
                .position(|&c| matches!(c, b',' | b'}' | b']') || c.is_ascii_whitespace())
                .map_or(b.len(), |n| i + n),
        ),
    }
}

/// The end of the object or array that `depth` open brackets before `b[i]`
/// begin, `b[i]` standing outside any string, in text that has parsed.
pub fn close_end(b: &[u8], mut i: usize, mut depth: usize) -> Option<usize> {
    loop {
        match *b.get(i)? {
            b'"' => {
                i = string_end(b, i)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// The end of the JSON string whose opening quote is at `b[i]`.
fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        i += quote_or_backslash(b.get(i..)?)?;
        if b[i] == b'"' {
            return Some(i + 1);
        }
        i += 2;
    }
}

/// Where the first `"` or `\` of `b` is. Most strings of a record are
/// short (keys, ids, names): their first 32 bytes are looked at eight at a
/// time here, a call of `memchr` costing more than that; longer text goes
/// to `memchr`.
#[inline]
fn quote_or_backslash(b: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte of `x` that is zero sets its high bit here; the lowest one
    // set is the first such byte.
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut i = 0;
    while i < 32 {
        let Some(word) = b.get(i..i + 8) else {
            return b[i..]
                .iter()
                .position(|&c| c == b'"' || c == b'\\')
                .map(|n| i + n);
        };
        let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let found = zero(w ^ (ONES * u64::from(b'"'))) | zero(w ^ (ONES * u64::from(b'\\')));
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    memchr::memchr2(b'"', b'\\', &b[i..]).map(|n| i + n)
}

/// `text`, JSON that has parsed (or a part of it that starts and ends
/// where a value, a member or whitespace does), without the whitespace
/// around it: what `str::trim` takes off such text, which can only be
/// JSON's whitespace, found without its Unicode tables.
pub fn trim(text: &str) -> &str {
    let b = text.as_bytes();
    let start = skip_ws(b, 0);
    let mut end = b.len();
    while end > start && b[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    &text[start..end]
}

/// Index `i` moved past whitespace.
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Parse one input line into `place`, a fresh value, with the line's UTF-8
/// checked already (`text`: the line as text when it is UTF-8). The record
/// is written where it stays (serde's `deserialize_in_place`), not built
/// and then moved out through each layer of the parser: records are large
/// (up to 1.3 KB, one field per key any record of the dialect can have),
/// and on small lines those moves took up to a fifth of the time.
pub fn parse_into<'a, T: Deserialize<'a>>(
    line: &'a [u8],
    text: Option<&'a str>,
    place: &mut T,
) -> serde_json::Result<()> {
    match text {
        Some(text) => {
            let mut de = serde_json::Deserializer::from_str(text);
            T::deserialize_in_place(&mut de, place)?;
            de.end()
        }
        None => {
            let mut de = serde_json::Deserializer::from_slice(line);
            T::deserialize_in_place(&mut de, place)?;
            de.end()
        }
    }
}

/// `bytes` as text if they are UTF-8, as [`std::str::from_utf8`] says, the
/// ASCII start of a line (most of a record, often all of it) passed over 32
/// bytes at a time first.
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    let mut ascii = 0;
    for block in bytes.chunks_exact(32) {
        let mut any = 0u64;
        for word in block.chunks_exact(8) {
            any |= u64::from_le_bytes(word.try_into().expect("eight bytes"));
        }
        if any & 0x8080_8080_8080_8080 != 0 {
            break;
        }
        ascii += 32;
    }
    std::str::from_utf8(&bytes[ascii..]).ok()?;
    // SAFETY: `bytes[..ascii]` is ASCII, and the rest, which starts after
    // an ASCII byte (at a character's start), is UTF-8: so is the whole.
    Some(unsafe { std::str::from_utf8_unchecked(bytes) })
}

/// For `Option<Cow<str>>` fields: `#[serde(borrow, default, deserialize_with
/// = "json::opt_str")]`. The string is borrowed from the line unless it holds
/// escapes; serde's own `Option<Cow<str>>` always copies it.
pub fn opt_str<'de: 'a, 'a, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    Ok(Option::<Borrowed>::deserialize(d)?.map(|b| b.0))
}

/// A string borrowed from the line unless it holds escapes (for hand-written
/// visitors: a plain `Cow<str>` is always a copy).
#[derive(Deserialize)]
pub struct Borrowed<'a>(#[serde(borrow)] pub Cow<'a, str>);

/// A JSON object read as its entries in order, keys borrowed from the line
/// unless they hold escapes (no map, no copied keys).
pub struct Entries<'a, T>(pub Vec<(Cow<'a, str>, T)>);

impl<'de: 'a, 'a, T: Deserialize<'de>> Deserialize<'de> for Entries<'a, T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a, T>(std::marker::PhantomData<(&'a (), T)>);
        impl<'de: 'a, 'a, T: Deserialize<'de>> serde::de::Visitor<'de> for V<'a, T> {
            type Value = Entries<'a, T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Self::Value, M::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((k, v)) = map.next_entry::<Borrowed, T>()? {
                    out.push((k.0, v));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// Any JSON value, read and dropped. Unlike serde's `IgnoredAny`, which
/// serde_json skips with a fresh buffer for every line that nests, this
/// walks the value itself (up to [`SKIP_DEPTH`] levels, well within the
/// parser's recursion limit; deeper levels are left to `IgnoredAny`):
/// skipping allocates nothing unless a string holds escapes or the value
/// nests deeper.
#[derive(Default)]
pub struct Skip;

/// How many levels [`Skip`] walks itself.
const SKIP_DEPTH: u8 = 16;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::DeserializeSeed::deserialize(SkipLevels(SKIP_DEPTH), d)
    }
}

/// [`Skip`] with this many levels left to walk.
#[derive(Clone, Copy)]
struct SkipLevels(u8);

impl<'de> serde::de::DeserializeSeed<'de> for SkipLevels {
    type Value = Skip;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Skip, D::Error> {
        if self.0 == 0 {
            serde::de::IgnoredAny::deserialize(d)?;
            return Ok(Skip);
        }
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for SkipLevels {
    type Value = Skip;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_none<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Skip, D::Error> {
        serde::de::DeserializeSeed::deserialize(self, d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        let inner = SkipLevels(self.0 - 1);
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        let inner = SkipLevels(self.0 - 1);
        while map.next_key_seed(inner)?.is_some() {
            map.next_value_seed(inner)?;
        }
        Ok(Skip)
    }
}

/// Whether `line` is valid JSON at all (used to tell a malformed line from a
/// well-formed record of an unexpected shape).
pub fn is_json(line: &[u8]) -> bool {
    // Skipping a string does not check its UTF-8: check it here.
    std::str::from_utf8(line).is_ok()
        && serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok()
}

/// If `line` failed to parse (`err`) and holds a lone UTF-16 surrogate
/// escape (`\ud83d` without its pair, as when an emoji is split between two
/// streamed deltas), a copy of it with each lone surrogate replaced by
/// U+FFFD; else `None`. Only the line is looked at, not the error's wording.
pub fn repair_surrogates(line: &[u8], err: &serde_json::Error) -> Option<Vec<u8>> {
    if err.classify() != serde_json::error::Category::Syntax {
        return None;
    }
    let fixed = replace_lone_surrogates(line);
    (fixed != line).then_some(fixed)
}

/// `json` with every lone surrogate escape inside its strings replaced by
/// `\ufffd` (proper pairs are kept).
pub fn replace_lone_surrogates(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    let mut in_string = false;
    while i < line.len() {
        let b = line[i];
        if !in_string {
            in_string = b == b'"';
            out.push(b);
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = false;
                out.push(b);
                i += 1;
            }
            b'\\' if line.get(i + 1) == Some(&b'u') => {
                let unit = hex4(&line[i + 2..]);
                match unit {
                    Some(hi @ 0xD800..=0xDBFF) => {
                        let lo =
                            if line.get(i + 6) == Some(&b'\\') && line.get(i + 7) == Some(&b'u') {
                                hex4(&line[i + 8..])
                            } else {
                                None
                            };
                        if matches!(lo, Some(0xDC00..=0xDFFF)) {
                            out.extend_from_slice(&line[i..i + 12]);
                            i += 12;
                        } else {
                            let _ = hi;
                            out.extend_from_slice(b"\\ufffd");
                            i += 6;
                        }
                    }
                    Some(0xDC00..=0xDFFF) => {
                        out.extend_from_slice(b"\\ufffd");
                        i += 6;
                    }
                    _ => {
                        out.extend_from_slice(&line[i..(i + 6).min(line.len())]);
                        i += 6;
                    }
                }
            }
            b'\\' => {
                out.extend_from_slice(&line[i..(i + 2).min(line.len())]);
                i += 2;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

fn hex4(b: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(b.get(..4)?).ok()?;
    u32::from_str_radix(s, 16).ok()
}

/// The text of a JSON value: a string's content, or any other value's JSON.
pub fn text_of(v: &RawValue) -> Cow<'_, str> {
    str_of(v).unwrap_or(Cow::Borrowed(v.get()))
}

/// A JSON string value's content, if `v` is a string. Lone surrogate escapes
/// become U+FFFD.
pub fn str_of(v: &RawValue) -> Option<Cow<'_, str>> {
    let s = v.get();
    if !s.starts_with('"') {
        return None;
    }
    match serde_json::from_str::<Borrowed>(s) {
        Ok(text) => Some(text.0),
        Err(_) => serde_json::from_slice::<String>(&replace_lone_surrogates(s.as_bytes()))
            .ok()
            .map(Cow::Owned),
    }
}

/// `v` itself if it is a JSON string literal that can be copied to the output
/// as it is: the input's escapes are valid JSON, so only lone surrogate
/// escapes (which need repair) rule it out. Copying skips decoding and
/// re-escaping, which is most of the work for large tool outputs.
pub fn literal(v: &RawValue) -> Option<&RawValue> {
    let b = v.get().as_bytes();
    if b.first() != Some(&b'"') {
        return None;
    }
    // The searcher is made once: `memmem::find_iter` makes one per call,
    // which costs more than the search of a short string.
    static UNICODE_ESCAPE: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\\u"));
    for i in UNICODE_ESCAPE.find_iter(b) {
        // `\\u` is an escaped backslash followed by `u`; a lone surrogate
        // check that also trips on it only costs a decode.
        if matches!(b.get(i + 2), Some(b'd' | b'D'))
            && matches!(b.get(i + 3), Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F'))
        {
            return None;
        }
    }
    Some(v)
}

/// If the JSON string literal `lit` ends with a lone high surrogate escape
/// (`…\ud83d"`: the first half of a character whose second half comes in the
/// next delta), the literal without it and the escape itself.
pub fn split_high_surrogate(lit: &str) -> Option<(String, String)> {
    let b = lit.as_bytes();
    if b.len() < 8 || b[b.len() - 1] != b'"' {
        return None;
    }
    let esc = b.len() - 7;
    if b[esc] != b'\\' || b[esc + 1] != b'u' {
        return None;
    }
    // The backslash must not itself be escaped.
    let preceding = b[..esc].iter().rev().take_while(|&&c| c == b'\\').count();
    if preceding % 2 == 1 {
        return None;
    }
    let unit = hex4(&b[esc + 2..esc + 6])?;
    if !(0xD800..=0xDBFF).contains(&unit) {
        return None;
    }
    Some((format!("{}\"", &lit[..esc]), lit[esc..esc + 6].to_owned()))
}

/// A non-negative integer from a JSON value, if it is one.
pub fn u64_of(v: Option<&RawValue>) -> Option<u64> {
    v.and_then(|v| v.get().parse::<u64>().ok())
}

/// The first 120 bytes of a line, for error messages (lossy, escaped).
pub fn preview(line: &[u8]) -> String {
    const MAX: usize = 120;
    let cut = &line[..line.len().min(MAX)];
    let mut s = String::with_capacity(cut.len());
    for c in String::from_utf8_lossy(cut).chars() {
        if c.is_control() {
            s.extend(c.escape_default());
        } else {
            s.push(c);
        }
    }
    if line.len() > MAX {
        s.push('…');
    }
    s
}

/// An ISO 8601 / RFC 3339 timestamp (`2026-11-22T10:35:42.152Z`,
/// `…+02:00`, fractional seconds of any length) as integer milliseconds since
/// the Unix epoch. `None` for anything else.
pub fn timestamp_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    // A field of fixed width: its digits, read as they come.
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        b.get(r)?.iter().try_fold(0i64, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0'))
        })
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 3 {
                millis = millis * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start)..3 {
            millis *= 10;
        }
    }
    let offset_min = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if b.len() == i + 6 && b[i + 3] == b':' => {
            let m = num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?;
            if sign == b'+' {
                m
            } else {
                -m
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + min * 60 + sec - offset_min * 60;
    Some(secs * 1000 + millis)
}

/// `ms` since 1970 as RFC 3339 in UTC with milliseconds
/// (`2026-11-22T10:35:42.152Z`): the inverse of [`timestamp_ms`].
pub fn rfc3339_ms(ms: i64) -> String {
    let (days, rest) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let (h, min, s, milli) = (
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000,
    );
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// The proleptic Gregorian date of a day since 1970-01-01: the inverse of
/// [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text is UTF-8 exactly when `std::str::from_utf8` says so, whatever
    /// the place of a character beyond ASCII or of a bad byte: in the ASCII
    /// start passed over 32 bytes at a time, at its end, or after it.
    #[test]
    fn utf8_as_the_standard_library_says() {
        let odd: [&[u8]; 8] = [
            "é".as_bytes(),
            "☃".as_bytes(),
            "🚀".as_bytes(),
            b"\x80",
            b"\xc3",
            b"\xe2\x98",
            b"\xf0\x9f\x9a",
            b"\xc0\xaf",
        ];
        for len in [0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 100] {
            let plain = vec![b'a'; len];
            assert_eq!(utf8(&plain), std::str::from_utf8(&plain).ok());
            for bytes in odd {
                for at in 0..=len {
                    let mut line = plain.clone();
                    line.splice(at..at, bytes.iter().copied());
                    assert_eq!(utf8(&line), std::str::from_utf8(&line).ok(), "{line:?}");
                }
            }
        }
    }

    /// The first quote or backslash is found wherever it stands, in short
    /// text and long, next to bytes of every value.
    #[test]
    fn quotes_and_backslashes_are_found_anywhere() {
        for len in 0..80 {
            for at in 0..=len {
                for filler in [b'a', 0x00, 0x01, 0x21, 0x5b, 0x5d, 0x80, 0xff] {
                    for mark in [b'"', b'\\'] {
                        let mut b = vec![filler; len];
                        if at < len {
                            b[at] = mark;
                            // A second one after the first changes nothing.
                            if at + 1 < len {
                                b[at + 1] = b'"';
                            }
                        }
                        let want = (at < len).then_some(at);
                        assert_eq!(quote_or_backslash(&b), want, "{len} {at} {filler} {mark}");
                    }
                }
            }
        }
    }

    /// Members and values are found past escaped quotes and brackets
    /// inside strings, at any depth.
    #[test]
    fn members_are_scanned_past_strings() {
        let json = br#"{ "a" : "x\"}]" , "b":[1,{"c":"]\\"}], "d" :-1.5e3 ,"e":{}}"#;
        let mut seen = Vec::new();
        let end = scan_members(json, 0, &mut |key, at, start| {
            let end = value_end(json, start)?;
            seen.push((key, &json[at..at + 1], &json[start..end]));
            Some(end)
        });
        assert_eq!(end, Some(json.len()));
        let want: [(&[u8], &[u8], &[u8]); 4] = [
            (b"a", b"\"", br#""x\"}]""#),
            (b"b", b"\"", br#"[1,{"c":"]\\"}]"#),
            (b"d", b"\"", b"-1.5e3"),
            (b"e", b"\"", b"{}"),
        ];
        assert_eq!(seen, want);
        assert_eq!(scan_members(b"[1]", 0, &mut |_, _, _| None), None);
    }

    #[test]
    fn a_time_written_reads_back() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_795_343_742_152), "2026-11-22T10:35:42.152Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        for ms in (0..4_102_444_800_000i64).step_by(7_777_777_777) {
            assert_eq!(timestamp_ms(&rfc3339_ms(ms)), Some(ms), "{ms}");
        }
    }

    #[test]
    fn timestamps() {
        assert_eq!(timestamp_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(timestamp_ms("1970-01-01T00:00:00.5Z"), Some(500));
        assert_eq!(
            timestamp_ms("2026-11-22T10:35:42.152Z"),
            Some(1_795_343_742_152)
        );
        assert_eq!(
            timestamp_ms("2026-11-22T10:35:42.152123Z"),
            Some(1_795_343_742_152)
        );
        assert_eq!(
            timestamp_ms("2026-11-22T12:35:42.152+02:00"),
            Some(1_795_343_742_152)
        );
        assert_eq!(timestamp_ms("2000-02-29T00:00:00Z"), Some(951_782_400_000));
        assert_eq!(timestamp_ms("2026-11-22"), None);
        assert_eq!(timestamp_ms("2026-11-22T10:35:42.Z"), None);
        assert_eq!(timestamp_ms("2026-13-22T10:35:42Z"), None);
        assert_eq!(timestamp_ms("2026-1a-22T10:35:42Z"), None);
        assert_eq!(timestamp_ms("2026-11-22T1 :35:42Z"), None);
        assert_eq!(timestamp_ms("2026-11-22T10:35:42+0a:00"), None);
        assert_eq!(timestamp_ms("2026-11-22T10:35:42+01:3-"), None);
        assert_eq!(timestamp_ms("not a time at all!!"), None);
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let line = br#"{"a":"x\ud83d","b":"\ude00y","c":"\ud83d\ude00","d":"\\ud83d"}"#;
        let err = parse::<serde_json::Value>(line).unwrap_err();
        let fixed = repair_surrogates(line, &err).unwrap();
        let v: serde_json::Value = parse(&fixed).unwrap();
        assert_eq!(v["a"], "x\u{fffd}");
        assert_eq!(v["b"], "\u{fffd}y");
        assert_eq!(v["c"], "😀");
        assert_eq!(v["d"], "\\ud83d");
    }

    #[test]
    fn skipped_values_may_nest_beyond_the_parsers_recursion_limit() {
        #[derive(serde::Deserialize, Default)]
        struct Rec<'a> {
            #[serde(borrow)]
            keep: Cow<'a, str>,
            #[allow(dead_code)]
            other: Skip,
        }
        let deep = format!("{}1{}", "[{\"a\":".repeat(500), "}]".repeat(500));
        let line = format!(r#"{{"other":{{"x":[1,-2,3.5,true,null,"s\n",{deep}]}},"keep":"k"}}"#);
        let rec: Rec = parse(line.as_bytes()).unwrap();
        assert_eq!(rec.keep, "k");
        // Still a parser: what is not JSON is an error.
        assert!(parse::<Rec>(br#"{"other":[1,],"keep":"k"}"#).is_err());
    }

    #[test]
    fn other_errors_are_not_repaired() {
        let err = parse::<serde_json::Value>(b"{nope").unwrap_err();
        assert!(repair_surrogates(b"{nope", &err).is_none());
    }

    #[test]
    fn trailing_high_surrogates_are_split_off() {
        let (rest, hi) = split_high_surrogate(r#""ab\ud83d""#).unwrap();
        assert_eq!((rest.as_str(), hi.as_str()), (r#""ab""#, r#"\ud83d"#));
        assert!(split_high_surrogate(r#""ab\\ud83d""#).is_none());
        assert!(split_high_surrogate(r#""ab\ude00""#).is_none());
        assert!(split_high_surrogate(r#""plain""#).is_none());
    }

    #[test]
    fn values() {
        let v: &RawValue = serde_json::from_str(r#""a\nb""#).unwrap();
        assert_eq!(text_of(v), "a\nb");
        let v: &RawValue = serde_json::from_str(r#"{"x":1}"#).unwrap();
        assert_eq!(text_of(v), r#"{"x":1}"#);
        assert_eq!(str_of(v), None);
        let n: &RawValue = serde_json::from_str("42").unwrap();
        assert_eq!(u64_of(Some(n)), Some(42));
        assert_eq!(preview(b"ab\xffc"), "ab\u{fffd}c");
        let v: &RawValue = serde_json::from_str(r#""a\ud83d""#).unwrap();
        assert_eq!(text_of(v), "a\u{fffd}");
    }
}

/// Decode the JSON string literal `lit` (quotes included) into `out`,
/// replacing what it held: no allocation once `out` is large enough. Lone
/// surrogate escapes become U+FFFD. False, with `out` unspecified, if `lit`
/// is not a string literal.
pub fn decode_into(lit: &str, out: &mut String) -> bool {
    out.clear();
    let Some(body) = lit.strip_prefix('"').and_then(|l| l.strip_suffix('"')) else {
        return false;
    };
    let b = body.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'\\', &b[i..]) {
        let at = i + off;
        out.push_str(&body[start..at]);
        let Some(&esc) = b.get(at + 1) else {
            return false;
        };
        i = at + 2;
        match esc {
            b'"' => out.push('"'),
            b'\\' => out.push('\\'),
            b'/' => out.push('/'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'u' => {
                let Some(unit) = hex4(&b[i..]) else {
                    return false;
                };
                i += 4;
                let c = match unit {
                    0xD800..=0xDBFF => {
                        let lo = if b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u') {
                            hex4(&b[i + 2..]).filter(|lo| (0xDC00..=0xDFFF).contains(lo))
                        } else {
                            None
                        };
                        match lo {
                            Some(lo) => {
                                i += 6;
                                char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (lo - 0xDC00))
                            }
                            None => None,
                        }
                    }
                    u => char::from_u32(u),
                };
                out.push(c.unwrap_or('\u{fffd}'));
            }
            _ => return false,
        }
        start = i;
    }
    out.push_str(&body[start..]);
    true
}

#[cfg(test)]
mod decode_tests {
    use super::*;

    #[test]
    fn decode_into_matches_serde_json() {
        let mut out = String::from("old");
        for s in ["", "plain", "a\"b\\c/d\u{8}\u{c}\n\r\t", "é☃🚀\u{1}\u{7f}"] {
            let lit = serde_json::to_string(s).unwrap();
            assert!(decode_into(&lit, &mut out));
            assert_eq!(out, s);
        }
        for (lit, want) in [
            (r#""\u00e9\ud83d\ude80\/""#, "é🚀/"),
            (r#""x\ud83dy""#, "x\u{fffd}y"),
            (r#""\ude80""#, "\u{fffd}"),
            (r#""\ud83d""#, "\u{fffd}"),
        ] {
            assert!(decode_into(lit, &mut out));
            assert_eq!(out, want, "{lit}");
        }
        for bad in ["x", r#""\"#, r#""\q""#, r#""\u12""#, "12"] {
            assert!(!decode_into(bad, &mut out), "{bad}");
        }
    }
}
