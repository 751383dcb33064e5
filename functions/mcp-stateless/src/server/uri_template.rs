//! RFC 6570 URI templates as resource templates publish them, read the
//! other way: from a URI a client expanded back to the variables.
//!
//! Level 1 (`{name}`: one or more characters, `/` excepted, since
//! expansion percent-encodes a `/` in a value) and reserved expansion
//! (`{+path}`: one or more characters, `/` included), the one level-2 form,
//! for a template that says a variable may span segments. Variables are
//! percent-decoded before a reader sees them, so `%2F` arrives as `/`: a
//! reader treats them as it treats tool arguments, as the client's input.
//! Matched with the `regex` crate (already linked for schema checks), in
//! time linear in the URI whatever the client sends.

use regex::Regex;

/// Why a template was refused: a server bug, reported when the resource is
/// declared (at start, and by the server's tests).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum TemplateError {
    /// A `{` with no `}` after it, or a `}` with no `{` before it.
    #[error("unbalanced brace at byte {0}")]
    Unbalanced(usize),
    /// An expression this matcher does not read: another operator
    /// (`{#x}`, `{?x}`...), a list (`{a,b}`), a modifier (`{x:3}`,
    /// `{x*}`), or an empty or malformed name.
    #[error("unsupported expression {{{0}}}: use {{name}} or {{+name}}")]
    Unsupported(String),
    /// Two expressions with nothing between them (`{a}{b}`): where one
    /// ends is anyone's guess.
    #[error("{{{0}}} follows another expression directly")]
    Adjacent(String),
    /// The same name twice.
    #[error("variable {0} appears twice")]
    Duplicate(String),
}

/// A parsed template: its text as published, and how to match a URI.
#[derive(Debug, Clone)]
pub(crate) struct UriTemplate {
    pattern: Regex,
    names: Vec<String>,
}

impl UriTemplate {
    /// Reads `template`.
    pub(crate) fn parse(template: &str) -> Result<Self, TemplateError> {
        let mut pattern = String::from(r"\A");
        let mut names: Vec<String> = Vec::new();
        let mut rest = template;
        let mut after_expression = false;
        while !rest.is_empty() {
            let offset = template.len() - rest.len();
            let next = rest.find(['{', '}']).unwrap_or(rest.len());
            if next > 0 {
                pattern.push_str(&regex::escape(&rest[..next]));
                rest = &rest[next..];
                after_expression = false;
                continue;
            }
            if rest.starts_with('}') {
                return Err(TemplateError::Unbalanced(offset));
            }
            let close = rest.find('}').ok_or(TemplateError::Unbalanced(offset))?;
            let expression = &rest[1..close];
            let (reserved, name) = match expression.strip_prefix('+') {
                Some(name) => (true, name),
                None => (false, expression),
            };
            if !is_name(name) {
                return Err(TemplateError::Unsupported(expression.to_owned()));
            }
            if after_expression {
                return Err(TemplateError::Adjacent(expression.to_owned()));
            }
            if names.iter().any(|seen| seen == name) {
                return Err(TemplateError::Duplicate(name.to_owned()));
            }
            pattern.push_str(if reserved { r"(.+)" } else { r"([^/]+)" });
            names.push(name.to_owned());
            rest = &rest[close + 1..];
            after_expression = true;
        }
        pattern.push_str(r"\z");
        // Every literal is escaped and every group is one of two fixed
        // forms, so only a template too large for the engine fails here.
        let pattern = Regex::new(&format!("(?s){pattern}")).map_err(|_| TemplateError::Unsupported(template.to_owned()))?;
        Ok(Self { pattern, names })
    }

    /// The variables of `uri`, decoded, in the template's order; `None`
    /// when it does not match, or a variable's escapes are malformed or
    /// decode to something that is not UTF-8.
    pub(crate) fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let captures = self.pattern.captures(uri)?;
        self.names
            .iter()
            .enumerate()
            .map(|(index, name)| Some((name.clone(), percent_decoded(captures.get(index + 1)?.as_str())?)))
            .collect()
    }
}

/// RFC 6570 `varname`: letters, digits, `_` and `.` (not first or doubled),
/// and percent-encoded triplets.
fn is_name(name: &str) -> bool {
    let well_formed = |part: &str| {
        !part.is_empty() && part.split('%').skip(1).all(|after| after.len() >= 2 && after.bytes().take(2).all(|b| b.is_ascii_hexdigit()))
    };
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'%'))
        && name.split('.').all(well_formed)
}

/// `text` with its `%XX` escapes decoded (RFC 3986, section 2.1); `None`
/// for a `%` not followed by two hex digits (which `percent-encoding`
/// would pass through as it is), or bytes that are not UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let escapes_well_formed =
        text.split('%').skip(1).all(|after| after.len() >= 2 && after.as_bytes()[..2].iter().all(u8::is_ascii_hexdigit));
    if !escapes_well_formed {
        return None;
    }
    percent_encoding::percent_decode_str(text).decode_utf8().ok().map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(template).unwrap().matches(uri)
    }

    fn pairs(list: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(list.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect())
    }

    #[test]
    fn literal_segments_match_exactly() {
        let template = "test://template/{id}/data";
        assert_eq!(vars(template, "test://template/123/data"), pairs(&[("id", "123")]));
        assert_eq!(vars(template, "test://template/123/data/more"), None);
        assert_eq!(vars(template, "test://template/123/dat"), None);
        assert_eq!(vars(template, "TEST://template/123/data"), None);
        assert_eq!(vars(template, "xtest://template/123/data"), None);
        // Regex metacharacters in a literal are literal.
        assert_eq!(vars("a+b://x.y/{v}", "a+b://x.y/1"), pairs(&[("v", "1")]));
        assert_eq!(vars("a+b://x.y/{v}", "aab://xzy/1"), None);
        // A template without variables matches itself only.
        assert_eq!(vars("fixed://one", "fixed://one"), pairs(&[]));
        assert_eq!(vars("fixed://one", "fixed://one/"), None);
    }

    #[test]
    fn a_variable_is_one_segment_unless_the_template_says_otherwise() {
        assert_eq!(vars("test://template/{id}/data", "test://template/1/2/data"), None);
        assert_eq!(vars("starter://greetings/{name}", "starter://greetings/ada/lovelace"), None);
        // Nor empty.
        assert_eq!(vars("test://template/{id}/data", "test://template//data"), None);
        assert_eq!(vars("starter://greetings/{name}", "starter://greetings/"), None);
        // `{+path}` spans segments.
        assert_eq!(vars("files://{+path}", "files://a/b/c.txt"), pairs(&[("path", "a/b/c.txt")]));
        assert_eq!(vars("files://{+path}/meta", "files://a/meta/b/meta"), pairs(&[("path", "a/meta/b")]));
        assert_eq!(vars("files://{+path}", "files://"), None);
    }

    #[test]
    fn several_variables_are_matched_in_order() {
        let template = "db://{schema}/tables/{table}";
        assert_eq!(vars(template, "db://shop/tables/orders"), pairs(&[("schema", "shop"), ("table", "orders")]));
        assert_eq!(vars("x://{a}.{b}", "x://1.2"), pairs(&[("a", "1"), ("b", "2")]));
    }

    #[test]
    fn variables_are_percent_decoded() {
        let template = "starter://greetings/{name}";
        assert_eq!(vars(template, "starter://greetings/Ada%20Lovelace"), pairs(&[("name", "Ada Lovelace")]));
        assert_eq!(vars(template, "starter://greetings/caf%C3%A9"), pairs(&[("name", "café")]));
        // An encoded slash is a character of the value, not a separator.
        assert_eq!(vars(template, "starter://greetings/a%2Fb"), pairs(&[("name", "a/b")]));
        // Malformed escapes and bytes that are not UTF-8 match nothing.
        for uri in [
            "starter://greetings/%",
            "starter://greetings/%2",
            "starter://greetings/%zz",
            "starter://greetings/%+1",
            "starter://greetings/%FF",
        ] {
            assert_eq!(vars(template, uri), None, "{uri}");
        }
    }

    #[test]
    fn templates_this_matcher_cannot_read_are_refused() {
        let error = |template: &str| UriTemplate::parse(template).unwrap_err();
        assert_eq!(error("x://{a"), TemplateError::Unbalanced(4));
        assert_eq!(error("x://a}"), TemplateError::Unbalanced(5));
        assert_eq!(error("x://{}"), TemplateError::Unsupported(String::new()));
        assert_eq!(error("x://{#a}"), TemplateError::Unsupported("#a".into()));
        assert_eq!(error("x://{a,b}"), TemplateError::Unsupported("a,b".into()));
        assert_eq!(error("x://{a*}"), TemplateError::Unsupported("a*".into()));
        assert_eq!(error("x://{a:3}"), TemplateError::Unsupported("a:3".into()));
        assert_eq!(error("x://{a..b}"), TemplateError::Unsupported("a..b".into()));
        assert_eq!(error("x://{a}{b}"), TemplateError::Adjacent("b".into()));
        assert_eq!(error("x://{a}/{a}"), TemplateError::Duplicate("a".into()));
        assert!(UriTemplate::parse("x://{a.b}/{c_1}/{%41}").is_ok());
    }

    /// Whatever a client sends, matching answers (no panic), and quickly.
    #[test]
    fn any_input_is_answered_without_panic() {
        let templates = ["t://{a}/x/{+b}/y", "t://{a}", "{+all}", "{a}.{b}", "t://%/{a}"];
        let samples = ["", "%", "/", "{", "}", "\0", "é", "%C3", "%C3%A9", "x", "/x/", "/y", "t://", "%%", "💥", "\u{FFFD}"];
        let parsed: Vec<UriTemplate> = templates.iter().map(|t| UriTemplate::parse(t).unwrap()).collect();
        for first in samples {
            for second in samples {
                for third in samples {
                    let uri = format!("{first}{second}t://{third}/x/{first}{second}/y{third}");
                    for template in &parsed {
                        let _ = template.matches(&uri);
                        let _ = template.matches(&format!("{first}{second}{third}"));
                    }
                }
            }
            // Template text is the server's, but parsing odd text must not panic either.
            for second in samples {
                let _ = UriTemplate::parse(&format!("{first}{{{second}}}"));
            }
        }
        // A long URI is matched too (the regex engine is linear in its
        // length; how fast is for a benchmark, not a test on a shared machine).
        let long = format!("t://seg/x/{}{}/y", "a/".repeat(100_000), "%41".repeat(100_000));
        assert_eq!(parsed[0].matches(&long).map(|v| v.len()), Some(2));
    }
}
