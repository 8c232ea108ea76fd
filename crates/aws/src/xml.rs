//! The few XML answers read outside the SDK's own deserialisers: S3's and the query
//! APIs' error documents (`Code`, `Message`, `Type`, `Region`). Read with the XML
//! reader the SDK links anyway (`aws-smithy-xml`), so entities, comments, CDATA-free
//! prologs and namespace prefixes are handled by a real tokenizer.

use aws_smithy_xml::decode::{Document, try_data};

/// Text of the first `<name>` element anywhere in `text` (with or without a namespace
/// prefix), trimmed and unescaped; `None` when there is none, when it is empty, or when
/// `text` is not XML up to it.
pub(crate) fn element(text: &str, name: &str) -> Option<String> {
    let mut document = Document::new(text);
    loop {
        let start = document.next_start_element()?;
        if start.local() == name {
            let mut scope = document.scoped_to(start);
            let data = try_data(&mut scope).ok()?;
            let data = data.trim();
            return (!data.is_empty()).then(|| data.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_found_unescaped_with_or_without_a_prefix() {
        let s3 =
            "<?xml version=\"1.0\"?>\n<Error><Code>AccessDenied</Code>\n  <Message>Access Denied</Message></Error>";
        assert_eq!(element(s3, "Code").as_deref(), Some("AccessDenied"));
        assert_eq!(element(s3, "Message").as_deref(), Some("Access Denied"));
        assert_eq!(element(s3, "Region"), None);
        assert_eq!(element("<Region>", "Region"), None);
        assert_eq!(element("<a:MessageId> m-1 </a:MessageId>", "MessageId").as_deref(), Some("m-1"));
        assert_eq!(
            element("<Body>{&quot;a&quot;: &quot;&lt;b&gt;&quot;}</Body>", "Body").as_deref(),
            Some(r#"{"a": "<b>"}"#)
        );
        assert_eq!(element("<M>&#39;x&apos; &#x41;&amp;amp;</M>", "M").as_deref(), Some("'x' A&amp;"));
    }

    #[test]
    fn nested_documents_and_non_xml() {
        let query = "<ErrorResponse xmlns=\"http://cloudformation.amazonaws.com/doc/2010-05-15/\">\
                     <Error><Type>Sender</Type><Code>ValidationError</Code><Message/></Error>\
                     <!-- <Code>InComment</Code> --><RequestId>r</RequestId></ErrorResponse>";
        assert_eq!(element(query, "Type").as_deref(), Some("Sender"));
        assert_eq!(element(query, "Code").as_deref(), Some("ValidationError"));
        assert_eq!(element(query, "Message"), None);
        assert_eq!(element(query, "RequestId").as_deref(), Some("r"));
        // A tag only inside a comment or an attribute is not an element.
        assert_eq!(element("<a x=\"<Code>no</Code>\"/><!-- <Code>no</Code> -->", "Code"), None);
        for not_xml in [r#"{"Error": {"Code": "ProxyTrap"}}"#, "", "plain text <Code>", "<<Code>x</Code>"] {
            assert_eq!(element(not_xml, "Code"), None, "{not_xml}");
        }
    }
}
