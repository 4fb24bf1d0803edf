//! Fuzz target for the SSE path: real-shaped streams of the
//! three protocols, mutated (bytes cut, repeated, inserted, flipped, line
//! ends changed), cut into two chunks anywhere, through the decoder and
//! each protocol's assembler. Nothing panics, and the events do not depend
//! on where the body was cut. (The client's one-`result` guarantee over
//! such streams is tested through the real binary in `tests/suite`.)
//!
//! Runs `PROPTEST_CASES` cases (256 by default); `PROPTEST_CASES=100000
//! cargo test --lib fuzz_` runs every fuzz target longer (README).

use proptest::prelude::*;

use super::ProviderKind;
use super::assembler::Assembler;
use super::sse::decode_chunks;
use super::test_support::{anthropic_stream, chat_stream, responses_stream};
use crate::protocol::StreamEvent;

/// One edit of a stream's bytes.
#[derive(Debug, Clone)]
enum Mutation {
    Cut(prop::sample::Index, usize),
    Repeat(prop::sample::Index, usize),
    Insert(prop::sample::Index, Vec<u8>),
    Flip(prop::sample::Index, u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let bytes = prop_oneof![
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n\r\n".to_vec()),
        Just(b"data: ".to_vec()),
        Just(b"event: error\n".to_vec()),
        Just(b":keep-alive\n\n".to_vec()),
        Just(b"data: [DONE]\n\n".to_vec()),
        Just(b"\xEF\xBB\xBF".to_vec()),
        prop::collection::vec(any::<u8>(), 0..8),
    ];
    prop_oneof![
        (any::<prop::sample::Index>(), 1usize..64).prop_map(|(at, n)| Mutation::Cut(at, n)),
        (any::<prop::sample::Index>(), 1usize..64).prop_map(|(at, n)| Mutation::Repeat(at, n)),
        (any::<prop::sample::Index>(), bytes).prop_map(|(at, b)| Mutation::Insert(at, b)),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(at, b)| Mutation::Flip(at, b)),
    ]
}

fn apply(mut body: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for mutation in mutations {
        let len = body.len().max(1);
        match mutation {
            Mutation::Cut(at, n) => {
                let at = at.index(len).min(body.len());
                let end = (at + n).min(body.len());
                body.drain(at..end);
            }
            Mutation::Repeat(at, n) => {
                let at = at.index(len).min(body.len());
                let end = (at + n).min(body.len());
                let copy = body[at..end].to_vec();
                body.splice(at..at, copy);
            }
            Mutation::Insert(at, bytes) => {
                let at = at.index(len).min(body.len());
                body.splice(at..at, bytes.iter().copied());
            }
            Mutation::Flip(at, byte) => {
                if !body.is_empty() {
                    let at = at.index(body.len());
                    body[at] ^= byte;
                }
            }
        }
    }
    body
}

proptest! {
    #[test]
    fn fuzz_mutated_streams_never_panic_and_ignore_chunking(
        protocol in 0usize..3,
        mutations in prop::collection::vec(mutation(), 0..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let (kind, stream) = match protocol {
            0 => (ProviderKind::OpenAiResponses, responses_stream()),
            1 => (ProviderKind::OpenAiChat, chat_stream()),
            _ => (ProviderKind::Anthropic, anthropic_stream()),
        };
        let body = apply(stream.into_bytes(), &mutations);
        let cut = cut.index(body.len() + 1);
        let whole = decode_chunks([&body[..]]);
        prop_assert_eq!(&decode_chunks([&body[..cut], &body[cut..]]), &whole);
        let mut assembler = Assembler::new(kind);
        let mut sink = |_: StreamEvent| {};
        if assembler.feed_events(whole, true, &mut sink).is_ok() {
            let _ = assembler.finish();
        }
    }
}
