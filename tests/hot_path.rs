//! The hot path (streamed text deltas) allocates nothing per line: measured
//! with a counting allocator around a translator fed one delta at a time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use agui_translate::agui::{Emitter, Format};
use agui_translate::source::{for_dialect, Dialect};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made while translating `deltas` after `setup`.
fn allocations(dialect: Dialect, setup: &[&str], deltas: &[String]) -> u64 {
    let mut em = Emitter::new(Format::Ndjson, None, None);
    let mut tr = for_dialect(dialect).unwrap();
    let mut sink = std::io::sink();
    for line in setup {
        tr.line(&mut line.as_bytes().to_vec(), &mut em).unwrap();
    }
    em.drain_to(&mut sink).unwrap();
    let mut lines: Vec<Vec<u8>> = deltas.iter().map(|d| d.as_bytes().to_vec()).collect();
    // Warm up: the first delta may size buffers once.
    tr.line(&mut lines[0], &mut em).unwrap();
    em.drain_to(&mut sink).unwrap();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for line in &mut lines[1..] {
        tr.line(line, &mut em).unwrap();
        em.drain_to(&mut sink).unwrap();
    }
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

#[test]
fn claude_text_deltas_allocate_nothing() {
    let setup = [
        r#"{"type":"system","subtype":"init","session_id":"s","model":"m","uuid":"u"}"#,
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","content":[]}},"parent_tool_use_id":null,"session_id":"s","uuid":"u"}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},"parent_tool_use_id":null,"session_id":"s","uuid":"u"}"#,
    ];
    let deltas: Vec<String> = (0..500)
        .map(|i| {
            format!(
                r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"word {i} with \"quotes\" and \n"}}}},"parent_tool_use_id":null,"session_id":"s","uuid":"u-{i}"}}"#
            )
        })
        .collect();
    assert_eq!(
        allocations(Dialect::named("claude").unwrap(), &setup, &deltas),
        0
    );
}
