//! Bounds on one archive of the `sources` section (INIT-SRC-03): total bytes unpacked,
//! member count, the size of the headers in front of a member, the length of a name,
//! and the memory the member names take. An archive that goes past one is refused with
//! a message naming the archive and the limit.
//!
//! The defaults are far above what a real application archive reaches (the largest
//! dependency trees hold a few hundred thousand files, names stay under `PATH_MAX`) but a
//! bomb passes them within seconds:
//! * [`Limits::total_bytes`] 64 GiB: more than the disk of nearly every instance, so
//!   an honest archive runs into "No space left on device" first; a bomb on a large
//!   volume stops there instead of running for hours. Not made relative to the free
//!   space: the disk already stops a write that does not fit.
//! * [`Limits::members`] 1,000,000: a million empty members is 1 GiB of tar that
//!   compresses to a few MiB.
//! * [`Limits::header_bytes`] 1 MiB: one GNU long name or long link, or one PAX
//!   header (names, times, a few extended attributes), which the tar crate reads whole
//!   into memory; real ones hold a few KiB at most.
//! * [`Limits::path_bytes`] 4096: `PATH_MAX`; the kernel refuses longer paths anyway.
//! * [`Limits::name_bytes`] 256 MiB: all member names and link targets together, as
//!   the first pass keeps them to check the archive before writing (a million names of
//!   `PATH_MAX` bytes would otherwise hold gigabytes).
//!
//! The decompressors' own memory is bounded where they are made: xz by its memory
//! limit, zstd by ruzstd's default 128 MiB window; gzip and bzip2 need little.

use std::cell::RefCell;
use std::fmt;
use std::io::{self, Read};
use std::rc::Rc;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;
const BLOCK: u64 = 512;

/// The bounds on one archive. Only tests lower them; users cannot change them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes unpacked: the decompressed tar stream (headers included), or the
    /// uncompressed data of a zip's members.
    pub total_bytes: u64,
    /// Members, of any kind.
    pub members: u64,
    /// One GNU long name/long link or PAX header's data; everything in front of one
    /// member together (those three, GNU sparse maps) may take four times this.
    pub header_bytes: u64,
    /// A member's name or link target, in bytes.
    pub path_bytes: usize,
    /// All member names and link targets together.
    pub name_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { total_bytes: 64 * GIB, members: 1_000_000, header_bytes: MIB, path_bytes: 4096, name_bytes: 256 * MIB }
    }
}

/// A limit an archive went past (the reason in a refusal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exceeded {
    Total(u64),
    Members(u64),
    /// A header's kind, its declared size, the limit.
    Header(&'static str, u64, u64),
    /// Everything in front of one member, the limit.
    Headers(u64),
    /// The member name (shortened), what is long ("name", "link target"), its length,
    /// the limit.
    Path(String, &'static str, usize, usize),
    Names(u64),
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exceeded::Total(l) => write!(f, "it unpacks to more than {}, the limit for one archive", bytes(*l)),
            Exceeded::Members(l) => write!(f, "it holds more than {l} members, the limit for one archive"),
            Exceeded::Header(kind, size, l) => {
                write!(f, "a {kind} header of {size} bytes is larger than the limit of {}", bytes(*l))
            }
            Exceeded::Headers(l) => {
                write!(f, "the headers in front of one member are larger than the limit of {}", bytes(*l))
            }
            Exceeded::Path(name, what, len, l) => {
                write!(f, "{name} has a {what} of {len} bytes, longer than the limit of {l}")
            }
            Exceeded::Names(l) => {
                write!(f, "its member names add up to more than {}, the limit for one archive", bytes(*l))
            }
        }
    }
}

impl std::error::Error for Exceeded {}

impl Exceeded {
    /// The limit carried by an I/O error from [`TarGuard`] or [`Counted`], if it is one.
    pub fn of(e: &io::Error) -> Option<&Exceeded> {
        e.get_ref().and_then(|inner| inner.downcast_ref::<Exceeded>())
    }

    fn into_io(self) -> io::Error {
        io::Error::other(self)
    }
}

/// A limit as people write it: `64 GiB`, `1 MiB`, else in bytes.
fn bytes(n: u64) -> String {
    for (unit, name) in [(GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")] {
        if n >= unit && n.is_multiple_of(unit) {
            return format!("{} {name}", n / unit);
        }
    }
    format!("{n} bytes")
}

/// A name shortened for a message: its first 64 characters and an ellipsis.
pub fn shorten(name: &[u8]) -> String {
    let shown = String::from_utf8_lossy(name);
    let mut chars = shown.chars();
    let head: String = chars.by_ref().take(64).collect();
    if chars.next().is_some() { format!("{head}…") } else { head }
}

/// Checks a member's name or link target against [`Limits::path_bytes`] and adds it
/// to the running total of [`Limits::name_bytes`].
pub fn check_name(
    limits: &Limits,
    held: &mut u64,
    name: &[u8],
    value: &[u8],
    what: &'static str,
) -> Result<(), Exceeded> {
    if value.len() > limits.path_bytes {
        return Err(Exceeded::Path(shorten(name), what, value.len(), limits.path_bytes));
    }
    *held += value.len() as u64;
    if *held > limits.name_bytes {
        return Err(Exceeded::Names(limits.name_bytes));
    }
    Ok(())
}

/// What [`TarGuard`] knows of the stream, shared with the loop over the entries.
struct TarState {
    limits: Limits,
    /// Decompressed bytes read so far.
    pos: u64,
    /// Where the next header block starts, while the guard can tell.
    next_header: Option<u64>,
    /// Where the headers in front of the next member start.
    headers_from: u64,
    block: [u8; BLOCK as usize],
    filled: usize,
}

/// Sits between the decompressor and the tar crate, which reads a GNU long name, long
/// link or PAX header's data whole into memory (`read_all`) before showing anything:
/// the crate has no limit for it. The guard follows the stream itself: it knows where
/// the first header block starts (offset 0) and, after each member the crate returns,
/// where the next one does ([`TarHandle::member_seen`]: the crate reads lazily, so the
/// member's data starts where the stream stands then — after a GNU sparse member's
/// extra map blocks too — and the next header follows the stored data, rounded up to
/// 512 bytes). It copies each header block as it passes; when the block is one of
/// those extension headers, it checks the size the block declares (octal or base-256,
/// as tar writes it) and fails the read before the crate reads any of the data, then
/// follows on to the header after it. Whatever it cannot parse it leaves to the crate
/// (which refuses a bad checksum) and stops following until the next member. Reads past
/// four header limits in front of one member, or past the total, fail too.
pub struct TarGuard<R> {
    inner: R,
    state: Rc<RefCell<TarState>>,
}

/// The loop's side of a [`TarGuard`].
pub struct TarHandle(Rc<RefCell<TarState>>);

impl<R: Read> TarGuard<R> {
    pub fn new(inner: R, limits: Limits) -> (TarGuard<R>, TarHandle) {
        let state = Rc::new(RefCell::new(TarState {
            limits,
            pos: 0,
            next_header: Some(0),
            headers_from: 0,
            block: [0; BLOCK as usize],
            filled: 0,
        }));
        (TarGuard { inner, state: state.clone() }, TarHandle(state))
    }
}

impl TarHandle {
    /// The crate returned a member (and has read nothing of its data yet) that stores
    /// `size` bytes of data: the next header follows them.
    pub fn member_seen(&self, size: u64) {
        let mut st = self.0.borrow_mut();
        let next = st.pos.checked_add(size).and_then(|end| end.checked_add(BLOCK - 1)).map(|end| end & !(BLOCK - 1));
        st.filled = 0;
        match next {
            Some(n) if n >= st.pos => {
                st.next_header = Some(n);
                st.headers_from = n;
            }
            // Overflow (the crate fails on it): nothing to follow.
            _ => {
                st.next_header = None;
                st.headers_from = u64::MAX;
            }
        }
    }
}

impl TarState {
    /// Takes in the bytes `data` found at `start`; an error when a limit is passed.
    fn take(&mut self, start: u64, data: &[u8]) -> Result<(), Exceeded> {
        let end = start + data.len() as u64;
        self.pos = end;
        if end > self.limits.total_bytes {
            return Err(Exceeded::Total(self.limits.total_bytes));
        }
        let headers = self.limits.header_bytes.saturating_mul(4);
        if end > self.headers_from && end - self.headers_from > headers {
            return Err(Exceeded::Headers(headers));
        }
        while let Some(h) = self.next_header {
            let want = h + self.filled as u64;
            if want < start {
                // Bytes went by unseen: cannot happen with the crate reading in order,
                // but never guess.
                self.next_header = None;
                break;
            }
            if want >= end {
                break;
            }
            let from = (want - start) as usize;
            let n = (BLOCK as usize - self.filled).min(data.len() - from);
            self.block[self.filled..self.filled + n].copy_from_slice(&data[from..from + n]);
            self.filled += n;
            if self.filled < BLOCK as usize {
                break;
            }
            self.filled = 0;
            self.next_header = self.header_done(h)?;
        }
        Ok(())
    }

    /// Checks a whole header block found at `at`; where the next header starts when
    /// this one is an extension header whose data the crate reads next.
    fn header_done(&self, at: u64) -> Result<Option<u64>, Exceeded> {
        let kind = match self.block[156] {
            b'L' => "GNU long name",
            b'K' => "GNU long link name",
            b'x' => "PAX extended",
            b'g' => "PAX global",
            _ => return Ok(None),
        };
        let Some(size) = declared_size(&self.block[124..136]) else { return Ok(None) };
        if size > self.limits.header_bytes {
            return Err(Exceeded::Header(kind, size, self.limits.header_bytes));
        }
        Ok(Some(at + BLOCK + size.div_ceil(BLOCK) * BLOCK))
    }
}

/// The bytes a tar member's data takes in the stream: the crate's `size()` except for a
/// GNU sparse member, whose `size()` is the file it makes and whose header holds what
/// is stored.
pub fn stored_size<R: Read>(entry: &tar::Entry<'_, R>) -> u64 {
    if entry.header().entry_type().is_gnu_sparse() {
        entry.header().entry_size().unwrap_or(u64::MAX)
    } else {
        entry.size()
    }
}

/// A tar size field: octal digits (with spaces or NULs around them), or base-256 when
/// the first byte's high bit is set (GNU, for sizes of 8 GiB and more). `None` when it
/// is neither; a base-256 value too large for 64 bits reads as `u64::MAX`.
fn declared_size(field: &[u8]) -> Option<u64> {
    if field[0] & 0x80 != 0 {
        let mut value: u64 = u64::from(field[0] & 0x7f);
        for b in &field[1..] {
            value = match value.checked_mul(256) {
                Some(v) => v + u64::from(*b),
                None => return Some(u64::MAX),
            };
        }
        return Some(value);
    }
    let digits: Vec<u8> =
        field.iter().copied().skip_while(|b| *b == b' ' || *b == 0).take_while(u8::is_ascii_digit).collect();
    if digits.is_empty() || digits.iter().any(|d| *d > b'7') {
        return None;
    }
    u64::from_str_radix(std::str::from_utf8(&digits).ok()?, 8).ok()
}

impl<R: Read> Read for TarGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut st = self.state.borrow_mut();
        let start = st.pos;
        st.take(start, &buf[..n]).map_err(Exceeded::into_io)?;
        Ok(n)
    }
}

/// A zip member's data, counted against [`Limits::total_bytes`] for the whole archive
/// (the sizes a zip declares are checked first, but may lie).
pub struct Counted<'a, R> {
    pub inner: R,
    pub used: &'a mut u64,
    pub limit: u64,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        *self.used += n as u64;
        if *self.used > self.limit {
            return Err(Exceeded::Total(self.limit).into_io());
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_as_tar_writes_them() {
        assert_eq!(declared_size(b"00000001750\0"), Some(1000));
        assert_eq!(declared_size(b"  1750 \0\0\0\0\0"), Some(1000));
        assert_eq!(declared_size(b"\0\0\0\0\0\0\0\0\0\0\0\0"), None);
        assert_eq!(declared_size(b"0000000019x\0"), None);
        let mut big = [0u8; 12];
        big[0] = 0x80;
        big[7] = 1; // 2^32
        assert_eq!(declared_size(&big), Some(1 << 32));
        assert_eq!(declared_size(&[0xff; 12]), Some(u64::MAX));
    }

    #[test]
    fn limits_read_as_people_write_them() {
        assert_eq!(bytes(64 * GIB), "64 GiB");
        assert_eq!(bytes(MIB), "1 MiB");
        assert_eq!(bytes(1000), "1000 bytes");
        assert_eq!(shorten(&[b'a'; 70]), format!("{}…", "a".repeat(64)));
    }

    /// Returns at most 7 bytes a read: header blocks arrive in pieces.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(7).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn header(kind: tar::EntryType, size: u64) -> Vec<u8> {
        let mut h = tar::Header::new_gnu();
        h.set_path("x").unwrap();
        h.set_mode(0o644);
        h.set_entry_type(kind);
        h.set_size(size);
        h.set_cksum();
        h.as_bytes().to_vec()
    }

    /// The tar crate over a guard over `bytes`: the members' names, or the limit passed.
    fn read_tar(bytes: &[u8], limits: Limits) -> Result<Vec<String>, Exceeded> {
        let (guard, handle) = TarGuard::new(Trickle(bytes), limits);
        let mut tar = tar::Archive::new(guard);
        let mut names = Vec::new();
        for entry in tar.entries().unwrap() {
            let entry = entry.map_err(|e| Exceeded::of(&e).cloned().unwrap_or_else(|| panic!("{e}")))?;
            handle.member_seen(stored_size(&entry));
            names.push(String::from_utf8_lossy(&entry.path_bytes()).into_owned());
        }
        Ok(names)
    }

    #[test]
    fn the_guard_follows_headers_that_arrive_in_pieces() {
        let limits = Limits::default();
        // Real members with long names (GNU and PAX), then a long name declaring 4 GiB.
        let mut builder = tar::Builder::new(Vec::new());
        let long = "n/".repeat(300) + "end";
        for path in ["short", long.as_str()] {
            let mut h = tar::Header::new_gnu();
            h.set_size(1000);
            h.set_mode(0o644);
            builder.append_data(&mut h, path, &[7u8; 1000][..]).unwrap();
        }
        builder.append_pax_extensions([("path", long.as_bytes())]).unwrap();
        let mut h = tar::Header::new_ustar();
        h.set_path("p").unwrap();
        h.set_size(3);
        h.set_mode(0o644);
        h.set_cksum();
        builder.append(&h, &b"abc"[..]).unwrap();
        let good = builder.into_inner().unwrap();
        assert_eq!(read_tar(&good, limits).unwrap(), vec!["short".to_string(), long.clone(), long.clone()]);
        let mut bad = good[..good.len() - 1024].to_vec();
        bad.extend(header(tar::EntryType::GNULongName, 4 << 30));
        bad.extend([b'a'; 4096]);
        assert_eq!(read_tar(&bad, limits), Err(Exceeded::Header("GNU long name", 4 << 30, MIB)));
        // Members whose data is never read are skipped by the crate: still followed.
        // (The crate stops at the first of the two zero blocks that end the archive.)
        let read = good.len() as u64 - 512;
        assert!(read_tar(&good, Limits { total_bytes: read, ..Limits::default() }).is_ok());
        let limits = Limits { total_bytes: read - 1, ..Limits::default() };
        assert_eq!(read_tar(&good, limits), Err(Exceeded::Total(read - 1)));
    }

    fn octal(field: &mut [u8], value: u64) {
        let text = format!("{value:0width$o}", width = field.len() - 1);
        field[..text.len()].copy_from_slice(text.as_bytes());
    }

    #[test]
    fn the_guard_follows_gnu_sparse_members_and_their_extra_map_blocks() {
        // Five 512-byte data blocks at offsets 0, 1024, ..., 4096: four in the header's
        // map, the fifth in one extra map block.
        let mut h = tar::Header::new_gnu();
        h.set_path("sparse").unwrap();
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::GNUSparse);
        h.set_size(5 * 512);
        let gnu = h.as_gnu_mut().unwrap();
        for (i, block) in gnu.sparse.iter_mut().enumerate() {
            octal(&mut block.offset, i as u64 * 1024);
            octal(&mut block.numbytes, 512);
        }
        octal(&mut gnu.realsize, 4 * 1024 + 512);
        gnu.isextended[0] = 1;
        h.set_cksum();
        let mut ext = tar::GnuExtSparseHeader::new();
        octal(&mut ext.sparse[0].offset, 4 * 1024);
        octal(&mut ext.sparse[0].numbytes, 512);
        let mut bytes = h.as_bytes().to_vec();
        bytes.extend_from_slice(ext.as_bytes());
        bytes.extend_from_slice(&[9u8; 5 * 512]);
        let limits = Limits::default();
        let mut good = bytes.clone();
        good.extend(header(tar::EntryType::Regular, 0));
        good.extend([0u8; 1024]);
        assert_eq!(read_tar(&good, limits).unwrap(), vec!["sparse".to_string(), "x".to_string()]);
        bytes.extend(header(tar::EntryType::GNULongName, 4 << 30));
        bytes.extend([b'a'; 4096]);
        assert_eq!(read_tar(&bytes, limits), Err(Exceeded::Header("GNU long name", 4 << 30, MIB)));
    }

    #[test]
    fn counted_reads_stop_at_the_total() {
        let mut used = 10;
        let mut counted = Counted { inner: &[1u8; 100][..], used: &mut used, limit: 50 };
        let mut sink = Vec::new();
        let err = io::copy(&mut counted, &mut sink).unwrap_err();
        assert_eq!(Exceeded::of(&err), Some(&Exceeded::Total(50)));
    }
}
