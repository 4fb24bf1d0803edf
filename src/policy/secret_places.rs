//! Where credentials live: the folders and files common tools keep their
//! logins in (`~/.ssh`, `~/.aws`, `~/.docker/config.json`, `~/.kube`, …),
//! the folders the user adds with `[secrets] paths = [...]`, and keel's own
//! home (its config and logs). A command that reads the contents of one of
//! these (`cat ~/.aws/credentials`, `cd ~/.aws && cat credentials`) or
//! walks a folder holding one (`grep -r . ~`, `rg KEY ~/.ssh`) is not run
//! without asking (`script_verdict`), and `read_file`/`grep` refuse them
//! (`hooks::protect_secrets`). Listing names (`ls ~/.ssh`, `du`, `stat`)
//! reads no contents and stays free.
//!
//! Invariants: pure (paths only, nothing is read); [`CREDENTIAL_STORES`]
//! is the one list of built-in stores, each relative to home; a place that
//! is home, `/` or holds the workspace is never added (it would make every
//! read ask), so a user entry cannot turn the list into "everything".

use std::path::{Path, PathBuf};

use super::paths::normalize;
use super::words::{glob_matches, has_glob};

/// Credential stores under the home folder, with what each holds; a
/// trailing `/` marks a folder.
pub const CREDENTIAL_STORES: [(&str, &str); 24] = [
    (".ssh/", "ssh keys"),
    (".gnupg/", "gpg keys"),
    (".aws/", "AWS CLI credentials"),
    (".azure/", "Azure CLI tokens"),
    (".config/gcloud/", "Google Cloud CLI credentials"),
    (".oci/", "Oracle Cloud CLI keys"),
    (".docker/config.json", "docker registry logins"),
    (".kube/", "Kubernetes cluster credentials"),
    (".config/gh/", "GitHub CLI tokens"),
    (".config/hub/", "hub's GitHub tokens"),
    (".config/glab-cli/", "GitLab CLI tokens"),
    (".npmrc", "npm registry tokens"),
    (".yarnrc.yml", "yarn registry tokens"),
    (".pypirc", "Python package index passwords"),
    (".config/pip/", "pip index credentials"),
    (".cargo/credentials.toml", "cargo registry tokens"),
    (".cargo/credentials", "cargo registry tokens"),
    (".netrc", "passwords for hosts"),
    (".git-credentials", "git's stored passwords"),
    (".config/git/credentials", "git's stored passwords"),
    (".pgpass", "PostgreSQL passwords"),
    (".terraform.d/credentials.tfrc.json", "Terraform tokens"),
    (".vault-token", "a Vault token"),
    (".password-store/", "pass's password store"),
];

/// One folder or file that holds credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretPlace {
    pub path: PathBuf,
    /// What it holds, for reasons ("AWS CLI credentials").
    pub what: String,
    /// A folder (listing it reads no secret), not a file.
    pub folder: bool,
}

/// Every place of a session's secrets (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SecretPlaces {
    places: Vec<SecretPlace>,
}

impl SecretPlaces {
    /// The built-in credential stores of `home`.
    pub fn for_home(home: &Path) -> Self {
        let mut places = Self::default();
        if home.as_os_str().is_empty() {
            return places;
        }
        for (rel, what) in CREDENTIAL_STORES {
            let folder = rel.ends_with('/');
            let path = home.join(rel.trim_end_matches('/'));
            places.places.push(SecretPlace { path, what: what.to_owned(), folder });
        }
        places
    }

    /// Adds `path` (absolute; a trailing `/` marks a folder), unless it is
    /// `/`, `home` or a folder that holds `workspace` (module doc). Returns
    /// whether it was added.
    pub fn add(&mut self, path: &Path, what: &str, home: &Path, workspace: &Path) -> bool {
        let folder = path.as_os_str().to_string_lossy().ends_with('/');
        if !path.is_absolute() {
            return false;
        }
        let path = normalize(path);
        let too_wide =
            path == Path::new("/") || path == normalize(home) || workspace.starts_with(&path);
        if too_wide || self.places.iter().any(|p| p.path == path) {
            return false;
        }
        self.places.push(SecretPlace { path, what: what.to_owned(), folder });
        true
    }

    /// Every place's path.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.places.iter().map(|place| place.path.as_path())
    }

    /// The place `path` is or lies in.
    pub fn holding(&self, path: &Path) -> Option<&SecretPlace> {
        self.places.iter().find(|place| path.starts_with(&place.path))
    }

    /// A place `folder` holds, or the place `folder` lies in: what walking
    /// `folder` recursively may read.
    pub fn reached_from(&self, folder: &Path) -> Option<&SecretPlace> {
        self.holding(folder).or_else(|| self.places.iter().find(|p| p.path.starts_with(folder)))
    }

    /// The place a path word reaches: it names one or a path inside one,
    /// or, when `walks`, a folder holding one. Components may be globs
    /// (`~/.a*/c*` reaches `~/.aws`); a glob matches one component, so
    /// `cat *` in a folder does not reach a place two levels down.
    pub fn reached_by(&self, pattern: &Path, walks: bool) -> Option<&SecretPlace> {
        let parts: Vec<String> =
            pattern.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        self.places.iter().find(|place| {
            let names: Vec<_> = place.path.components().map(|c| c.as_os_str().to_owned()).collect();
            let shared = parts.len().min(names.len());
            (walks || parts.len() >= names.len())
                && parts.iter().zip(&names).take(shared).all(|(part, name)| {
                    let name = name.to_string_lossy();
                    if has_glob(part) { glob_matches(part, &name) } else { *part == name }
                })
        })
    }

    /// The place a word naming `path` names: `path` lies in a place and
    /// is not a place folder itself (naming `~/.ssh` lists it, naming
    /// `~/.ssh/config` or `~/.npmrc` is naming a secret).
    pub fn named_by(&self, path: &Path) -> Option<&SecretPlace> {
        self.holding(path).filter(|place| !(place.folder && place.path == path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_under_home_and_what_walks_reach_them() {
        let places = SecretPlaces::for_home(Path::new("/home/u"));
        let aws = places.holding(Path::new("/home/u/.aws/credentials")).map(|p| &p.path);
        assert_eq!(aws, Some(&PathBuf::from("/home/u/.aws")));
        assert!(places.holding(Path::new("/home/u/.docker/config.json")).is_some());
        assert!(places.holding(Path::new("/home/u/.docker/cli-plugins")).is_none());
        assert!(places.holding(Path::new("/home/u/project/.aws-notes")).is_none());
        assert!(places.reached_from(Path::new("/home/u")).is_some());
        assert!(places.reached_from(Path::new("/home")).is_some());
        assert!(places.reached_from(Path::new("/home/u/project")).is_none());
        let reach = |pattern: &str, walks| places.reached_by(Path::new(pattern), walks).is_some();
        assert!(reach("/home/u/.a*/c*", false));
        assert!(reach("/home/u/.ssh/id_*", false));
        assert!(reach("/home/u/.aws/credentials", false));
        assert!(reach("/home/u/.aws", false));
        assert!(reach("/home/u", true));
        assert!(!reach("/home/u", false));
        assert!(!reach("/home/*", false));
        assert!(reach("/home/*", true));
        assert!(!reach("/home/u/src/*.rs", false));
    }

    #[test]
    fn a_place_too_wide_is_not_added() {
        let (home, ws) = (Path::new("/home/u"), Path::new("/home/u/work/app"));
        let mut places = SecretPlaces::default();
        assert!(!places.add(Path::new("/"), "x", home, ws));
        assert!(!places.add(Path::new("/home/u/"), "x", home, ws));
        assert!(!places.add(Path::new("/home/u/work"), "x", home, ws));
        assert!(!places.add(Path::new("relative"), "x", home, ws));
        assert!(places.add(Path::new("/home/u/.config/vendor"), "x", home, ws));
        assert!(places.holding(Path::new("/home/u/.config/vendor/token")).is_some());
    }
}
