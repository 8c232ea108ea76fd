//! The emulator's Auto Scaling lifecycle hooks, IMDS lifecycle items and fault rules
//! (issue 32 point 8), checked by its own self-check: boto3's signed requests against a
//! fresh emulator on a free loopback port (tests/emulator/selfcheck_autoscaling.py).

mod common;
use common::*;
use std::process::Command;

#[test]
fn the_emulators_auto_scaling_state_machine_answers_as_aws_does() {
    let script = workspace().join("tests/emulator/selfcheck_autoscaling.py");
    let output = Command::new(emulator_python()).arg(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}\n{stdout}\n{}", script.display(), String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("checks passed"), "{stdout}");
}
