//! The host's fully qualified name: cfn-signal's default `--id` off EC2 (SIG-02) and
//! the id of cfn-hup's command listener off EC2 (SPEC §14.7).

use std::ffi::{CStr, CString};

/// The host name (`gethostname`), replaced by its canonical name when the resolver
/// knows one — what `hostname -f` prints. Python's `socket.getfqdn()`, which the
/// reference used, goes through a reverse lookup of the name's address instead; where
/// the name resolves to 127.0.0.1 that turns every host into `localhost`, which makes
/// ids from different hosts collide, so the canonical name is used. Never empty: a
/// host with no name at all is `localhost`, as Python reports it.
pub fn fqdn() -> String {
    let Some(name) = hostname() else {
        return "localhost".into();
    };
    canonical_name(&name).unwrap_or(name)
}

/// The kernel's node name, which is what `gethostname` returns.
fn hostname() -> Option<String> {
    let name = rustix::system::uname().nodename().to_string_lossy().trim().to_string();
    (!name.is_empty()).then_some(name)
}

/// The resolver's canonical name for `name`. This stays on libc's `getaddrinfo`: the
/// answer comes from the C library's NSS (`/etc/hosts`, DNS, systemd-resolved, …),
/// which rustix does not reach.
fn canonical_name(name: &str) -> Option<String> {
    let node = CString::new(name).ok()?;
    // SAFETY: an all-zero addrinfo is a valid "no hints" value; the fields set below
    // are plain integers.
    let mut hints: libc::addrinfo = unsafe { std::mem::zeroed() };
    hints.ai_flags = libc::AI_CANONNAME;
    hints.ai_family = libc::AF_UNSPEC;
    hints.ai_socktype = libc::SOCK_STREAM;
    let mut result: *mut libc::addrinfo = std::ptr::null_mut();
    // SAFETY: `node` is NUL-terminated, `hints` lives for the call, and `result` is
    // freed below exactly once when the call succeeded.
    let rc = unsafe { libc::getaddrinfo(node.as_ptr(), std::ptr::null(), &hints, &mut result) };
    if rc != 0 || result.is_null() {
        return None;
    }
    // SAFETY: `result` points at the first entry getaddrinfo returned; with
    // AI_CANONNAME its `ai_canonname` is NULL or a NUL-terminated string owned by the list.
    let canonical = unsafe {
        let entry = &*result;
        (!entry.ai_canonname.is_null()).then(|| CStr::from_ptr(entry.ai_canonname).to_string_lossy().into_owned())
    };
    // SAFETY: freed once, after the last read from the list.
    unsafe { libc::freeaddrinfo(result) };
    canonical.map(|c| c.trim().to_string()).filter(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fqdn_is_a_single_name() {
        let name = fqdn();
        assert!(!name.is_empty());
        assert!(!name.contains(char::is_whitespace), "{name:?}");
    }

    #[test]
    fn localhost_is_its_own_canonical_name() {
        assert_eq!(canonical_name("localhost").as_deref(), Some("localhost"));
    }

    #[test]
    fn names_that_do_not_resolve_have_no_canonical_form() {
        assert_eq!(canonical_name("no-such-host.invalid"), None);
        assert_eq!(canonical_name("bad\0name"), None);
    }
}
