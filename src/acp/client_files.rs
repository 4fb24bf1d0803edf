//! The client's `fs/read_text_file` and `fs/write_text_file` as the
//! session's [`FileAccess`]: when `initialize` says the client offers
//! them, keel's file tools read a text file as the editor has it (its
//! unsaved buffer) and give their change to the editor, which sees and
//! tracks it (`tools::file_access` owns what goes where and when).
//!
//! Invariants: only what the tools ask is sent, after keel judged the
//! call and checked its path (the client is never asked about a path
//! outside the workspace, a protected or secret one policy refused, a
//! binary file or an image); the client's reply is untrusted data
//! (bounded by the tools); a call fails with the client's message when it
//! answers with an error, when the connection is gone, and when it does
//! not answer within [`CLIENT_FILE_TIMEOUT`], so a silent client costs a
//! turn that long at most, never a hang. Calls come from the tools'
//! blocking threads and wait there; the request itself runs on the
//! connection's runtime.

use std::future::Future;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    FileSystemCapabilities, ReadTextFileRequest, WriteTextFileRequest,
};

use crate::tools::file_access::{FileAccess, LineWindow};

/// How long keel waits for the client to read or write one file.
pub const CLIENT_FILE_TIMEOUT: Duration = Duration::from_secs(30);

/// The session's files as the client has them.
pub struct AcpFiles {
    connection: ConnectionTo<Client>,
    /// The session's id, set once it is open.
    session_id: Arc<OnceLock<String>>,
    runtime: tokio::runtime::Handle,
    offered: FileSystemCapabilities,
}

impl AcpFiles {
    /// The client's files, if it offers reading or writing them.
    pub fn offered(
        connection: ConnectionTo<Client>,
        session_id: Arc<OnceLock<String>>,
        offered: &FileSystemCapabilities,
    ) -> Option<Self> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        (offered.read_text_file || offered.write_text_file).then(|| Self {
            connection,
            session_id,
            runtime,
            offered: offered.clone(),
        })
    }

    fn session(&self) -> Result<String, String> {
        self.session_id.get().cloned().ok_or_else(|| "the session is not open yet".to_owned())
    }
}

impl FileAccess for AcpFiles {
    fn reads(&self) -> bool {
        self.offered.read_text_file
    }

    fn writes(&self) -> bool {
        self.offered.write_text_file
    }

    fn read_text(&self, path: &Path, window: Option<LineWindow>) -> Result<String, String> {
        let mut request = ReadTextFileRequest::new(self.session()?, path);
        if let Some(window) = window {
            request = request.line(window.line).limit(window.limit);
        }
        let connection = self.connection.clone();
        let asked = async move { connection.send_request(request).block_task().await };
        let response = wait(&self.runtime, asked, CLIENT_FILE_TIMEOUT)?;
        Ok(response.content)
    }

    fn write_text(&self, path: &Path, text: &str) -> Result<(), String> {
        let request = WriteTextFileRequest::new(self.session()?, path, text);
        let connection = self.connection.clone();
        let asked = async move { connection.send_request(request).block_task().await };
        wait(&self.runtime, asked, CLIENT_FILE_TIMEOUT).map(|_| ())
    }
}

/// Runs `asked` on `runtime` and waits (on this blocking thread) for its
/// answer, at most `timeout`.
fn wait<T: Send + 'static>(
    runtime: &tokio::runtime::Handle,
    asked: impl Future<Output = Result<T, agent_client_protocol::Error>> + Send + 'static,
    timeout: Duration,
) -> Result<T, String> {
    let (answer, answered) = std::sync::mpsc::channel();
    runtime.spawn(async move {
        let outcome = match tokio::time::timeout(timeout, asked).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(match error.data {
                Some(data) => format!("{} ({data})", error.message),
                None => error.message,
            }),
            Err(_) => Err(format!("the editor did not answer within {timeout:?}")),
        };
        let _ = answer.send(outcome);
    });
    answered.recv().unwrap_or_else(|_| Err("the connection to the editor is gone".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_client_that_never_answers_is_an_error_after_the_timeout() {
        let runtime = tokio::runtime::Handle::current();
        let never = std::future::pending::<Result<(), agent_client_protocol::Error>>();
        let waited =
            tokio::task::spawn_blocking(move || wait(&runtime, never, Duration::from_millis(50)))
                .await
                .unwrap();
        assert_eq!(waited, Err("the editor did not answer within 50ms".to_owned()));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_client_error_is_its_message() {
        let runtime = tokio::runtime::Handle::current();
        let refused = async {
            Err::<(), _>(agent_client_protocol::Error::internal_error().data("no such buffer"))
        };
        let waited =
            tokio::task::spawn_blocking(move || wait(&runtime, refused, Duration::from_secs(5)))
                .await
                .unwrap();
        let message = waited.unwrap_err();
        assert!(message.contains("no such buffer"), "{message}");
    }
}
