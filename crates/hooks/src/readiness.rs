//! systemd's readiness protocol (sd_notify(3)) for the unit's `Type=notify`: one datagram
//! per state change to the socket named by `$NOTIFY_SOCKET` (a path, or an abstract name
//! written with a leading `@`). Without the variable (SysV, a terminal, `--no-daemon`)
//! nothing is sent. No libsystemd: the protocol is that datagram.
//!
//! cfn-hup says `READY=1` once its configuration is loaded and its first pass is
//! scheduled, `RELOADING=1` … `READY=1` around a SIGHUP reload, `STOPPING=1` when it
//! stops. The unit's `NotifyAccess=main` makes systemd ignore the variable in hook
//! actions, which inherit it.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

pub const READY: &str = "READY=1";
pub const RELOADING: &str = "RELOADING=1";
pub const STOPPING: &str = "STOPPING=1";

/// Tells systemd `state`, when cfn-hup runs as a `Type=notify` service. A failure is
/// logged, never fatal: systemd then reports the unit as it sees it.
pub fn notify(state: &str) {
    let Some(socket) = std::env::var_os("NOTIFY_SOCKET") else { return };
    if let Err(e) = send(socket.as_bytes(), state) {
        tracing::warn!("Could not tell systemd {state}: {e}");
    }
}

fn send(socket: &[u8], state: &str) -> std::io::Result<()> {
    let address = match socket {
        [b'@', name @ ..] => SocketAddr::from_abstract_name(name)?,
        path => SocketAddr::from_pathname(std::ffi::OsStr::from_bytes(path))?,
    };
    UnixDatagram::unbound()?.send_to_addr(state.as_bytes(), &address)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_one_datagram_to_a_path_or_an_abstract_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let receiver = UnixDatagram::bind(&path).unwrap();
        send(path.as_os_str().as_bytes(), READY).unwrap();
        let mut buf = [0u8; 64];
        let n = receiver.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");

        let name = format!("cfn-hup-readiness-test-{}", std::process::id());
        let abstract_receiver = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
        send(format!("@{name}").as_bytes(), STOPPING).unwrap();
        let n = abstract_receiver.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STOPPING=1");
    }

    #[test]
    fn a_missing_socket_is_an_error_not_a_panic() {
        assert!(send(b"/nonexistent/notify", READY).is_err());
        assert!(send(b"", READY).is_err());
    }
}
