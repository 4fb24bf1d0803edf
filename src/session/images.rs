//! The image store: each image a session's log references, stored once by
//! the SHA-256 of its bytes under `$KEEL_HOME/sessions/images/` as
//! `<sha256>.<ext>`, so a log line holds a reference (`protocol::ImagePart`)
//! and never the bytes, and a resume reads them back.
//!
//! Invariants: files are created 0600 in a 0700 folder, written to a
//! temporary name and renamed into place (a reader never sees half an
//! image); an image already stored is not written again; what is read back
//! must hash to its name, else it is reported missing (the request then
//! tells the model the image is gone, `llm::image_parts`). Shared by every
//! session of a KEEL_HOME: content addressing makes a copy per session
//! pointless, and a forked or resumed session finds its parent's images.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::protocol::{ImageData, ImagePart};
use crate::support::images::sha256_hex;

/// Why an image could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum ImageStoreError {
    #[error("cannot store the image in {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("the image {sha256} has no bytes loaded to store")]
    NotLoaded { sha256: String },
}

/// The store under one KEEL_HOME.
#[derive(Debug, Clone)]
pub struct ImageStore {
    dir: PathBuf,
}

impl ImageStore {
    /// The store of the sessions folder `sessions_dir`.
    pub fn new(sessions_dir: &Path) -> Self {
        Self { dir: sessions_dir.join("images") }
    }

    fn path_of(&self, part: &ImagePart) -> Option<PathBuf> {
        // The name comes from a log line: only a hash is a file name.
        let hex = part.sha256.len() == 64 && part.sha256.bytes().all(|b| b.is_ascii_hexdigit());
        hex.then(|| self.dir.join(format!("{}.{}", part.sha256, part.media_type.extension())))
    }

    /// Stores the bytes of `part` unless they are there already.
    pub fn put(&self, part: &ImagePart) -> Result<(), ImageStoreError> {
        let not_loaded = || ImageStoreError::NotLoaded { sha256: part.sha256.clone() };
        let bytes = part.data.bytes().ok_or_else(not_loaded)?;
        let path = self.path_of(part).ok_or_else(not_loaded)?;
        if path.is_file() {
            return Ok(());
        }
        let write = |path: &Path| -> std::io::Result<()> {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
            let temp = self.dir.join(format!(".{}.{}.tmp", part.sha256, std::process::id()));
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&temp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            std::fs::rename(&temp, path)
        };
        write(&path).map_err(|source| ImageStoreError::Write { path, source })
    }

    /// The bytes of `part`, if stored and intact.
    pub fn load(&self, part: &ImagePart) -> Option<ImageData> {
        let bytes = std::fs::read(self.path_of(part)?).ok()?;
        (sha256_hex(&bytes) == part.sha256).then(|| ImageData::new(bytes))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::support::images::{prepare, test_png};

    #[test]
    fn stored_once_private_and_read_back_by_hash() {
        let home = tempfile::tempdir().unwrap();
        let store = ImageStore::new(home.path());
        let part = prepare(&test_png(8, 8), "a.png").unwrap();
        store.put(&part).unwrap();
        store.put(&part).unwrap();
        let files: Vec<_> = std::fs::read_dir(home.path().join("images")).unwrap().collect();
        assert_eq!(files.len(), 1);
        let path = files[0].as_ref().unwrap().path();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let mut reference = part.clone();
        reference.data = ImageData::default();
        assert_eq!(store.load(&reference).unwrap().bytes(), part.data.bytes());
    }

    #[test]
    fn a_changed_or_strange_reference_loads_nothing() {
        let home = tempfile::tempdir().unwrap();
        let store = ImageStore::new(home.path());
        let part = prepare(&test_png(8, 8), "a.png").unwrap();
        store.put(&part).unwrap();
        let path = store.path_of(&part).unwrap();
        std::fs::write(&path, b"changed").unwrap();
        assert!(store.load(&part).is_none());
        let mut strange = part.clone();
        strange.sha256 = "../../etc/passwd".into();
        assert!(store.load(&strange).is_none());
        assert!(store.put(&strange).is_err());
    }
}
