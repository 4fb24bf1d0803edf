//! The working directory through a script: `cd sub && rm -rf x` removes
//! `sub/x`, so every command and redirection carries the folders it may
//! run in ([`Dirs`]), and path judgments (hard deny, protected paths) are
//! made in each of them.
//!
//! Invariants: pure and lexical (nothing is read from disk). The set of
//! candidates is conservative: a `cd` that may fail (anything but the left
//! side of `&&`) leaves the old folder possible, so both are judged; a `cd`
//! whose target keel cannot know (`cd "$X"`, `cd -`, `popd`, a substitution)
//! adds [`Dir::Unknown`], and a command that may run in an unknown folder
//! and could change something is never allowed automatically
//! (`engine.rs`). `cd` inside a subshell, pipeline or substitution does not
//! leak out of it (`shell.rs` saves and restores). The set is bounded by
//! [`MAX_CANDIDATES`]; past it, `Unknown` stands for the rest.

use super::paths::PathContext;

/// How many folders are tracked before the rest collapse into `Unknown`.
pub const MAX_CANDIDATES: usize = 8;

/// One folder a command may run in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dir {
    /// A path word relative to the script's start folder (`""` is the
    /// start itself); absolute and `~` words stand on their own.
    Known(String),
    /// A `cd` keel cannot follow.
    Unknown,
}

/// The folders a command may run in; never empty.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Dirs(Vec<Dir>);

impl Default for Dirs {
    fn default() -> Self {
        Self(vec![Dir::Known(String::new())])
    }
}

impl Dirs {
    /// Only the start folder (no `cd` before the command).
    pub fn is_start(&self) -> bool {
        self.0 == [Dir::Known(String::new())]
    }

    /// Some `cd` before the command cannot be followed.
    pub fn has_unknown(&self) -> bool {
        self.0.contains(&Dir::Unknown)
    }

    /// The path context of every known folder (the start folder is `ctx`
    /// itself).
    pub fn contexts(&self, ctx: &PathContext) -> Vec<PathContext> {
        self.0
            .iter()
            .filter_map(|dir| match dir {
                Dir::Known(word) if word.is_empty() => Some(ctx.clone()),
                Dir::Known(word) => Some(PathContext { cwd: ctx.resolve(word), ..ctx.clone() }),
                Dir::Unknown => None,
            })
            .collect()
    }

    /// Adds `other`'s folders (a `cd` that may or may not have happened).
    pub fn union(&mut self, other: &Dirs) {
        for dir in &other.0 {
            self.push(dir.clone());
        }
    }

    fn push(&mut self, dir: Dir) {
        if self.0.contains(&dir) {
            return;
        }
        if self.0.len() >= MAX_CANDIDATES && dir != Dir::Unknown {
            self.push(Dir::Unknown);
            return;
        }
        self.0.push(dir);
    }

    /// Where a successful `cd` to `target` leads from each folder.
    pub fn after_cd(&self, target: &CdTarget) -> Dirs {
        let mut next = Dirs(Vec::new());
        for dir in &self.0 {
            next.push(match (dir, target) {
                (Dir::Unknown, _) | (_, CdTarget::Unknown) => Dir::Unknown,
                (Dir::Known(_), CdTarget::Home) => Dir::Known("~".to_owned()),
                (Dir::Known(base), CdTarget::Word(word)) => Dir::Known(join(base, word)),
            });
        }
        next
    }
}

/// Where a `cd` goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CdTarget {
    Word(String),
    Home,
    Unknown,
}

/// The target of `argv` when it changes the shell's folder (`cd`,
/// `pushd`, `popd`), else `None`. `dynamic`: some word came from an
/// expansion.
pub fn cd_target(argv: &[String], dynamic: bool) -> Option<CdTarget> {
    let mut words = argv.iter().skip_while(|word| is_assignment(word));
    let program = words.next()?;
    let args: Vec<&String> =
        words.filter(|word| !matches!(word.as_str(), "-P" | "-L" | "-e" | "--")).collect();
    match program.as_str() {
        "cd" | "pushd" => Some(match args.first() {
            _ if dynamic => CdTarget::Unknown,
            None => CdTarget::Home,
            Some(word) if word.as_str() == "-" || word.starts_with('+') => CdTarget::Unknown,
            Some(word) => CdTarget::Word((*word).clone()),
        }),
        "popd" => Some(CdTarget::Unknown),
        _ => None,
    }
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `word` taken from folder `base` (both as written in the script).
fn join(base: &str, word: &str) -> String {
    let standalone = word.starts_with('/') || word.starts_with('~') || word.starts_with("$HOME");
    if standalone || base.is_empty() { word.to_owned() } else { format!("{base}/{word}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn cd_targets() {
        assert_eq!(cd_target(&argv("cd sub"), false), Some(CdTarget::Word("sub".into())));
        assert_eq!(cd_target(&argv("cd -P .."), false), Some(CdTarget::Word("..".into())));
        assert_eq!(cd_target(&argv("cd"), false), Some(CdTarget::Home));
        assert_eq!(cd_target(&argv("cd -"), false), Some(CdTarget::Unknown));
        assert_eq!(cd_target(&argv("cd $X"), true), Some(CdTarget::Unknown));
        assert_eq!(cd_target(&argv("popd"), false), Some(CdTarget::Unknown));
        assert_eq!(cd_target(&argv("ls sub"), false), None);
    }

    #[test]
    fn folders_join_and_stay_bounded() {
        let ctx = PathContext::new("/home/u", "/home/u/ws", "/home/u/ws");
        let sub = Dirs::default().after_cd(&CdTarget::Word("a".into()));
        let deeper = sub.after_cd(&CdTarget::Word("../b".into()));
        let cwds: Vec<_> = deeper.contexts(&ctx).into_iter().map(|c| c.cwd).collect();
        assert_eq!(cwds, [std::path::PathBuf::from("/home/u/ws/b")]);
        let home = sub.after_cd(&CdTarget::Home).contexts(&ctx);
        assert_eq!(home[0].cwd, std::path::PathBuf::from("/home/u"));
        let mut many = Dirs::default();
        for i in 0..20 {
            let next = many.after_cd(&CdTarget::Word(format!("d{i}")));
            many.union(&next);
        }
        assert!(many.has_unknown());
        assert!(many.0.len() <= MAX_CANDIDATES + 1);
    }
}
