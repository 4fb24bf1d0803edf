//! Judging `web_fetch` by the host it reaches: keel's
//! `web_rule(host = "docs.example.org" | "*.example.org", decision =
//! "allow" | "prompt" | "forbidden", justification = "…")`.
//!
//! Decision order for a URL (DESIGN §4 applied to a host): not an
//! `http`/`https` URL or an IP literal → forbidden (the rules are by
//! name: a raw address would bypass them); rules (strictest of all that
//! match wins; a project's allows only once it is trusted) → no rule: asks
//! in every mode but yolo, which allows (the default is ask; headless runs
//! are refused with the remedy, a rule to add).
//!
//! The same [`judge_host`] decides every redirect hop the fetcher follows
//! (`web::fetch`), without the mode: a hop is followed only when a rule
//! allows its host (or it stays on the host the call was approved for),
//! so a page cannot redirect keel to a host the user never allowed.
//!
//! Invariants: host patterns are `policy::network`'s (`*.example.org`
//! matches below it, never itself; names compared lower-case, without a
//! trailing dot); a `forbidden` or `prompt` rule holds in every mode, yolo
//! included. Pure, like the rest of `policy`.

use super::engine::{Policy, Verdict};
use super::network::{DomainPattern, is_ip_literal};
use super::rule_args::{ArgError, decision, justification, string};
use super::rules::{Origin, RuleDecision, RuleMatch, Source};
use super::syntax::Arg;
use super::{ApprovalMode, Decision};
use crate::protocol::tool_facts::{names, url_host};

/// One `web_rule`.
#[derive(Debug, Clone, PartialEq)]
pub struct WebRule {
    pub pattern: DomainPattern,
    pub decision: RuleDecision,
    pub justification: Option<String>,
    pub source: Source,
}

impl WebRule {
    fn to_match(&self, host: &str) -> RuleMatch {
        RuleMatch {
            source: self.source.clone(),
            pattern: vec![vec![self.pattern.text()]],
            matched_prefix: vec![host.to_owned()],
            decision: self.decision,
            justification: self.justification.clone(),
            resolved_program: None,
        }
    }
}

/// Parses the arguments of one `web_rule` call.
pub(super) fn web_rule(args: Vec<Arg>, source: &Source) -> Result<WebRule, ArgError> {
    let (mut host, mut rule_decision, mut why) = (None, RuleDecision::Allow, None);
    for arg in args {
        let at = (arg.line, arg.column);
        let located = move |message: String| ArgError { message, at: Some(at) };
        match arg.name.as_str() {
            "host" => {
                let text = string(arg.value, "host").map_err(located)?;
                let pattern = DomainPattern::parse(&text)
                    .map_err(|error| located(format!("web_rule host: {error}")))?;
                host = Some(pattern);
            }
            "decision" => rule_decision = decision(arg.value).map_err(located)?,
            "justification" => why = Some(justification(arg.value).map_err(located)?),
            other => return Err(located(format!("web_rule has no argument `{other}`"))),
        }
    }
    let pattern = host.ok_or("web_rule needs a `host` (e.g. \"docs.example.org\")")?;
    Ok(WebRule { pattern, decision: rule_decision, justification: why, source: source.clone() })
}

/// What the rules alone say about a host, and the rules that matched.
#[derive(Debug, Clone, PartialEq)]
pub struct HostJudgement {
    /// The strictest matching rule's decision (`None`: no rule matched).
    pub decision: Option<RuleDecision>,
    pub matched: Vec<RuleMatch>,
    pub reason: String,
}

/// The rules' judgement of `host` (no mode, no default): the strictest
/// matching rule, a project's allows counting only when `trusted`.
pub fn judge_host(rules: &[WebRule], trusted: bool, host: &str) -> HostJudgement {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if is_ip_literal(&host) {
        return HostJudgement {
            decision: Some(RuleDecision::Forbidden),
            matched: Vec::new(),
            reason: format!("{host} is an IP address: web_rule allows hosts by name only"),
        };
    }
    let matched: Vec<RuleMatch> = rules
        .iter()
        .filter(|rule| rule.pattern.matches(&host))
        .filter(|rule| {
            trusted || rule.source.origin != Origin::Project || rule.decision != RuleDecision::Allow
        })
        .map(|rule| rule.to_match(&host))
        .collect();
    let strictest = matched.iter().max_by_key(|m| m.decision);
    let reason = match strictest {
        None => format!(
            "no web_rule allows {host}; add `web_rule(host=\"{host}\", decision=\"allow\")` to \
             a rules file (e.g. ~/.keel/rules/allow.rules)"
        ),
        Some(rule) => {
            let verb = match rule.decision {
                RuleDecision::Allow => "is allowed",
                RuleDecision::Prompt => "requires approval",
                RuleDecision::Forbidden => "is forbidden",
            };
            match &rule.justification {
                Some(why) => format!("fetching {host} {verb}: {why} ({})", rule.source),
                None => format!("fetching {host} {verb} by web_rule ({})", rule.source),
            }
        }
    };
    HostJudgement { decision: strictest.map(|m| m.decision), matched, reason }
}

/// Judges a `web_fetch` of `url` (`None`: the argument is missing).
pub fn evaluate_url(policy: &Policy, url: Option<&str>) -> Verdict {
    let tool = names::WEB_FETCH;
    let Some(url) = url else {
        // The tool rejects the call; judge by mode so the answer does not
        // depend on the mistake.
        return Verdict::new(Decision::Allow, Vec::new());
    };
    let Some(host) = url_host(url) else {
        let reason = format!("`{tool}` fetches http:// and https:// URLs only, not {url:?}");
        return Verdict::new(Decision::Forbidden { reason }, Vec::new());
    };
    let judged = judge_host(&policy.rules.web_rules, policy.project_trusted, &host);
    let decision = match (judged.decision, policy.mode) {
        (Some(RuleDecision::Forbidden), _) => Decision::Forbidden { reason: judged.reason },
        (Some(RuleDecision::Prompt), _) => Decision::Prompt { reason: judged.reason },
        (Some(RuleDecision::Allow), _) | (None, ApprovalMode::Yolo) => Decision::Allow,
        (
            None,
            ApprovalMode::Ask | ApprovalMode::Auto | ApprovalMode::Plan | ApprovalMode::Explore,
        ) => Decision::Prompt { reason: format!("`{tool}` of {url}: {}", judged.reason) },
    };
    Verdict::new(decision, judged.matched)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{PathContext, RuleSet};

    fn policy(mode: ApprovalMode, user: &str, project: &str, trusted: bool) -> Policy {
        let mut rules = RuleSet::default();
        rules.load("user.rules", user, Origin::User).unwrap();
        rules.load("project.rules", project, Origin::Project).unwrap();
        let paths = PathContext::new("/home/u", "/home/u/ws", "/home/u/ws");
        let mut policy = Policy::new(rules, mode, paths);
        policy.project_trusted = trusted;
        policy
    }

    fn decision(policy: &Policy, url: &str) -> Decision {
        evaluate_url(policy, Some(url)).decision
    }

    const USER: &str = r#"
web_rule(host="docs.example.test", decision="allow")
web_rule(host="*.example.org", decision="allow")
web_rule(host="bad.example.org", decision="forbidden", justification="known bad")
"#;

    #[test]
    fn allowed_hosts_and_suffixes_run_and_the_strictest_rule_wins() {
        let p = policy(ApprovalMode::Auto, USER, "", false);
        assert_eq!(decision(&p, "https://docs.example.test/a?b=c"), Decision::Allow);
        assert_eq!(decision(&p, "http://a.b.example.org:8080/"), Decision::Allow);
        let Decision::Forbidden { reason } = decision(&p, "https://BAD.example.org./x") else {
            panic!("bad.example.org must be forbidden")
        };
        assert!(reason.contains("known bad"), "{reason}");
    }

    #[test]
    fn an_unlisted_host_asks_with_the_rule_to_add_except_in_yolo() {
        for mode in [ApprovalMode::Ask, ApprovalMode::Auto, ApprovalMode::Plan] {
            let p = policy(mode, USER, "", false);
            let Decision::Prompt { reason } = decision(&p, "https://other.example.test/") else {
                panic!("{mode:?}: an unlisted host must ask")
            };
            assert!(reason.contains("web_rule(host=\"other.example.test\""), "{reason}");
        }
        let yolo = policy(ApprovalMode::Yolo, USER, "", false);
        assert_eq!(decision(&yolo, "https://other.example.test/"), Decision::Allow);
        assert!(matches!(decision(&yolo, "https://bad.example.org/"), Decision::Forbidden { .. }));
    }

    #[test]
    fn ip_literals_and_other_schemes_are_forbidden() {
        let p = policy(ApprovalMode::Yolo, USER, "", false);
        for url in ["http://127.0.0.1/", "http://[::1]:80/", "http://2130706433/", "file:///etc"] {
            assert!(matches!(decision(&p, url), Decision::Forbidden { .. }), "{url}");
        }
    }

    #[test]
    fn a_project_allows_only_once_trusted_and_may_always_forbid() {
        let project = r#"web_rule(host="proj.example.test")
web_rule(host="docs.example.test", decision="forbidden")"#;
        let untrusted = policy(ApprovalMode::Auto, USER, project, false);
        assert!(matches!(
            decision(&untrusted, "https://proj.example.test/"),
            Decision::Prompt { .. }
        ));
        assert!(matches!(
            decision(&untrusted, "https://docs.example.test/"),
            Decision::Forbidden { .. }
        ));
        let trusted = policy(ApprovalMode::Auto, USER, project, true);
        assert_eq!(decision(&trusted, "https://proj.example.test/"), Decision::Allow);
    }

    #[test]
    fn bad_web_rules_are_refused_when_loaded() {
        for text in [
            r#"web_rule(decision="allow")"#,
            r#"web_rule(host="a.*.org")"#,
            r#"web_rule(host="10.0.0.1")"#,
            r#"web_rule(host="a.org", decision="maybe")"#,
            r#"web_rule(host="a.org", port="80")"#,
        ] {
            assert!(RuleSet::default().load("x.rules", text, Origin::User).is_err(), "{text}");
        }
    }
}
