//! What the reference's Python printed, printed the same way: JSON as Python's `json`
//! module writes it, `repr()`/`str()` of decoded JSON (pystache's rendering, messages),
//! and Python's truthiness together with the reference's looser booleans. Users'
//! scripts and files depend on these exact texts (GETMD-03, INIT-FILES-03,
//! INIT-BOOL-01, HUP-CONF-*), so they live in one place.

pub mod json;
pub mod py2;
pub mod repr;
pub mod truth;

/// The OS's text for an I/O error, as Python's `os.strerror` gives it (`No such file or
/// directory`), without Rust's " (os error N)" suffix: the reference's messages show it.
pub fn strerror(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(i) if text.ends_with(')') => text[..i].to_string(),
        _ => text,
    }
}
