//! Mustache rendering — being written; until then templates are refused.

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MustacheError(String);

pub fn render(_template: &str, _context: &serde_json::Value) -> Result<String, MustacheError> {
    Err(MustacheError("Mustache templates are not supported yet".into()))
}
