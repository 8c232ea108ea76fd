//! Users and groups by name, from the system's databases (passwd/group through NSS).

use std::ffi::{CStr, CString};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
    pub shell: String,
}

fn c_name(name: &str) -> Option<CString> {
    CString::new(name).ok()
}

/// Calls a `get*_r` function with a growing buffer until it fits.
fn with_buffer<T>(mut call: impl FnMut(&mut [libc::c_char]) -> (libc::c_int, Option<T>)) -> Option<T> {
    let mut size = 1024;
    loop {
        let mut buf = vec![0 as libc::c_char; size];
        let (rc, found) = call(&mut buf);
        if rc == libc::ERANGE && size < 1 << 20 {
            size *= 4;
            continue;
        }
        return found;
    }
}

/// The passwd entry of `name`, if it exists.
pub fn user(name: &str) -> Option<User> {
    let c = c_name(name)?;
    with_buffer(|buf| {
        // SAFETY: all pointers are valid for the call; the result points into `buf`,
        // which outlives the reads below.
        unsafe {
            let mut pwd: libc::passwd = std::mem::zeroed();
            let mut result: *mut libc::passwd = std::ptr::null_mut();
            let rc = libc::getpwnam_r(c.as_ptr(), &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result);
            if result.is_null() {
                return (rc, None);
            }
            let text = |p: *const libc::c_char| {
                if p.is_null() { String::new() } else { CStr::from_ptr(p).to_string_lossy().into_owned() }
            };
            (
                rc,
                Some(User {
                    name: name.to_string(),
                    uid: pwd.pw_uid,
                    gid: pwd.pw_gid,
                    home: PathBuf::from(text(pwd.pw_dir)),
                    shell: text(pwd.pw_shell),
                }),
            )
        }
    })
}

/// The name of the user with id `uid`, if the passwd database has one.
pub fn user_name(uid: u32) -> Option<String> {
    with_buffer(|buf| {
        // SAFETY: as in `user`.
        unsafe {
            let mut pwd: libc::passwd = std::mem::zeroed();
            let mut result: *mut libc::passwd = std::ptr::null_mut();
            let rc = libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result);
            if result.is_null() || pwd.pw_name.is_null() {
                return (rc, None);
            }
            (rc, Some(CStr::from_ptr(pwd.pw_name).to_string_lossy().into_owned()))
        }
    })
}

/// The gid of group `name`, if it exists.
pub fn group_id(name: &str) -> Option<u32> {
    let c = c_name(name)?;
    with_buffer(|buf| {
        // SAFETY: as in `user`.
        unsafe {
            let mut grp: libc::group = std::mem::zeroed();
            let mut result: *mut libc::group = std::ptr::null_mut();
            let rc = libc::getgrnam_r(c.as_ptr(), &mut grp, buf.as_mut_ptr(), buf.len(), &mut result);
            (rc, if result.is_null() { None } else { Some(grp.gr_gid) })
        }
    })
}

/// The groups `user` belongs to (its primary group included), as `initgroups` would set.
pub fn group_list(user: &User) -> Vec<libc::gid_t> {
    let Some(c) = c_name(&user.name) else { return vec![user.gid] };
    let mut count: libc::c_int = 32;
    loop {
        let mut groups = vec![0 as libc::gid_t; count as usize];
        let mut n = count;
        // SAFETY: `groups` has room for `n` entries; getgrouplist updates `n`.
        let rc = unsafe { libc::getgrouplist(c.as_ptr(), user.gid, groups.as_mut_ptr(), &mut n) };
        if rc >= 0 {
            groups.truncate(n as usize);
            return groups;
        }
        if n <= count || count > 65536 {
            return vec![user.gid];
        }
        count = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_root_and_not_strangers() {
        let root = user("root").expect("root exists");
        assert_eq!((root.uid, root.gid), (0, 0));
        assert_eq!(group_id("root"), Some(0));
        assert!(user("no-such-user-here").is_none());
        assert!(group_id("no-such-group-here").is_none());
        assert!(user("bad\0name").is_none());
        assert!(group_list(&root).contains(&0));
        assert_eq!(user_name(0).as_deref(), Some("root"));
        // An id with no passwd entry has no name (4294967294 is never allocated).
        assert_eq!(user_name(u32::MAX - 1), None);
    }
}
