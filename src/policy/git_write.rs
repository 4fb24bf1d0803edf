//! Which shell commands are recognised git commands that may write the
//! repository's `.git` (issue 31): one simple command `git SUBCOMMAND
//! ARGS…` of [`SUBCOMMANDS`], written plainly (no compound line, no
//! redirection, no expansion, no variable set for it, no wrapper, no
//! global option before the subcommand) and without an option that makes
//! git run another program ([`runs_a_program`]).
//!
//! Invariants: pure (the shell parser gives the argv); what is
//! recognised is only the argv the sandbox then runs itself, with `.git`
//! writable except what makes git run programs (`sandbox::git_write`);
//! everything not recognised runs as any other command, `.git` read-only.
//! Recognising a command never allows it: policy judges the call as
//! before (`git push`, `git config`, `git remote add` ask).

use super::git::{commands_run, subcommand};
use super::shell::analyze_script;

/// The subcommands whose writes to `.git` a recognised command may make.
pub const SUBCOMMANDS: [&str; 15] = [
    "add",
    "commit",
    "checkout",
    "switch",
    "branch",
    "stash",
    "restore",
    "rm",
    "mv",
    "tag",
    "merge",
    "rebase",
    "cherry-pick",
    "revert",
    "reset",
];

/// The merge strategies built into git (`-s NAME` of another runs the
/// program `git-merge-NAME`).
const BUILTIN_STRATEGIES: [&str; 6] = ["ort", "recursive", "resolve", "octopus", "ours", "subtree"];

/// The argv of `script` when it is a recognised git command (see the
/// module doc), else `None`.
pub fn recognise(script: &str) -> Option<Vec<String>> {
    let parsed = analyze_script(script);
    let [command] = parsed.commands.as_slice() else { return None };
    let plain_script = parsed.hidden.is_empty()
        && parsed.blind.is_empty()
        && parsed.writes.is_empty()
        && parsed.reads.is_empty()
        && parsed.links.is_empty()
        && !parsed.fork_bomb;
    let plain_command = !command.dynamic
        && !command.privileged
        && !command.sensitive_env
        && !command.env_assigned
        && command.wrapper.is_none()
        && !command.stdin_args
        && command.origin.is_none();
    if !plain_script || !plain_command {
        return None;
    }
    let (program, args) = command.argv.split_first()?;
    // `git` itself, written first (`./git` is another program; a wrapper
    // such as `env -u HOME git …` would run it otherwise than the sandbox
    // does).
    let written_first = script.split_whitespace().next() == Some("git");
    if program != "git" || !written_first {
        return None;
    }
    // The subcommand first: no global option (`-c`, `-C`, `--git-dir`…).
    let (0, sub) = subcommand(args)? else { return None };
    let rest = &args[1..];
    let next = |at: usize| rest.get(at + 1).map(String::as_str);
    if !SUBCOMMANDS.contains(&sub)
        || rest.iter().enumerate().any(|(at, arg)| runs_a_program(sub, arg, next(at)))
    {
        return None;
    }
    let runs = commands_run(args);
    (runs.scripts.is_empty() && runs.blind.is_empty() && !runs.exec_config)
        .then(|| command.argv.clone())
}

/// Whether `arg` of `git SUB` (followed by `next`) makes git run another
/// program (or change its configuration): `rebase -x/--exec`,
/// `-c`/`--config-env`, a pack program, a merge strategy that is not
/// built in.
fn runs_a_program(sub: &str, arg: &str, next: Option<&str>) -> bool {
    let everywhere = arg == "-c"
        || ["--config-env", "--exec", "--upload-pack", "--receive-pack", "--ext-diff"]
            .iter()
            .any(|option| arg == *option || arg.starts_with(&format!("{option}=")));
    let exec =
        sub == "rebase" && (arg == "-x" || (arg.starts_with("-x") && !arg.starts_with("--")));
    let merges = matches!(sub, "merge" | "rebase" | "cherry-pick" | "revert");
    let named = match arg {
        "-s" | "--strategy" => Some(next.unwrap_or_default()),
        _ => strategy_of(arg),
    };
    let strategy = merges && named.is_some_and(|name| !BUILTIN_STRATEGIES.contains(&name));
    everywhere || exec || strategy
}

/// The strategy an `-sNAME` or `--strategy=NAME` word names.
fn strategy_of(arg: &str) -> Option<&str> {
    arg.strip_prefix("--strategy=").or_else(|| {
        arg.strip_prefix("-s").filter(|name| !name.is_empty() && !name.starts_with('-'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! recognised {
        ($($name:ident: $script:expr => $argv:expr;)*) => {$(
            #[test]
            fn $name() {
                let argv: Option<Vec<&str>> = $argv;
                let found = recognise($script);
                assert_eq!(
                    found.as_ref().map(|argv| argv.iter().map(String::as_str).collect::<Vec<_>>()),
                    argv,
                    "{}",
                    $script
                );
            }
        )*};
    }

    recognised! {
        checkout_b: "git checkout -b fix" => Some(vec!["git", "checkout", "-b", "fix"]);
        commit_am: "git commit -am 'fix the typo'" => Some(vec!["git", "commit", "-am", "fix the typo"]);
        add_all: "git add -A" => Some(vec!["git", "add", "-A"]);
        add_update: "git add -u" => Some(vec!["git", "add", "-u"]);
        stash_pop: "git stash pop" => Some(vec!["git", "stash", "pop"]);
        commit_signoff: "git commit -s -m x" => Some(vec!["git", "commit", "-s", "-m", "x"]);
        merge_ours: "git merge -s ours fix" => Some(vec!["git", "merge", "-s", "ours", "fix"]);
        merge_program: "git merge -s evil fix" => None;
        merge_ours_joined: "git merge -sours fix" => Some(vec!["git", "merge", "-sours", "fix"]);
        merge_strategy_builtin: "git merge --strategy=ort fix" => Some(vec!["git", "merge", "--strategy=ort", "fix"]);
        merge_strategy_program: "git merge --strategy=evil fix" => None;
        rebase_plain: "git rebase main" => Some(vec!["git", "rebase", "main"]);
        rebase_exec: "git rebase -x 'make test' main" => None;
        rebase_exec_long: "git rebase --exec=make main" => None;
        rebase_exec_joined: "git rebase -xmake main" => None;
        global_config: "git -c core.hooksPath=/tmp/h commit -m x" => None;
        global_dir: "git -C sub commit -m x" => None;
        config_env: "git commit --config-env=core.hooksPath=H -m x" => None;
        sub_c: "git commit -c HEAD" => None;
        config_writes: "git config core.hooksPath /tmp/h" => None;
        remote_add: "git remote add o https://x.example.test/r" => None;
        push: "git push" => None;
        status: "git status" => None;
        compound: "git add . && git commit -m x" => None;
        redirected: "git commit -m x > out.txt" => None;
        expanded: "git commit -m \"$(cat msg)\"" => None;
        assigned: "GIT_DIR=/tmp/x git commit -m x" => None;
        wrapped: "env git commit -m x" => None;
        other_git: "./git commit -m x" => None;
        not_git: "make commit" => None;
    }
}
