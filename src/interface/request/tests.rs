//! What an agent's arguments become, and what they cannot become.

use crate::interface::request::agent::{named_as_params, parse_agent};
use crate::interface::request::bind::BindArgs;
use crate::interface::request::land::LandArgs;
use crate::interface::request::run::RunArgs;
use serde_json::json;
use serde_json::{Map, Value};

fn object(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

#[test]
fn a_value_that_looks_like_an_option_stays_a_value() {
    let parsed: LandArgs =
        parse_agent(&object(json!({"test": "--no-sandbox", "message": "--all"}))).unwrap();
    assert_eq!(parsed.test.as_deref(), Some("--no-sandbox"));
    assert_eq!(parsed.message.as_deref(), Some("--all"));
    assert!(!parsed.no_sandbox && !parsed.all);
    let parsed: RunArgs =
        parse_agent(&object(json!({"command": ["--allow-network", "--", "-x"]}))).unwrap();
    assert_eq!(parsed.command, ["--allow-network", "--", "-x"]);
    assert!(!parsed.grants.allow_network);
    let parsed: BindArgs = parse_agent(&object(json!({"session_id": "--read-only"}))).unwrap();
    assert_eq!(parsed.session.as_deref(), Some("--read-only"));
    assert!(!parsed.read_only);
}

#[test]
fn what_an_agent_may_not_set_is_an_unknown_argument() {
    for refused in [json!({"no_setup": true}), json!({"owner_pid": "1"})] {
        let err = parse_agent::<BindArgs>(&object(refused)).unwrap_err();
        assert!(err.starts_with("unknown argument"), "{err}");
    }
    let err = parse_agent::<LandArgs>(&object(json!({"push": "origin/main"}))).unwrap_err();
    assert!(err.starts_with("unknown argument"), "{err}");
}

#[test]
fn clap_refusals_name_the_agents_parameters() {
    let err = parse_agent::<BindArgs>(&object(json!({"carry_wip": true, "allow_dirty": true})))
        .unwrap_err();
    assert_eq!(
        err,
        "the argument 'allow_dirty' cannot be used with 'carry_wip'"
    );
    let err = parse_agent::<BindArgs>(&object(json!({"resume": true}))).unwrap_err();
    assert!(
        err.contains("required arguments were not provided"),
        "{err}"
    );
    let err = parse_agent::<RunArgs>(&object(json!({"command": "make"}))).unwrap_err();
    assert_eq!(err, "command: expected an array of strings");
    let err =
        parse_agent::<RunArgs>(&object(json!({"command": ["x"], "timeout": "soon"}))).unwrap_err();
    assert!(
        err.starts_with("invalid value 'soon' for 'timeout'"),
        "{err}"
    );
}

#[test]
fn false_null_and_empty_are_left_out() {
    let args = object(
        json!({"carry_wip": true, "allow_dirty": false, "read_only": null,
        "copy_ignored": []}),
    );
    let parsed: BindArgs = parse_agent(&args).unwrap();
    assert!(parsed.carry_wip && !parsed.allow_dirty && parsed.copy_ignored.is_empty());
}

#[test]
fn options_in_help_are_named_as_parameters() {
    let renames = [("allow-network".to_string(), "allow_network".to_string())];
    assert_eq!(
        named_as_params("not with --allow-network; --allow-networks, --x", &renames),
        "not with allow_network; --allow-networks, --x"
    );
    assert_eq!(
        named_as_params("'--allow-network <X>' here", &renames),
        "'allow_network' here"
    );
}

#[test]
fn an_agent_reads_the_whole_help_and_what_the_command_line_leaves_unsaid() {
    let params = crate::interface::request::agent::agent_params::<RunArgs>();
    let of = |name: &str| {
        let param = params.iter().find(|p| p.name == name).unwrap();
        param.description.clone()
    };
    assert!(of("command").contains("no shell"), "{}", of("command"));
    assert!(
        of("timeout").contains("500ms, 90s, 10m, 1h"),
        "{}",
        of("timeout")
    );
    assert!(
        of("env").contains("(repeatable). Otherwise the command gets only PATH"),
        "{}",
        of("env")
    );
    assert!(
        of("allow_host").contains("@anthropic"),
        "{}",
        of("allow_host")
    );
    assert!(!of("publish").contains("--"), "{}", of("publish"));
}
