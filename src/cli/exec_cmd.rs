//! `keel exec`: flags to [`ExecOptions`], signal wiring (SIGINT, SIGTERM,
//! SIGHUP and SIGQUIT end the turn cleanly, see [`signals`]), and the
//! `result` line even for usage errors in `--json` mode.

use std::io::{Read, Write};

use super::{CliError, Context, ExecArgs, ExitStatus, ModelArgs, resume_cmd, today};
use crate::agent::PlanReview;
use crate::config::{self, Environment, Settings};
use crate::exec::{self, ExecOptions, ResultLine};
use crate::exit::signals;
use crate::protocol::RewindScope;
use crate::protocol::answer_shape::AnswerShape;
use crate::runtime::RewindTarget;

pub(super) async fn run(model: &ModelArgs, args: ExecArgs) -> Result<ExitStatus, CliError> {
    let json = args.json;
    match prepare_exec(model, args) {
        Ok((mut settings, options)) => {
            crate::runtime::learn_window(&mut settings).await;
            // A second signal exits at once, but a script still gets its line.
            let before_exit: fn(signals::StopSignal) =
                if json { |signal| exec::write_result_if_missing(signal.name()) } else { |_| {} };
            let shutdown =
                signals::watch(before_exit).context("cannot install the signal handlers")?;
            let status = exec::run(&settings, options, shutdown.token()).await;
            Ok(shutdown.exit_status(status))
        }
        // Scripts reading --json get their `result` line even for bad usage.
        Err(error) if json => {
            let line = match error.exit_status() {
                ExitStatus::Usage => ResultLine::usage_error(error.to_string()),
                _ => ResultLine::failure(error.to_string()),
            };
            exec::write_result(&line);
            let _ = writeln!(std::io::stderr(), "{}", error.render());
            Ok(error.exit_status())
        }
        Err(error) => Err(error),
    }
}

fn prepare_exec(model: &ModelArgs, args: ExecArgs) -> Result<(Settings, ExecOptions), CliError> {
    let env = Environment::from_process()?;
    let request = resume_cmd::ExecRequest::from_args(&args)?;
    let mut overrides = model.overrides();
    if args.no_sandbox {
        overrides.set.push("sandbox.mode=full-access".to_owned());
        overrides.set.push("sandbox.network=true".to_owned());
    }
    let rewind = rewind_request(&args, request.target.is_some())?;
    let resume = match (&request.target, &args.fork) {
        (Some(target), _) => {
            let path = resume_cmd::find_log(&env, target)?;
            resume_cmd::prefer_logged_model(&path, &mut overrides);
            Some(path)
        }
        // A fork is resumed like any session once its log is written.
        (None, Some(parent)) => {
            let path = resume_cmd::fork_log(&env, parent, args.at)?;
            resume_cmd::prefer_logged_model(&path, &mut overrides);
            Some(path)
        }
        (None, None) => None,
    };
    let settings = config::load(&env, &overrides)?;
    // Before stdin is read for the prompt.
    if args.input_stream && request.prompt.as_deref() == Some("-") {
        return Err(CliError::usage(
            "--input-stream reads stdin line by line: pass the first prompt as an argument, \
             not `-`",
        ));
    }
    if args.answer_from_stdin && request.prompt.as_deref() == Some("-") {
        return Err(CliError::usage(
            "--answer-from-stdin reads the answers from stdin: pass the prompt as an argument, \
             not `-`",
        ));
    }
    let stdin_is_taken = if args.input_stream {
        Some("--input-stream reads it")
    } else if args.answer_from_stdin {
        Some("--answer-from-stdin reads it")
    } else if request.prompt.as_deref() == Some("-") {
        Some("the prompt is read from it")
    } else {
        None
    };
    check_stdin_image(&args.images, stdin_is_taken)?;
    let prompt = request.prompt.as_deref().map(read_prompt).transpose()?;
    // No flag: a new session starts in `default_mode` (ask unless
    // configured); a resumed one keeps its logged mode.
    let approval = match (args.mode.approval(), &resume) {
        (Some(mode), _) => Some(mode),
        (None, None) => Some(settings.default_mode),
        (None, Some(_)) => None,
    };
    if let Some(path) = &args.output_last_message {
        check_output_folder(path)?;
    }
    let images = read_images(&args.images, prompt.is_some(), &settings, &env)?;
    if args.reject_plan.is_some() && resume.is_none() {
        return Err(CliError::usage(
            "--reject-plan needs a session to resume: keel exec resume ID --reject-plan",
        ));
    }
    if args.reject_plan.as_deref().is_some_and(|text| text.trim().is_empty()) {
        return Err(CliError::usage(
            "--reject-plan needs feedback: say what the plan should change",
        ));
    }
    let options = ExecOptions {
        prompt,
        resume,
        json: args.json,
        last_message_file: args.output_last_message,
        approval,
        plan_review: match (args.plan_only || args.reject_plan.is_some(), args.approve_plan) {
            (true, _) => Some(PlanReview::StopAfterSubmit),
            (false, true) => Some(PlanReview::Approve),
            (false, false) => None,
        },
        reject_plan: args.reject_plan,
        rewind,
        input_stream: args.input_stream,
        answer_from_stdin: args.answer_from_stdin,
        progress: args.progress,
        output_schema: args.output_schema.as_deref().map(read_output_schema).transpose()?,
        cwd: env.cwd.clone(),
        date: today(),
        images,
    };
    Ok((settings, options))
}

/// `--rewind-to N` / `--undo-rewind`, which need a session to resume.
fn rewind_request(
    args: &ExecArgs,
    resuming: bool,
) -> Result<Option<(RewindTarget, RewindScope)>, CliError> {
    let target = match (args.rewind_to, args.undo_rewind) {
        (Some(n), _) => RewindTarget::Prompt(n),
        (None, true) => RewindTarget::UndoLast,
        (None, false) => return Ok(None),
    };
    if !resuming {
        return Err(CliError::usage(
            "--rewind-to and --undo-rewind need a session to resume: keel exec resume ID \
             --rewind-to N [PROMPT]",
        ));
    }
    // clap's value parser admits only the scopes' names.
    let scope = RewindScope::parse(&args.rewind_scope).unwrap_or(RewindScope::Both);
    Ok(Some((target, scope)))
}

/// `--image -` reads stdin once, and only when nothing else does
/// (`stdin_is_taken` says what does); checked before stdin is read.
fn check_stdin_image(
    paths: &[std::path::PathBuf],
    stdin_is_taken: Option<&str>,
) -> Result<(), CliError> {
    let from_stdin = paths.iter().filter(|path| path.as_os_str() == "-").count();
    if from_stdin > 1 {
        return Err(CliError::usage("--image - reads stdin once: name it one time"));
    }
    if let (1, Some(why)) = (from_stdin, stdin_is_taken) {
        return Err(CliError::usage(format!(
            "--image - cannot read the image from stdin: {why}; save the image and name its file"
        )));
    }
    Ok(())
}

/// The `--image` files (`-`: stdin's bytes, see [`check_stdin_image`]),
/// prepared for the model; refused before anything runs when there is no
/// prompt to attach them to or the model does not take images.
fn read_images(
    paths: &[std::path::PathBuf],
    has_prompt: bool,
    settings: &Settings,
    env: &Environment,
) -> Result<Vec<crate::protocol::ImagePart>, CliError> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    if !has_prompt {
        return Err(CliError::usage("--image needs a prompt to attach the image to"));
    }
    if !settings.provider.profile.takes_images(&settings.model) {
        let refused = crate::runtime::ImagesRefused { model: settings.model.clone() };
        return Err(CliError::usage(refused.to_string()));
    }
    paths
        .iter()
        .map(|path| {
            let prepared = if path.as_os_str() == "-" {
                let stdin = std::io::stdin().lock();
                crate::support::images::from_reader(stdin, "stdin", std::path::Path::new("stdin"))
            } else {
                crate::support::images::from_file(&env.cwd.join(path))
            };
            prepared.map_err(|error| {
                CliError::usage(format!("cannot attach {}: {error}", path.display()))
            })
        })
        .collect()
}

/// `-o FILE` must be writable where it is asked for before the (paid) run:
/// its folder has to exist.
fn check_output_folder(path: &std::path::Path) -> Result<(), CliError> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    match folder {
        Some(folder) if !folder.is_dir() => Err(CliError::usage(format!(
            "cannot write the last message to {}: the folder {} does not exist",
            path.display(),
            folder.display()
        ))),
        Some(_) | None if path.is_dir() => Err(CliError::usage(format!(
            "cannot write the last message to {}: it is a folder",
            path.display()
        ))),
        Some(_) | None => Ok(()),
    }
}

/// `--output-schema FILE`: a JSON Schema, read before the (paid) run; the
/// keywords keel does not check are named on stderr.
fn read_output_schema(path: &std::path::Path) -> Result<AnswerShape, CliError> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        CliError::usage(format!("cannot read the output schema {}: {error}", path.display()))
    })?;
    let shape = AnswerShape::parse(&text)
        .map_err(|error| CliError::usage(format!("{}: {error}", path.display())))?;
    let unchecked = shape.unchecked_keywords();
    if !unchecked.is_empty() {
        let _ = writeln!(
            std::io::stderr(),
            "warning: {}: keel does not check {}; answers are validated without them",
            path.display(),
            unchecked.join(", ")
        );
    }
    Ok(shape)
}

fn read_prompt(arg: &str) -> Result<String, CliError> {
    let prompt = if arg == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("cannot read the prompt from stdin")?;
        text
    } else {
        arg.to_owned()
    };
    if prompt.trim().is_empty() {
        let why = if arg == "-" {
            "the prompt is empty: nothing but blanks came on stdin (`-`); pipe the task in, e.g. `echo \"fix the tests\" | keel exec -`"
        } else {
            "the prompt is empty; pass a task, or `-` to read it from stdin"
        };
        return Err(CliError::usage(why));
    }
    Ok(prompt)
}
