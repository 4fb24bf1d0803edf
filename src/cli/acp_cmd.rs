//! `keel acp`: serve the Agent Client Protocol on stdio for an editor
//! (`crate::acp`). The mode flags and model flags apply to every session
//! the editor opens; each session's folder is its own configuration's.

use super::{CliError, ModeArgs, ModelArgs};
use crate::acp::AcpOptions;
use crate::config::Environment;
use crate::exit::ExitStatus;

pub(super) async fn run(model: &ModelArgs, mode: &ModeArgs) -> Result<ExitStatus, CliError> {
    let env = Environment::from_process()?;
    let options = AcpOptions {
        env,
        overrides: model.overrides(),
        mode: mode.approval(),
        date: super::today(),
    };
    crate::acp::serve(options).await.map_err(CliError::runtime)?;
    Ok(ExitStatus::Done)
}
