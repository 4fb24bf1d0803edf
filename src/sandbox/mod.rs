//! Process execution: the only module that spawns processes. Runs a shell
//! command with a timeout, an output cap and cancellation; the policy issue
//! adds landlock confinement here.
