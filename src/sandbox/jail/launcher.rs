//! Which binary runs the jail's stages: `keel-jail` (`src/jail_main.rs`)
//! when it is installed beside keel, else keel itself (`keel
//! sandbox-exec`). Both take the same arguments
//! ([`Confinement::launcher_args`]) and run the same code, so the choice
//! changes only what each sandboxed command costs: two `exec`s of a small
//! binary instead of two of keel's.
//!
//! Invariants: the small launcher is only taken when it is as trusted as
//! keel itself (a regular executable file, not a symlink, with keel's
//! owner, writable by no one else), and only once it answered the
//! session's probe: a stale or broken `keel-jail` that cannot say the
//! layers leaves keel as the launcher, so a session never loses its jail
//! to a bad install.

use std::path::{Path, PathBuf};

use super::layers::Layers;
use crate::sandbox::confinement::{Confinement, probe};

/// The small launcher's file name, beside keel's.
pub const JAIL_BINARY: &str = "keel-jail";

/// The launchers to try for keel at `keel`, best first: the small one
/// beside it when it qualifies (see the module doc), then keel.
pub fn candidates(keel: &Path) -> Vec<PathBuf> {
    let small = keel.parent().map(|dir| dir.join(JAIL_BINARY));
    small
        .filter(|small| small.as_path() != keel && as_trusted_as(small, keel))
        .into_iter()
        .chain(std::iter::once(keel.to_path_buf()))
        .collect()
}

/// Probes the layers through each of [`candidates`] in turn and leaves
/// the first that answered as `confinement.launcher` (keel when none
/// did); its answer, `None` when no launcher answered.
pub fn probe_first(confinement: &mut Confinement, keel: &Path) -> Option<Layers> {
    for launcher in candidates(keel) {
        confinement.launcher = launcher;
        if let Some(layers) = probe(confinement) {
            return Some(layers);
        }
    }
    confinement.launcher = keel.to_path_buf();
    None
}

/// Whether `small` may stand in for keel at `keel`: a regular file (a
/// symlink is not followed), executable, owned by keel's owner and
/// writable by neither group nor others.
fn as_trusted_as(small: &Path, keel: &Path) -> bool {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let (Ok(small), Ok(keel)) = (std::fs::symlink_metadata(small), std::fs::metadata(keel)) else {
        return false;
    };
    let mode = small.permissions().mode();
    small.file_type().is_file()
        && small.uid() == keel.uid()
        && mode & 0o111 != 0
        && mode & 0o022 == 0
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn file(path: &Path, mode: u32) {
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_small_launcher_beside_keel_comes_first() {
        let dir = tempfile::tempdir().unwrap();
        let keel = dir.path().join("keel");
        file(&keel, 0o755);
        file(&dir.path().join(JAIL_BINARY), 0o755);
        assert_eq!(candidates(&keel), [dir.path().join(JAIL_BINARY), keel]);
    }

    #[test]
    fn without_it_keel_is_the_launcher() {
        let dir = tempfile::tempdir().unwrap();
        let keel = dir.path().join("keel");
        file(&keel, 0o755);
        assert_eq!(candidates(&keel), [keel]);
    }

    #[test]
    fn a_writable_symlinked_or_plain_file_is_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let keel = dir.path().join("keel");
        file(&keel, 0o755);
        let small = dir.path().join(JAIL_BINARY);
        for mode in [0o775, 0o757, 0o644] {
            file(&small, mode);
            assert_eq!(candidates(&keel), std::slice::from_ref(&keel), "mode {mode:o}");
        }
        std::fs::remove_file(&small).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        file(&elsewhere, 0o755);
        std::os::unix::fs::symlink(&elsewhere, &small).unwrap();
        assert_eq!(candidates(&keel), [keel]);
    }

    #[test]
    fn a_launcher_that_does_not_answer_the_probe_leaves_keel() {
        let dir = tempfile::tempdir().unwrap();
        let keel = dir.path().join("keel");
        // Both print nothing: no layers, keel stays the launcher.
        file(&keel, 0o755);
        file(&dir.path().join(JAIL_BINARY), 0o755);
        let mut confinement = Confinement {
            launcher: PathBuf::new(),
            mode: crate::sandbox::confinement::SandboxMode::ReadOnly,
            workspace_roots: vec![dir.path().to_path_buf()],
            extra_roots: Vec::new(),
            read_only: Vec::new(),
            network: crate::sandbox::confinement::NetworkMode::Off,
            bridges: crate::sandbox::netproxy::Bridges::default(),
            required: false,
            protect_vcs: false,
            git_write: false,
            max_pids: 64,
            shared_network: None,
            hidden: Vec::new(),
        };
        assert!(probe_first(&mut confinement, &keel).is_none());
        assert_eq!(confinement.launcher, keel);
    }
}
