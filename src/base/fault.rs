//! Fault points for tests, compiled only with the `fault-injection` feature: a release build
//! carries neither the points nor their names.
//!
//! `A3S_ISO_TEST_FAULT=<name>` selects one point; when the process reaches it, the point acts:
//! a name containing `interrupt` sends the process SIGINT, one containing `pause` SIGSTOP (for
//! a test to change something under it, then SIGCONT), any other name SIGKILLs it, as a crash
//! would.

/// The variable that selects a fault point.
#[cfg(feature = "fault-injection")]
pub const VAR: &str = "A3S_ISO_TEST_FAULT";

/// Acts on the fault point `name` if the environment selects it.
#[cfg(feature = "fault-injection")]
pub fn hit(name: &str) {
    use rustix::process::{Signal, getpid, kill_process};
    if std::env::var(VAR).as_deref() != Ok(name) {
        return;
    }
    let signal = if name.contains("interrupt") {
        Signal::INT
    } else if name.contains("pause") {
        Signal::STOP
    } else {
        Signal::KILL
    };
    let _ = kill_process(getpid(), signal);
}

/// A fault point: `fault_point!("promote-after-apply")`.
#[cfg(feature = "fault-injection")]
#[macro_export]
macro_rules! fault_point {
    ($name:literal) => {
        $crate::base::fault::hit($name)
    };
}

/// A fault point, which is nothing without the `fault-injection` feature.
#[cfg(not(feature = "fault-injection"))]
#[macro_export]
macro_rules! fault_point {
    ($name:literal) => {};
}
