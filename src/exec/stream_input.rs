//! `keel exec --input-stream`: more prompts on stdin while the run goes on.
//!
//! Each stdin line is one JSON object:
//! `{"type":"user","text":"…","deliver":"queue"|"steer"}`. `queue` (the
//! default) runs the text as a turn of its own after the running one, in
//! the order received; `steer` hands it to the running turn, delivered
//! after the current tool batch as a user message (with no turn running,
//! it starts the next one like `queue`). Blank lines are skipped; a line
//! that is not such an object is reported on stderr and skipped (a script
//! sees it did not count). Both kinds are logged when read
//! (`input_queued`) and delivered once; a resume delivers what a crash
//! left undelivered.
//!
//! Invariants: stdin is read only by the task [`spawn`] starts, and what
//! it reads reaches the session only through its inbox
//! (`runtime::InputSender`); the run ends once stdin is at EOF, every
//! input read has run and no turn runs (`exec::run_turns`).

use std::io::Write;

use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::protocol::Delivery;
use crate::runtime::InputSender;

/// One line of the stream.
#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum StreamLine {
    User {
        text: String,
        #[serde(default = "queue")]
        deliver: Delivery,
    },
}

fn queue() -> Delivery {
    Delivery::Queue
}

/// What one line asks, or why it is skipped; `None` for a blank line.
fn parse(line: &str) -> Option<Result<(String, Delivery), String>> {
    if line.trim().is_empty() {
        return None;
    }
    Some(match serde_json::from_str::<StreamLine>(line) {
        Ok(StreamLine::User { text, .. }) if text.trim().is_empty() => {
            Err("the input's text is empty".to_owned())
        }
        Ok(StreamLine::User { text, deliver }) => Ok((text, deliver)),
        Err(error) => Err(format!(
            "not an input line ({error}); expected {{\"type\":\"user\",\"text\":\"…\",\
             \"deliver\":\"queue\"|\"steer\"}}"
        )),
    })
}

/// Reads stdin line by line into `sender` until EOF (then the sender is
/// dropped, which ends the session's wait for more).
pub fn spawn(sender: InputSender) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        let mut number = 0u64;
        loop {
            let line = match lines.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => return,
                Err(error) => {
                    let _ = writeln!(std::io::stderr().lock(), "keel: cannot read stdin: {error}");
                    return;
                }
            };
            number += 1;
            let delivered = match parse(&line) {
                None => true,
                Some(Ok((text, mode))) => sender.send(text, mode),
                Some(Err(why)) => {
                    let _ = writeln!(
                        std::io::stderr().lock(),
                        "keel: --input-stream line {number} skipped: {why}"
                    );
                    true
                }
            };
            if !delivered {
                // The session is gone: nothing more is read.
                return;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_their_delivery_and_default_to_the_queue() {
        assert_eq!(
            parse(r#"{"type":"user","text":"go on","deliver":"steer"}"#),
            Some(Ok(("go on".into(), Delivery::Steer)))
        );
        assert_eq!(
            parse(r#"{"type":"user","text":"next"}"#),
            Some(Ok(("next".into(), Delivery::Queue)))
        );
        assert_eq!(parse("   "), None);
        for bad in [
            "plain words",
            r#"{"type":"user"}"#,
            r#"{"type":"user","text":"x","deliver":"later"}"#,
            r#"{"type":"user","text":"  "}"#,
            r#"{"type":"other","text":"x"}"#,
        ] {
            assert!(matches!(parse(bad), Some(Err(_))), "{bad}");
        }
    }
}
