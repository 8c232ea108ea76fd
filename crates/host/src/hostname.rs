//! The host's fully qualified name, as Python's `socket.getfqdn()` finds it: the
//! canonical name the resolver gives for the host name, else the host name itself.
//! cfn-hup's command listener uses it as its id off EC2 (SPEC §14.7).

use std::ffi::{CStr, CString};

/// The name `gethostname(2)` reports (`localhost` when it reports nothing).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable and its length is passed.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..end]).into_owned();
    if rc != 0 || name.is_empty() { "localhost".to_string() } else { name }
}

/// The canonical name of the host name, or the host name when the resolver has none.
pub fn fqdn() -> String {
    let name = hostname();
    let Ok(c_name) = CString::new(name.clone()) else {
        return name;
    };
    // SAFETY: a zeroed addrinfo is a valid "no hints" value apart from the flags we set.
    let mut hints: libc::addrinfo = unsafe { std::mem::zeroed() };
    hints.ai_flags = libc::AI_CANONNAME;
    let mut found: *mut libc::addrinfo = std::ptr::null_mut();
    // SAFETY: valid C strings and out-pointer; the list is freed below.
    let rc = unsafe { libc::getaddrinfo(c_name.as_ptr(), std::ptr::null(), &hints, &mut found) };
    if rc != 0 || found.is_null() {
        return name;
    }
    // SAFETY: getaddrinfo succeeded, so `found` points to a list whose first entry
    // carries the canonical name (or null).
    let canonical = unsafe {
        let canon = (*found).ai_canonname;
        let text = (!canon.is_null()).then(|| CStr::from_ptr(canon).to_string_lossy().into_owned());
        libc::freeaddrinfo(found);
        text
    };
    canonical.filter(|c| !c.is_empty()).unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fqdn_starts_with_the_host_name_or_extends_it() {
        let (host, full) = (hostname(), fqdn());
        assert!(!host.is_empty() && !full.is_empty());
        // The canonical name is the host name, or a name of which it is the first label.
        let first = host.split('.').next().unwrap();
        assert!(full == host || full.split('.').next() == Some(first) || full.contains('.'), "{host} -> {full}");
    }
}
