//! Users and groups by name or id, from the system's databases (passwd/group through NSS).
//!
//! These stay on libc: the databases are read through the C library's NSS (files, LDAP,
//! sssd, …), which rustix does not reach. Only the reentrant `get*_r` forms are used, so
//! a lookup is safe from any thread.

use std::collections::BTreeSet;
use std::ffi::{CStr, CString};
use std::path::PathBuf;
use std::sync::Mutex;

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
        let mut pwd = std::mem::MaybeUninit::<libc::passwd>::zeroed();
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: all pointers are valid for the call; the entry points into `buf`.
        let rc = unsafe { libc::getpwnam_r(c.as_ptr(), pwd.as_mut_ptr(), buf.as_mut_ptr(), buf.len(), &mut result) };
        // SAFETY: `result` is null or points at `pwd`, filled in from `buf`, both still alive.
        (rc, unsafe { passwd_entry(result) }.map(|u| User { name: name.to_string(), ..u }))
    })
}

/// The passwd entry of the user with id `uid`, if the passwd database has one.
pub fn user_by_id(uid: u32) -> Option<User> {
    with_buffer(|buf| {
        let mut pwd = std::mem::MaybeUninit::<libc::passwd>::zeroed();
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: as in `user`.
        let rc = unsafe { libc::getpwuid_r(uid, pwd.as_mut_ptr(), buf.as_mut_ptr(), buf.len(), &mut result) };
        // SAFETY: as in `user`.
        (rc, unsafe { passwd_entry(result) })
    })
}

/// The name of the user with id `uid`, if the passwd database has one.
pub fn user_name(uid: u32) -> Option<String> {
    user_by_id(uid).map(|u| u.name)
}

/// The entry a `getpw*_r` call found, read into owned strings.
///
/// # Safety
/// `entry` is null or points at a `passwd` whose strings are NUL-terminated or null.
unsafe fn passwd_entry(entry: *const libc::passwd) -> Option<User> {
    // SAFETY: guaranteed by the caller.
    let pwd = unsafe { entry.as_ref()? };
    let text = |p: *const libc::c_char| {
        // SAFETY: a non-null field of the entry is a NUL-terminated string.
        if p.is_null() { String::new() } else { unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned() }
    };
    if pwd.pw_name.is_null() {
        return None;
    }
    Some(User {
        name: text(pwd.pw_name),
        uid: pwd.pw_uid,
        gid: pwd.pw_gid,
        home: PathBuf::from(text(pwd.pw_dir)),
        shell: text(pwd.pw_shell),
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

/// The gids of the groups whose member list names `user` (the group database as the
/// reference read it, through `grp.getgrall()`; a primary group is not included).
///
/// The database is walked with `getgrent`, which keeps its place and its entry in the C
/// library's static storage (musl has no `getgrent_r`): a lock keeps two walks in this
/// process apart, and each entry is read before the next call.
pub fn member_gids(user: &str) -> BTreeSet<u32> {
    static WALK: Mutex<()> = Mutex::new(());
    let _walk = WALK.lock().unwrap_or_else(|e| e.into_inner());
    let mut found = BTreeSet::new();
    // SAFETY: the walk is serialised above; an entry and its member list are read
    // before the next getgrent call overwrites them.
    unsafe {
        libc::setgrent();
        loop {
            let entry = libc::getgrent();
            if entry.is_null() {
                break;
            }
            let mut member = (*entry).gr_mem;
            while !member.is_null() && !(*member).is_null() {
                if CStr::from_ptr(*member).to_bytes() == user.as_bytes() {
                    found.insert((*entry).gr_gid);
                    break;
                }
                member = member.add(1);
            }
        }
        libc::endgrent();
    }
    found
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
        assert_eq!(user_by_id(0), Some(root));
        // An id with no passwd entry has no name (4294967294 is never allocated).
        assert_eq!(user_name(u32::MAX - 1), None);
    }

    /// Compared with `/etc/group` read here: every member of a group listed there is
    /// found in it (NSS may add groups from elsewhere, never drop these).
    #[test]
    fn member_groups_are_those_whose_member_list_names_the_user() {
        assert!(member_gids("no-such-user-here").is_empty());
        let text = std::fs::read_to_string("/etc/group").unwrap_or_default();
        for line in text.lines() {
            let fields: Vec<&str> = line.split(':').collect();
            let (Some(gid), Some(members)) = (fields.get(2).and_then(|g| g.parse::<u32>().ok()), fields.get(3)) else {
                continue;
            };
            for member in members.split(',').filter(|m| !m.is_empty()) {
                assert!(member_gids(member).contains(&gid), "{member} is a member of {}", fields[0]);
            }
        }
    }
}
