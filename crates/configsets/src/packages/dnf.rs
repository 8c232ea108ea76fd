//! dnf: not a manager of either reference line (1.4 and 2.0 warn `Unsupported package
//! manager: dnf`; on Amazon Linux 2023 `yum` is dnf). This port accepts it and runs
//! the yum algorithm (INIT-PKG-02/03) with the `dnf` program, whose commands and
//! options used here (`clean metadata`, `makecache`, `-C list installed`,
//! `--showduplicates list available`, `install`, `downgrade`) are the same.

use super::yum::Manager;

pub const DNF: Manager = Manager { program: "dnf", label: "DNF", lower: "dnf" };
