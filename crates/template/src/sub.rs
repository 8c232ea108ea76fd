//! The string of `Fn::Sub`: text, `${Name}` variables, and `${!Literal}`, which writes
//! `${Literal}` itself.

#[derive(Debug, PartialEq, Eq)]
pub enum Part<'a> {
    Text(&'a str),
    Variable(&'a str),
}

/// Splits `text` into literal text and variables; `${!X}` becomes the text `${X}`, and a
/// `${` that is never closed is text.
pub fn parts(text: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(length) = rest[start + 2..].find('}') else { break };
        let name = &rest[start + 2..start + 2 + length];
        if start > 0 {
            parts.push(Part::Text(&rest[..start]));
        }
        match name.strip_prefix('!') {
            Some(_) => {
                // `${!Literal}` is `${Literal}`: the `${`, then what follows the `!`.
                parts.push(Part::Text("${"));
                parts.push(Part::Text(&rest[start + 3..start + 3 + length]));
            }
            None => parts.push(Part::Variable(name)),
        }
        rest = &rest[start + 3 + length..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use Part::*;

    #[test]
    fn variables_literals_and_text() {
        assert_eq!(
            parts("a ${X} b ${!Y} c ${Res.Attr}"),
            vec![Text("a "), Variable("X"), Text(" b "), Text("${"), Text("Y}"), Text(" c "), Variable("Res.Attr")]
        );
        assert_eq!(parts("${X}${Y}"), vec![Variable("X"), Variable("Y")]);
        assert_eq!(parts("no vars"), vec![Text("no vars")]);
        assert_eq!(parts("open ${X"), vec![Text("open ${X")]);
        assert_eq!(parts(""), vec![]);
        assert_eq!(parts("$X {Y} $"), vec![Text("$X {Y} $")]);
    }
}
