//! The `lather-bench` binary as a user runs it: its help names each experiment by what it
//! measures, and a bad argument is refused with exit code 2.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lather-bench"))
        .args(args)
        .output()
        .expect("run lather-bench")
}

#[test]
fn help_lists_the_experiments_by_descriptive_names() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for word in [
        "http",
        "abuse",
        "stage-layouts",
        "resource-notify",
        "rate-knee",
        "digest-bound",
        "eventing",
        "remote-call",
        "--log-level",
    ] {
        assert!(help.contains(word), "{help}");
    }
    for word in ["figure", "Figure", "table1", "Table 1", "seed"] {
        assert!(!help.contains(word), "{help}");
    }
}

#[test]
fn each_experiment_has_help_without_research_names() {
    for experiment in [
        "stage-layouts",
        "resource-notify",
        "rate-knee",
        "eventing",
        "remote-call",
    ] {
        let out = run(&[experiment, "--help"]);
        assert!(out.status.success(), "{experiment}");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("--out"), "{experiment}: {help}");
        for word in ["figure", "Figure", "table1", "Table 1", "seed"] {
            assert!(!help.contains(word), "{experiment}: {help}");
        }
    }
}

#[test]
fn a_bad_rate_is_refused() {
    let out = run(&[
        "rate-knee",
        "--rates",
        "0",
        "--out",
        "/nonexistent-lather-dir",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
