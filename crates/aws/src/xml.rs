//! The few XML answers read without an XML parser: S3's and SQS's error documents and
//! SQS's message fields. Their elements hold text only, so the first element of a name
//! is found by its tags.

/// Text of the first `<name>` element (with or without a namespace prefix), trimmed and
/// unescaped.
pub(crate) fn element(text: &str, name: &str) -> Option<String> {
    let open = [format!("<{name}>"), format!(":{name}>")];
    let (start, tag) = open.iter().filter_map(|t| text.find(t.as_str()).map(|i| (i, t.len()))).min()?;
    let start = start + tag;
    let end = text[start..].find("</").map(|i| i + start)?;
    let raw = text[start..end].trim();
    Some(
        raw.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&#39;", "'")
            .replace("&amp;", "&"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_found_unescaped_with_or_without_a_prefix() {
        let s3 =
            "<?xml version=\"1.0\"?>\n<Error><Code>AccessDenied</Code>\n  <Message>Access Denied</Message></Error>";
        assert_eq!(element(s3, "Code").as_deref(), Some("AccessDenied"));
        assert_eq!(element(s3, "Region"), None);
        assert_eq!(element("<Region>", "Region"), None);
        assert_eq!(element("<a:MessageId> m-1 </a:MessageId>", "MessageId").as_deref(), Some("m-1"));
        assert_eq!(
            element("<Body>{&quot;a&quot;: &quot;&lt;b&gt;&quot;}</Body>", "Body").as_deref(),
            Some(r#"{"a": "<b>"}"#)
        );
    }
}
